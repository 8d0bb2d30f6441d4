"""Console capture for runs started by ``flightlog.init()``: what the process writes to
``sys.stdout`` and ``sys.stderr`` is also recorded as the run's log events.

``flightlog run`` captures a workload's output at the file-descriptor level; a script that
only calls ``init()`` has no such runner around it, and without its output a crash leaves a
run with no log lines to diagnose. So ``sys.stdout`` and ``sys.stderr`` are replaced by tees:

- a write goes to the original stream first, unchanged (what the user sees does not change),
  then its text is appended to a queue — nothing else on the caller's thread, so a
  print-heavy loop barely slows down (docs/sdk.md gives the measured ratio);
- a background thread drains the queue every ``INTERVAL`` seconds through the same capture
  pipeline the runner uses (``capture/pipeline.py``: redaction, traceback grouping, JSON log
  lines, the rate limit with counted drops) into the run's writer;
- the pipeline is built when the first text arrives, and the drain thread is the process's
  one, started with its first capture and parked (no timer) while no capture is live: a sweep
  of a thousand short runs that print nothing builds no pipeline and starts, stops and joins
  no thread per run (which a loaded machine charges a scheduling delay each);
- a queue that outgrows ``MAX_PENDING_CHARS`` (the drain thread starved) drops what comes
  next, counted on the run as ``dropped_console_chars``; the output itself is never held up.

``logging`` handlers that were made before the tee and hold the original stream are pointed
at the tee while it is installed, so a ``logging.basicConfig()`` at the top of the script is
recorded too. One capture serves the process: the runs that use it are kept in start order
and output goes to the latest; the last one to finish drains the queue and puts the original
streams back (unless something replaced the tees meanwhile: then the tees only pass through).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from flightlog.logevents import LogBatch
from flightlog.redaction import pattern_files
from flightlog.sdk.writer import warn

if TYPE_CHECKING:
    from flightlog.capture.pipeline import CapturePipeline
    from flightlog.sdk.run import Run

__all__ = ["ConsoleCapture", "attach", "detach", "capturing", "paused", "current"]

INTERVAL = 0.2
MAX_PENDING_CHARS = 8 << 20
LAST_LINES = 50


class _Tee:
    """Stands in for ``sys.stdout`` / ``sys.stderr``: writes pass through, then are queued.

    Everything but ``write`` and ``writelines`` is the original stream's own (``fileno``,
    ``isatty``, ``encoding``, ``buffer``, ``flush``), so code that asks the stream about
    itself gets the real answer."""

    def __init__(self, stream: IO[str], name: str, capture: ConsoleCapture) -> None:
        self._stream = stream
        self._name = name
        self._capture = capture
        self._write = stream.write  # bound once: a write costs a call and an append, no lookups
        self._append = capture.pending.append
        self.flightlog_passthrough = stream  # where flightlog's own messages go, uncaptured

    def write(self, text: str) -> int:
        n = self._write(text)
        capture = self._capture
        if capture.on:
            if capture.size < MAX_PENDING_CHARS:
                capture.size += len(text)
                self._append((self._name, text))
            else:
                capture.dropped += len(text)
        return n

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class ConsoleCapture:
    """The process's one console capture (see the module docstring)."""

    def __init__(self, make_pipeline: Callable[[], CapturePipeline]) -> None:
        self._make_pipeline = make_pipeline
        self._pipeline: CapturePipeline | None = None  # built with the first text (`pipeline`)
        self.pending: deque[tuple[str, str]] = deque()
        self.size = 0
        self.dropped = 0
        self.on = True
        self.runs: list[Run] = []
        self._last: dict[str, deque[str]] = {}  # run id → the last lines stored on it
        # reentrant: a SIGTERM handler that finishes the run may interrupt a drain on its thread
        self._lock = threading.RLock()
        self._originals = (sys.stdout, sys.stderr)
        self._tees = (_Tee(sys.stdout, "stdout", self), _Tee(sys.stderr, "stderr", self))
        self._retargeted: list[tuple[logging.StreamHandler[Any], Any]] = []

    @property
    def pipeline(self) -> CapturePipeline:
        """The capture pipeline, built on first use (its redaction rules and patterns cost more
        than a short run that prints nothing should pay)."""
        if self._pipeline is None:
            self._pipeline = self._make_pipeline()
        return self._pipeline

    # ── install, remove ──────────────────────────────────────────────────────
    def install(self) -> None:
        sys.stdout, sys.stderr = self._tees
        by_stream = {id(self._originals[0]): self._tees[0], id(self._originals[1]): self._tees[1]}
        for handler in _stream_handlers():
            tee = by_stream.get(id(handler.stream))
            if tee is not None:
                self._retargeted.append((handler, handler.stream))
                handler.stream = tee
        _drainer().serve(self)

    def uninstall(self) -> None:
        """Stop queueing, put back what was replaced (only where it is still ours). The drain
        thread lets go of this capture on its next tick; nothing waits for it."""
        self.on = False
        if sys.stdout is self._tees[0]:
            sys.stdout = self._originals[0]
        if sys.stderr is self._tees[1]:
            sys.stderr = self._originals[1]
        for handler, stream in self._retargeted:
            if handler.stream in self._tees:
                handler.stream = stream
        self._retargeted.clear()
        drainer = _the_drainer
        if drainer is not None:
            drainer.release(self)

    # ── draining ─────────────────────────────────────────────────────────────
    def drain(self, *, flush: bool = False, final: bool = False) -> None:
        """Queued output → events on the latest run. ``flush``: also what the pipeline still
        holds (a last line without its newline, a block that may go on), for a run that fails
        now; ``final``: that, and the capture's totals counted on the run, at its end."""
        with self._lock:
            pending = self.pending
            items = [pending.popleft() for _ in range(len(pending))]
            self.size = 0  # (a write racing this undercounts by one write: the bound stays a bound)
            now = time.time()
            pipeline = self._pipeline if not items else self.pipeline  # nothing written yet: none
            batch = LogBatch()
            if pipeline is not None:
                batch = _feed(pipeline, items, now)
                batch.extend(pipeline.close(now) if flush or final else pipeline.poll(now))
            target = self.runs[-1] if self.runs else None
            if target is None:
                return
            if self.dropped:
                target._w.count("dropped_console_chars", self.dropped)
                self.dropped = 0
            if final and pipeline is not None:
                _count(target, pipeline.stats)
            if len(batch):
                self._last.setdefault(target.id, deque(maxlen=LAST_LINES)).extend(batch.message[-LAST_LINES:])
                target._w.add_logs(batch)

    def last_lines(self, run: Run) -> list[str]:
        """The last lines of output stored on ``run`` (what a failure summary quotes)."""
        return list(self._last.get(run.id, ()))


