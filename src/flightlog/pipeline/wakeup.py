"""The controller's signals: SIGINT / SIGTERM stop the pipeline; SIGCHLD (a step process
ended) and those two wake its loop at once through a wakeup pipe, so the loop can wait long
between looks without reacting late. Only the main thread can install signal handlers; in
another thread the loop simply sleeps and the caller handles signals."""

from __future__ import annotations

import os
import select
import signal
import time
from collections.abc import Callable
from typing import Any

__all__ = ["SignalWakeup", "drain"]


class SignalWakeup:
    def __init__(self, on_stop: Callable[[int, Any], None]) -> None:
        self._on_stop = on_stop
        self._previous: dict[int, Any] = {}
        self._pipe: tuple[int, int] | None = None
        self._old_fd = -1

    def install(self) -> SignalWakeup:
        handlers = (
            (signal.SIGINT, self._on_stop),
            (signal.SIGTERM, self._on_stop),
            (signal.SIGCHLD, lambda signum, frame: None),
        )
        for sig, handler in handlers:
            try:
                self._previous[sig] = signal.signal(sig, handler)
            except ValueError:  # not the main thread
                return self
        pipe = os.pipe()
        for fd in pipe:
            os.set_blocking(fd, False)
        self._old_fd = signal.set_wakeup_fd(pipe[1], warn_on_full_buffer=False)
        self._pipe = pipe
        return self

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            try:
                signal.signal(sig, handler)
            except (ValueError, TypeError):
                pass
        self._previous = {}
        if self._pipe is not None:
            signal.set_wakeup_fd(self._old_fd)
            for fd in self._pipe:
                os.close(fd)
            self._pipe = None

    def wait(self, seconds: float, also: list[int] | tuple[int, ...] = ()) -> None:
        """Sleep up to ``seconds``, less when a signal (a step ending, Ctrl-C) arrives or one of
        the descriptors ``also`` turns readable (its owner reads it)."""
        fds = [*([self._pipe[0]] if self._pipe is not None else []), *also]
        if not fds:
            time.sleep(seconds)
            return
        ready, _, _ = select.select(fds, [], [], seconds)
        if self._pipe is not None and self._pipe[0] in ready:
            drain(self._pipe[0])


def drain(fd: int) -> None:
    """Read a non-blocking wakeup pipe empty (its bytes only say that something happened)."""
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass
