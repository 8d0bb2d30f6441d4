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
#: rounds of reads in one burst at most (a workload that never pauses still gets its bytes
#: captured every few MiB)
MAX_DRAIN_ROUNDS = 8
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
        #: the passed-through fd whose last bytes did not end their line (a progress bar a kill
        #: cut short: ``download:  36%|███▋ | 145/400``), or None: the runner's closing line
        #: must start a line of its own, not glue itself to the bar
        self.open_line_fd: int | None = None
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
        if data:
            self.open_line_fd = None if data.endswith(b"\n") else fd

    def end_open_line(self, stream: Any) -> None:
        """Write a newline to ``stream`` (the runner's stderr) when the workload's output there, or
        on the same terminal, was left in the middle of a line; never raise (a stream without a
        file descriptor, as a test's captured stderr, has no line to end)."""
        open_fd = self.open_line_fd
        if open_fd is None or self.passthrough_error is not None:
            return
        try:
            fd = stream.fileno()
            if open_fd == fd or os.path.samestat(os.fstat(open_fd), os.fstat(fd)):
                os.write(fd, b"\n")
                self.open_line_fd = None
        except (OSError, ValueError, AttributeError):  # a closed, vanished or captured stream: nothing to end
            pass

    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        for name, (fd, out) in self._streams.items():
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ, (name, out))
        last_poll = time.monotonic()
        try:
            while selector.get_map():
                if selector.select(POLL_INTERVAL):
                    for name, data in self._drain(selector):
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

    def _drain(self, selector: selectors.BaseSelector) -> list[tuple[str, bytes]]:
        """Everything both pipes hold now, passed through as it is read, returned stdout's
        first and stderr's last.

        Two pipes lose the interleaving of their bytes, and which pipe a wake-up reports ready
        is only a snapshot: a pump preempted between the readiness check and its read (a busy
        machine) read an error block the workload wrote to stderr *after* the progress lines it
        had written to stdout, and stored the progress lines last — the diagnosis then read a
        healthy line as the process's last words. So every pipe is read until a whole round
        reads nothing: any stdout bytes written before the stderr bytes read in this round are
        read in the same burst, and the burst is captured stdout first, stderr — where a
        traceback and a logger's errors go — last."""
        read: dict[str, list[bytes]] = {}
        for _ in range(MAX_DRAIN_ROUNDS):
            got = False
            for key in sorted(selector.get_map().values(), key=_stderr_last):
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
                    continue
                got = True
                self._pass(out, data)
                read.setdefault(name, []).append(data)
            if not got:
                break
        # by stream, not by which was read first: stdout's bytes seen only in a later round
        # were written before the stderr bytes of an earlier one, or with them
        return [(name, data) for name in sorted(read, key=_is_stderr) for data in read[name]]


def _workload_spoke(data: bytes) -> bool:
    """Whether a chunk holds a line of the workload's own: a distributed launcher's log (its
    banner, printed before any rank is started) is no sign that the workload's code began."""
    lines = data.decode("utf-8", "replace").splitlines()
    return any(not is_launcher_log(line) for line in lines if line.strip())


def _stderr_last(key: selectors.SelectorKey) -> bool:
    """The sort key of the pipes read in a burst: stdout's first, stderr's last."""
    return _is_stderr(key.data[0])


def _is_stderr(name: str) -> bool:
    return name == "stderr"