def _feed(pipeline: CapturePipeline, items: list[tuple[str, str]], now: float) -> LogBatch:
    """Consecutive writes of one stream joined into one chunk, as a pipe would deliver them."""
    out = LogBatch()
    i = 0
    while i < len(items):
        name = items[i][0]
        j = i
        while j < len(items) and items[j][0] == name:
            j += 1
        text = "".join(t for _, t in items[i:j])
        out.extend(pipeline.feed(name, text.encode("utf-8", "backslashreplace"), now))
        i = j
    return out


_COUNTERS = {
    "lines": "log_lines",
    "bytes": "log_bytes",
    "dropped_lines": "dropped_lines",
    "dropped_bytes": "dropped_bytes",
    "truncated_lines": "truncated_lines",
    "redactions": "redactions",
    "events": "log_events",
}


def _count(run: Run, stats: dict[str, int]) -> None:
    """The capture's totals on the run, under the names ``flightlog run`` uses."""
    for key, name in _COUNTERS.items():
        if stats.get(key):
            run._w.count(name, stats[key])


def _stream_handlers() -> list[logging.StreamHandler[Any]]:
    loggers: list[Any] = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    handlers = [h for lg in loggers if isinstance(lg, logging.Logger) for h in lg.handlers]
    return [h for h in handlers if type(h) is logging.StreamHandler]


