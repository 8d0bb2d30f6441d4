"""The memory figures of an out-of-memory group: how much each run took at most, against the
limit it ran under — the same figure its diagnosis quotes (:func:`flightlog.diagnose.memory.
memory_figure`), so that ``flightlog triage``, its JSON, the API and the UI's Failures page
show one number, not three."""

from __future__ import annotations

from typing import Any

from flightlog.diagnose.evidence import RunEvidence
from flightlog.diagnose.memory import MemoryFigure, memory_figure
from flightlog.models import RunInfo
from flightlog.timefmt import format_size

__all__ = ["group_memory", "MEMORY_CATEGORIES", "MAX_RUNS"]

#: the groups whose cause is memory
MEMORY_CATEGORIES = frozenset({"oom_killed"})
#: the newest runs of a group whose samples are read (each is a read of its resources)
MAX_RUNS = 10


def group_memory(client: Any, runs: list[RunInfo]) -> dict[str, Any] | None:
    """``{"peak_bytes", "limit_bytes", "text", "runs": [{"run", "peak_bytes", "limit_bytes"}]}``
    for a group's runs (newest first): the highest peak of the newest :data:`MAX_RUNS`, with
    the limit of the run that reached it; None when no run recorded either number."""
    rows: list[tuple[RunInfo, MemoryFigure]] = []
    for info in runs[:MAX_RUNS]:
        figure = memory_figure(RunEvidence(client, info))
        if figure.peak_bytes or figure.limit_bytes:
            rows.append((info, figure))
    if not rows:
        return None
    top = max(rows, key=lambda row: row[1].peak_bytes or 0)[1]
    limits = sorted({f.limit_bytes for _, f in rows if f.limit_bytes})
    text = top.text()
    if len(rows) > 1:
        text += f" (the highest of {len(rows)} runs"
        if len(limits) > 1:
            text += f"; limits {format_size(limits[0])}–{format_size(limits[-1])}"
        text += ")"
    return {
        "peak_bytes": top.peak_bytes,
        "limit_bytes": top.limit_bytes,
        "text": text,
        "runs": [{"run": info.id, "peak_bytes": f.peak_bytes, "limit_bytes": f.limit_bytes} for info, f in rows],
    }
