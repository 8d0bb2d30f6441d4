"""Reads the workload's stdout and stderr, passes them through unchanged, and captures them.

One thread, both pipes (a selector), so the capture pipeline needs no lock and each stream's
order is kept. Bytes reach the terminal as soon as they are read — ``\\r`` progress bars
included — and only then go through parsing, grouping and redaction for storage.
"""

from __future__ import annotations

import os
import selectors
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from flightlog.capture.launchers import is_launcher_log
from flightlog.logevents import LogBatch
from flightlog.runner.launcher import LauncherOutput

__all__ = ["OutputPump", "enlarge_pipe"]

READ_SIZE = 1 << 20
POLL_INTERVAL = 0.1
_F_SETPIPE_SZ = 1031


def enlarge_pipe(fd: int, size: int = 1 << 20) -> None:
    """Fewer wake-ups for chatty workloads: ask Linux for a 1 MiB pipe (best effort)."""
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, size)
    except (OSError, ImportError, AttributeError):
        pass


def _with_logged_exception(message: str, fields: dict[str, Any] | None) -> str:
    """A JSON log line's message with the traceback its fields carry (``exc_info``,
    ``exception``, ...): the classifier reads the failure there, not in the message alone."""
    if not fields:
        return message
    logged = [v for v in fields.values() if isinstance(v, str) and "Traceback (most recent call last)" in v]
    return "\n".join([message, *logged]) if logged else message


class OutputPump:
    def __init__(
        self,
        streams: dict[str, tuple[int, int]],  # name → (pipe fd to read, fd to pass through to)
        pipeline: Any,
        on_batch: Callable[[LogBatch], None],
    ) -> None:
        self._streams = streams
        self._pipeline = pipeline
        self._on_batch = on_batch
        self.first_output: float | None = None
        self.last_lines: deque[str] = deque(maxlen=50)
        self.last_traceback: str | None = None
        #: each rank's tracebacks and a distributed launcher's summary (runner/launcher.py)
        self.launcher = LauncherOutput()
        self.passthrough_error: OSError | None = None
        self._thread = threading.Thread(target=self._run, name="flightlog-output", daemon=True)

    def start(self) -> OutputPump:
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _emit(self, batch: LogBatch) -> None:
        if not len(batch):
            return
        messages = batch.message
        if any(f is not None for f in batch.fields):
            messages = [_with_logged_exception(m, f) for m, f in zip(batch.message, batch.fields, strict=True)]
        for message in messages[-50:]:
            self.last_lines.append(message)
        for message, level in zip(messages, batch.level, strict=True):
            if level >= 40 and "Traceback (most recent call last)" in message:
                self.last_traceback = message
        try:
            self.launcher.feed(batch)
        except Exception:  # reading a launcher's output is evidence, never worth the capture
            pass
        self._on_batch(batch)

    def _pass(self, fd: int, data: bytes) -> None:
        if self.passthrough_error is not None:
            return
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:  # our own stdout went away: keep capturing
            self.passthrough_error = exc

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        for name, (fd, out) in self._streams.items():
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ, (name, out))
        open_streams = len(self._streams)
        last_poll = time.monotonic()
        try:
            while open_streams:
                # both pipes ready at once: their bytes' interleaving is lost, so stdout is read
                # first and stderr — where a traceback and a logger's errors go — last, keeping
                # the words that ended the process at the end of its log
                for key, _ in sorted(selector.select(POLL_INTERVAL), key=_stderr_last):
                    name, out = key.data
                    try:
                        data = os.read(key.fd, READ_SIZE)
                    except BlockingIOError:
                        continue
                    except OSError:
                        data = b""
                    if not data:
                        selector.unregister(key.fd)
                        os.close(key.fd)
                        open_streams -= 1
                        continue
                    self._pass(out, data)
                    now = time.time()
                    if self.first_output is None and _workload_spoke(data):
                        self.first_output = now
                    self._emit(self._pipeline.feed(name, data, now))
                if time.monotonic() - last_poll >= POLL_INTERVAL:
                    last_poll = time.monotonic()
                    self._emit(self._pipeline.poll(time.time()))
        finally:
            self._emit(self._pipeline.close(time.time()))
            selector.close()


def _workload_spoke(data: bytes) -> bool:
    """Whether a chunk holds a line of the workload's own: a distributed launcher's log (its
    banner, printed before any rank is started) is no sign that the workload's code began."""
    lines = data.decode("utf-8", "replace").splitlines()
    return any(not is_launcher_log(line) for line in lines if line.strip())


def _stderr_last(ready: tuple[Any, int]) -> bool:
    """The sort key of a wake-up's ready pipes: stdout's first, stderr's last."""
    return bool(ready[0].data[0] == "stderr")
