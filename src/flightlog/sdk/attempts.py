"""Which attempt a resumed run continues as: ``init(id=..., resume=True)``.

An ended run is resumed as its next attempt through the store's compare-and-set
(``claim_attempt``), so that of several processes resuming one run at the same instant one gets
the attempt and the others a :class:`~flightlog.errors.Conflict`: never two processes writing
one attempt, their metrics and logs merged. The claim marks the run running by its claimer at
once, so a resumer that reads the run just after it sees a live owner on this host, and gets
the same conflict. A run still running (an owner on another host, or this very process) is
continued in its attempt, as before.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from flightlog.errors import Conflict, NotFound
from flightlog.models import RunInfo

__all__ = ["resume_attempt"]


def resume_attempt(store: Any, info: RunInfo) -> int:
    """The attempt this process continues ``info`` as; raises Conflict when another process has it."""
    if not info.is_finished:
        # a reader's reconciliation has already marked a run whose owner here is gone as crashed
        if info.host == socket.gethostname() and info.pid is not None and info.pid != os.getpid():
            raise Conflict(
                f"run {info.id} is running (attempt {info.attempt}, process {info.pid} on this host): another "
                "process resumed it; resume it once that one has ended",
                details={"run": info.id, "attempt": info.attempt, "pid": info.pid},
            )
        return info.attempt
    try:
        claimed = store.claim_attempt(
            info.id, info.attempt, host=socket.gethostname(), pid=os.getpid(), started=time.time()
        )
    except NotFound:  # a server from before claims: resume without one, as it always did
        return info.attempt + 1
    if claimed is None:
        raise Conflict(
            f"run {info.id} was resumed by another process at the same time (it had ended at attempt "
            f"{info.attempt}): resume it once that one has ended",
            details={"run": info.id, "attempt": info.attempt},
        )
    return int(claimed)
