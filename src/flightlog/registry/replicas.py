"""Whether a replica serves: one definition for every view — `deployments show`, `serving
replicas`, the deployment page and its counts.

A replica is a run the serving feature tags (``serving.endpoint``, ``serving.env``, …); it is
``serving`` while its run is running and its last heartbeat is at most three heartbeat
intervals old, ``gone`` otherwise (the run ended, crashed, or stopped beating).
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["DEFAULT_HEARTBEAT_S", "replica_state"]

DEFAULT_HEARTBEAT_S = 10.0  # serving.attach(heartbeat=...)'s default


def replica_state(run: Any, now: float | None = None) -> str:
    """``serving`` or ``gone`` (see the module docstring)."""
    now = time.time() if now is None else now
    beat = run.timeline.get("heartbeat") if run.timeline else None
    every = (run.params or {}).get("serving.heartbeat_s") or DEFAULT_HEARTBEAT_S
    silent = beat is not None and now - float(beat) > 3 * float(every)
    return "serving" if run.status == "running" and not silent else "gone"
