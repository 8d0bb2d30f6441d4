"""Failures grouped by cause: one pass over the runs listing, one signature per run.

The failed, crashed and killed runs of a window come from one query of the runs listing
(the filter language, so the embedded store, PostgreSQL and a server answer it the same
way); each run's signature comes from its stored failure summary (:mod:`.signature`). The
category is asked for once per distinct set of the other parts, not once per run: ten
thousand tracebacks of one bug classify once.

A pipeline run that failed because one of its steps failed is the step's failure told again:
when that step's run is among the failures, the pipeline run is not counted a second time
(the step's run carries the cause, and the step is part of its signature).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from flightlog.diagnose.cause import run_cause
from flightlog.models import RunInfo
from flightlog.statuses import FAILED_STATUSES
from flightlog.timefmt import iso
from flightlog.triage.signature import Signature, signature_parts

__all__ = [
    "FAILURE_STATUSES",
    "UNCLASSIFIED",
    "Group",
    "failures_filter",
    "failure_time",
    "group_failures",
    "quote",
    "signature_of",
    "per_day",
]

#: the statuses triage counts as failures (a stopped run was stopped on purpose)
FAILURE_STATUSES = FAILED_STATUSES
#: the most days a sparkline holds (the newest ones)
MAX_DAYS = 366
#: the category of a failure a report had no budget left to classify (the next report does)
UNCLASSIFIED = "unclassified"


def quote(text: str) -> str:
    """A string literal of the filter language."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def failures_filter(since: float, pipeline: str | None = None) -> str:
    """The filter of the failures since ``since``: by when they ended, or, for a run that
    vanished without an end, when it was created."""
    when = quote(iso(since) or "")
    statuses = ", ".join(quote(s) for s in FAILURE_STATUSES)
    text = f"status in ({statuses}) and (ended >= {when} or (ended is null and created >= {when}))"
    if pipeline:
        text += f" and tags.pipeline = {quote(pipeline)}"
    return text


def failure_time(info: RunInfo) -> float:
    """When a run failed: its end, else its last update, else its creation."""
    for t in (info.ended, info.updated, info.started, info.created):
        if t is not None:
            return t
    return 0.0


