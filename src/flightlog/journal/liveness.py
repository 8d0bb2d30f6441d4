"""Is the process that writes a journal, or owns a run, still running?

One answer for every reader (``flightlog sync``, the Client's reconciliation behind
``flightlog runs ls``), so they agree on when a run whose process vanished is ``crashed``.
"""

from __future__ import annotations

import socket

__all__ = ["process_alive"]


def process_alive(pid: object, started: float | None, host: str | None = None) -> bool:
    """False when ``pid`` on this host has ended, is a zombie, or is a newer process that reused
    the number (it started more than a second after ``started``). A process on another host
    cannot be checked from here and counts as alive."""
    if host is not None and host != socket.gethostname():
        return True
    import psutil

    try:
        proc = psutil.Process(int(pid))  # type: ignore[call-overload]
        if started is not None and proc.create_time() > float(started) + 1:
            return False
        return bool(proc.status() != psutil.STATUS_ZOMBIE)
    except (psutil.NoSuchProcess, psutil.AccessDenied, TypeError, ValueError):
        return False
