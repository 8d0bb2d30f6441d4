"""How long torch lets a collective wait in this process: its process groups' timeouts.

A rank stuck before a collective makes every other rank wait inside it; after the process
group's ``timeout`` (``init_process_group(timeout=…)``; NCCL's default is 10 minutes, gloo's 30)
torch's watchdog or gloo's receive gives up, the launcher tears the job down, and the stuck
rank is gone before anything could say where it was. The hang watch must therefore judge a
stall well inside that timeout — at most half of it (`HangSettings.threshold`) — and this
module tells it the timeout when torch knows one.

Read from the watch's own thread, without importing anything: torch's registry of process
groups (``torch.distributed.distributed_c10d._world.pg_map``) and each group's backend options
(``pg._get_backend(device).options._timeout``, a ``timedelta``: what ``init_process_group``
and ``new_group`` store, and what ``_set_pg_timeout`` changes). Both are torch's internals, read
defensively: any surprise (another version, a backend without options) reads as "not known",
and the watch keeps its other thresholds. Standard library only (see ``agent/__init__.py``).
"""

from __future__ import annotations

import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing into a workload at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["group_timeout", "GroupTimeouts"]

_DEVICES = ("cpu", "cuda")
_REFRESH_S = 10.0  # a group's timeout may be changed (``_set_pg_timeout``): read again this often


def group_timeout() -> float | None:
    """The shortest timeout (seconds) among this process's torch process groups, or None: no
    process group, torch not imported, or nothing readable."""
    dist = sys.modules.get("torch.distributed")
    torch = sys.modules.get("torch")
    if dist is None or torch is None:
        return None
    try:
        if not (dist.is_available() and dist.is_initialized()):
            return None
        groups = list(dist.distributed_c10d._world.pg_map)
    except Exception:
        return None
    shortest: float | None = None
    for pg in groups[:64]:
        for name in _DEVICES:
            seconds = _backend_timeout(torch, pg, name)
            if seconds is not None and (shortest is None or seconds < shortest):
                shortest = seconds
    return shortest


def _backend_timeout(torch: Any, pg: Any, device: str) -> float | None:
    try:
        backend = pg._get_backend(torch.device(device))
        seconds = float(backend.options._timeout.total_seconds())
    except Exception:  # no backend for that device, or options of another shape
        return None
    return seconds if seconds > 0 else None


class GroupTimeouts:
    """`group_timeout`, read again only when the number of groups changed or every
    ``_REFRESH_S`` seconds: the watch asks on every look (several times a second)."""

    def __init__(self) -> None:
        self._value: float | None = None
        self._count: int | None = None
        self._read_at = float("-inf")

    def current(self, now: float | None = None) -> float | None:
        now = time.monotonic() if now is None else now
        count = _group_count()
        if count != self._count or now - self._read_at >= _REFRESH_S:
            self._count = count
            self._read_at = now
            self._value = group_timeout() if count else None
        return self._value


def _group_count() -> int | None:
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return None
    try:
        return int(dist.distributed_c10d._world.group_count) if dist.is_initialized() else 0
    except Exception:
        return None
