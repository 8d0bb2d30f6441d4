"""The process-wide background thread that flushes every active writer at a bounded interval.

One thread per process (not per run), so creating a thousand runs starts one thread, and a
training loop shares the GIL with at most one flusher. Errors inside a flush are reported
once on stderr and never leave the thread.
"""

from __future__ import annotations

import os
import threading
import traceback

from flightlog.sdk.writer import RunWriter, Writer, warn

__all__ = ["Shipper", "shipper"]


class Shipper:
    def __init__(self) -> None:
        self._writers: list[RunWriter] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._interval = 0.5
        self._reported = False

    def register(self, writer: RunWriter, *, at_once: bool = False) -> None:
        """Flush ``writer`` with the others from now on. Its first flush comes at the thread's
        next tick (within the flush interval), not at once: a run that ends sooner ships
        everything once, from ``finish()``, and a sweep of short runs costs the thread nothing.
        ``at_once``: wake the thread now (a rank, whose peers look for it in the store)."""
        with self._lock:
            self._writers.append(writer)
            interval = min(w.settings.flush_interval for w in self._writers)
            sooner = interval < self._interval  # the thread may be waiting out the longer one
            self._interval = interval
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="flightlog-shipper", daemon=True)
                self._thread.start()
        if at_once or sooner:
            self._wake.set()

    def unregister(self, writer: Writer) -> None:
        with self._lock:
            if writer in self._writers:
                self._writers.remove(writer)

    def poke(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
            with self._lock:
                writers = list(self._writers)
            for writer in writers:
                try:
                    writer.flush()
                except Exception:
                    if not self._reported:
                        self._reported = True
                        warn("internal error while flushing (reported once):\n" + traceback.format_exc())

    def reset_after_fork(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread = None
        for writer in self._writers:
            writer.reset_after_fork()
        if self._writers:
            self._thread = threading.Thread(target=self._loop, name="flightlog-shipper", daemon=True)
            self._thread.start()


shipper = Shipper()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=shipper.reset_after_fork)