@dataclass
class Group:
    """The runs of one cause signature, newest first."""

    signature: Signature
    runs: list[RunInfo] = field(default_factory=list)
    example: str = ""
    onset: dict[str, Any] | None = None
    memory: dict[str, Any] | None = None  # an out-of-memory group's figures (triage/oom.py)

    @property
    def count(self) -> int:
        return len(self.runs)

    @property
    def first_seen(self) -> float:
        return failure_time(self.runs[-1])

    @property
    def last_seen(self) -> float:
        return failure_time(self.runs[0])

    @property
    def first_bad(self) -> RunInfo:
        return self.runs[-1]

    def statuses(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.runs:
            out[r.status] = out.get(r.status, 0) + 1
        return dict(sorted(out.items()))

    def to_dict(self, days: Sequence[str]) -> dict[str, Any]:
        sig = self.signature
        return {
            "id": sig.id,
            "signature": sig.text,
            "parts": sig.to_dict(),
            "category": sig.category,
            "example": self.example,
            "count": self.count,
            "statuses": self.statuses(),
            "first_seen": iso(self.first_seen),
            "last_seen": iso(self.last_seen),
            "projects": sorted({r.project for r in self.runs}),
            "runs": [r.id for r in self.runs],
            "per_day": per_day([failure_time(r) for r in self.runs], days),
            "onset": self.onset,
            "memory": self.memory,
        }


def _example(info: RunInfo, exception: str, raw: str) -> str:
    """The newest run's own message (redacted when stored), on one line, as a person reads it."""
    first = raw.strip().splitlines()[0] if raw.strip() else ""
    text = f"{exception}: {first}" if exception and first else exception or first
    return text[:500]


Classifier = Callable[[RunInfo], str | None]


def signature_of(
    info: RunInfo, classify: Classifier = run_cause, cache: MutableMapping[Any, str] | None = None
) -> Signature:
    """One run's signature; ``cache`` remembers the category by the other parts (see the module)."""
    exc, message, frame, step, _ = signature_parts(info)
    return _signature(info, exc, message, frame, step, classify, cache)


def _signature(
    info: RunInfo,
    exc: str,
    message: str,
    frame: str | None,
    step: str | None,
    classify: Classifier,
    cache: MutableMapping[Any, str] | None,
) -> Signature:
    failure = info.failure if isinstance(info.failure, dict) else {}
    stored = failure.get("category")
    key = (exc, message, frame, step, stored if isinstance(stored, str) else None, info.status, info.end_reason)
    category = cache.get(key) if cache is not None else None
    if category is None:
        # a failure nothing explains is the taxonomy's catch-all, as the runner records it without a classifier
        category = classify(info) or "code_error"
        if cache is not None and category != UNCLASSIFIED:
            cache[key] = category
    return Signature(category, exc, message, frame, step)


class _Budgeted:
    """A classifier that classifies at most ``budget`` failures, then answers :data:`UNCLASSIFIED`
    (the rest of a report's work stays linear in its runs, see :func:`group_failures`)."""

    def __init__(self, classify: Classifier, budget: int) -> None:
        self.classify, self.left, self.skipped = classify, budget, 0

    def __call__(self, info: RunInfo) -> str | None:
        if self.left <= 0:
            self.skipped += 1
            return UNCLASSIFIED
        self.left -= 1
        return self.classify(info)


def group_failures(
    runs: Iterable[RunInfo],
    classify: Classifier = run_cause,
    *,
    cache: MutableMapping[Any, str] | None = None,
    budget: int | None = None,
    parts: MutableMapping[Any, Any] | None = None,
) -> list[Group]:
    """The failures grouped by signature, the biggest group first (then the newest).

    ``cache`` remembers categories by the other parts of the signature (a server keeps one across
    reports: a failure classified once is never classified again); ``budget`` bounds how many
    new failures one call classifies (the classifier reads a failure's text through its pattern
    tables: milliseconds each). Past it a failure's category is :data:`UNCLASSIFIED`, not
    remembered, so the next report classifies it. ``parts`` remembers each run's signature
    parts by (id, last change), so a run is parsed once across reports."""
    failures = sorted(runs, key=failure_time, reverse=True)
    ids = {r.id for r in failures}
    groups: dict[str, Group] = {}
    cache = {} if cache is None else cache
    if budget is not None:
        classify = _Budgeted(classify, budget)
    for n, info in enumerate(failures):
        failure = info.failure if isinstance(info.failure, dict) else {}
        if failure.get("step_run") in ids:
            continue  # a pipeline run that failed at a step counted on its own (see the module)
        if n % 100 == 99:
            time.sleep(0)  # let the server's other threads (its event loop) have the interpreter
        known = None if parts is None else parts.get((info.id, info.updated, info.attempt))
        if known is None:
            known = signature_parts(info)
            if parts is not None:
                parts[(info.id, info.updated, info.attempt)] = known
        exc, message, frame, step, raw = known
        sig = _signature(info, exc, message, frame, step, classify, cache)
        group = groups.get(sig.id)
        if group is None:
            group = groups[sig.id] = Group(sig, example=_example(info, exc, raw))
        group.runs.append(info)
    return sorted(groups.values(), key=lambda g: (-g.count, -g.last_seen, g.signature.id))


def day_range(since: float, until: float, earliest: float | None = None) -> list[str]:
    """The UTC days of a sparkline: from ``since`` (or the earliest failure, when later) to
    ``until``, the newest :data:`MAX_DAYS` of them."""
    start = max(since, earliest) if earliest is not None else since
    first = datetime.fromtimestamp(max(start, 0.0), UTC).date()
    last = datetime.fromtimestamp(max(until, start, 0.0), UTC).date()
    n = min((last - first).days + 1, MAX_DAYS)
    return [(last - timedelta(days=n - 1 - i)).isoformat() for i in range(n)]


def per_day(times: Iterable[float], days: Sequence[str]) -> list[int]:
    """How many of ``times`` fall on each of ``days`` (UTC dates, oldest first)."""
    index = {d: i for i, d in enumerate(days)}
    counts = [0] * len(days)
    for t in times:
        i = index.get(datetime.fromtimestamp(t, UTC).date().isoformat())
        if i is not None:
            counts[i] += 1
    return counts