class _Drainer:
    """The process's drain thread: every ``INTERVAL`` it drains the live capture; with none it
    waits on a condition (no timer) until the next capture is installed. Started once, with
    the process's first capture; a forked child has none (its tees only pass through)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._capture: ConsoleCapture | None = None
        self._thread = threading.Thread(target=self._loop, name="flightlog-console", daemon=True)
        self._started = False

    def serve(self, capture: ConsoleCapture) -> None:
        with self._cond:
            self._capture = capture
            if not self._started:
                self._started = True
                self._thread.start()
            self._cond.notify()  # a parked thread wakes; one in its timed wait is not disturbed

    def release(self, capture: ConsoleCapture) -> None:
        with self._cond:
            if self._capture is capture:
                self._capture = None

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._capture is None:
                    self._cond.wait()
            time.sleep(INTERVAL)
            with self._cond:
                capture = self._capture
            if capture is None or not capture.on:
                continue
            try:
                capture.drain()
            except Exception as exc:  # never the workload's problem; one report, then stop capturing
                capture.on = False
                warn(f"console capture stopped: {type(exc).__name__}: {exc}")


_the_drainer: _Drainer | None = None


def _drainer() -> _Drainer:
    global _the_drainer
    if _the_drainer is None:
        _the_drainer = _Drainer()
    return _the_drainer


# ── the process's capture ───────────────────────────────────────────────────
_capture: ConsoleCapture | None = None
_lock = threading.RLock()  # (reentrant for the same reason as ConsoleCapture._lock)


def attach(run: Run) -> None:
    """Record this process's console output on ``run`` (starting the capture if needed)."""
    global _capture
    with _lock:
        if _capture is None:
            home, attempt, rank = run.settings.home, run.attempt, run._w.rank
            _capture = ConsoleCapture(lambda: _pipeline(home, attempt, rank))
            _capture.install()
        _capture.runs.append(run)


def detach(run: Run) -> None:
    """``run`` is finishing: what it printed so far is stored on it first; the last run to go
    ends the capture."""
    global _capture
    with _lock:
        capture = _capture
        if capture is None or run not in capture.runs:
            return
        last = len(capture.runs) == 1
        if last:
            capture.uninstall()
            _capture = None
    capture.drain(flush=True, final=last)  # a line the pipeline still holds is this run's, not the next one's
    with _lock:
        capture.runs.remove(run)
        capture._last.pop(run.id, None)


def current(run: Run) -> ConsoleCapture | None:
    """The capture recording ``run``'s output, if any."""
    capture = _capture
    return capture if capture is not None and run in capture.runs else None


def capturing(stream: Any) -> bool:
    """Whether ``stream`` is one of the tees of a live capture (the logging handler then leaves
    the recording of its JSON line to the capture, as it does under ``flightlog run``)."""
    capture = _capture
    return capture is not None and capture.on and isinstance(stream, _Tee) and stream._capture is capture


class paused:
    """``with paused():`` — writes pass through without being queued (an exception hook
    printing a traceback that the run records itself, once)."""

    def __enter__(self) -> None:
        self._capture = _capture
        self._was = self._capture.on if self._capture is not None else False
        if self._capture is not None:
            self._capture.on = False

    def __exit__(self, *exc: Any) -> None:
        if self._capture is not None and self._capture is _capture:
            self._capture.on = self._was


def _pipeline(home: Path, attempt: int, rank: int | None) -> CapturePipeline:
    from flightlog.capture import CaptureConfig, CapturePipeline
    from flightlog.redaction.patterns import load_patterns

    try:
        patterns = load_patterns(pattern_files(home))
    except Exception as exc:  # never raise into the workload: say so, go on
        warn(f"redaction patterns not used for console output: {exc}")
        patterns = []
    return CapturePipeline(CaptureConfig(extra_patterns=patterns, attempt=attempt, rank=rank))


def _after_fork_in_child() -> None:
    """A forked child has no drain thread: its tees only pass through (its output, if it
    matters, reaches the parent's run through the runs it attaches to)."""
    global _capture, _lock, _the_drainer
    _lock = threading.RLock()  # a thread of the parent may have held it at the fork
    _the_drainer = None  # the parent's thread is not the child's
    if _capture is not None:
        _capture.on = False
        _capture = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
