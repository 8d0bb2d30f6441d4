"""The triage report: the groups of a project's failures in a window, each with its onset.

One document for every surface — ``flightlog triage --format json``, ``GET /api/v1/triage``
and the UI's Failures page — with stable keys (docs/triage.md).
"""

from __future__ import annotations

import time
from collections.abc import MutableMapping
from typing import Any

from flightlog.errors import InvalidInput, NotFound
from flightlog.timefmt import iso, parse_time
from flightlog.triage.budget import MAX_FAILURES, bounded_cause
from flightlog.triage.groups import UNCLASSIFIED, day_range, failures_filter, group_failures, quote
from flightlog.triage.onset import onset_of
from flightlog.triage.oom import MEMORY_CATEGORIES, group_memory

__all__ = ["triage_report", "parse_since", "check_scope", "DEFAULT_SINCE", "MAX_ONSETS"]

DEFAULT_SINCE = "7d"
#: onsets are found for this many groups, the biggest (each reads two runs' evidence)
MAX_ONSETS = 50


def parse_since(text: str | None, *, now: float) -> float:
    """``--since``: a duration ago or an ISO time, with the accepted forms in the error."""
    try:
        return parse_time(text or DEFAULT_SINCE, now=now, what="--since")
    except InvalidInput:
        raise InvalidInput(
            f"--since {text!r} is not a time: give a duration ago (30m, 12h, 7d, 2w) "
            "or an ISO-8601 time (2026-11-30, 2026-11-30T12:00:00Z)"
        ) from None


def check_scope(client: Any, project: str | None, pipeline: str | None) -> None:
    """An unknown project or pipeline is an error that names the ones there are."""
    if project is not None:
        names = [p["name"] for p in client.projects()]
        if project not in names:
            raise NotFound(
                f"no project {project!r}" + (f"; the projects are: {', '.join(names)}" if names else " (no runs yet)"),
                details={"project": project, "projects": names},
            )
    if pipeline is not None:
        if client.runs(project=project, filter=f"tags.pipeline = {quote(pipeline)}", limit=1):
            return
        runs = client.runs(project=project, filter="tags.pipeline is not null and parent is null", limit=1000)
        known = sorted({r.tags["pipeline"] for r in runs if r.tags.get("pipeline")})
        where = f" in project {project!r}" if project else ""
        raise NotFound(
            f"no pipeline {pipeline!r}{where}"
            + (f"; the pipelines are: {', '.join(known)}" if known else " (no pipeline has run there)"),
            details={"pipeline": pipeline, "pipelines": known},
        )


def _failures(client: Any, project: str | None, filter: str) -> list[Any]:
    """The newest :data:`MAX_FAILURES` + 1 failures, read a page at a time: no read holds the
    store (an embedded store has one connection) for more than a page's worth of runs."""
    runs: list[Any] = []
    while len(runs) <= MAX_FAILURES:
        page = client.runs(project=project, filter=filter, order_by="-created,id", limit=_PAGE, offset=len(runs))
        runs += page
        if len(page) < _PAGE:
            break
        time.sleep(0)  # let the server's other threads (its event loop, /healthz) in between pages
    return runs


_PAGE = 500


def triage_report(
    client: Any,
    *,
    project: str | None = None,
    since: str | None = None,
    pipeline: str | None = None,
    onsets: bool = True,
    now: float | None = None,
    start: float | None = None,
    categories: MutableMapping[Any, str] | None = None,
    budget: int | None = None,
    parts: MutableMapping[Any, Any] | None = None,
) -> dict[str, Any]:
    """The failures of ``project`` (every project when None) since ``since``, grouped by cause.

    At most :data:`~flightlog.triage.budget.MAX_FAILURES` failures are read (the newest;
    ``truncated`` says so), each classified on bounded text; ``categories`` remembers
    categories between reports and ``budget`` bounds the new classifications of this one (a
    server passes both, see budget.py). ``start`` (epoch seconds) replaces ``since``'s."""
    now = time.time() if now is None else now
    start = parse_since(since, now=now) if start is None else start
    check_scope(client, project, pipeline)
    runs = _failures(client, project, failures_filter(start, pipeline))
    truncated = len(runs) > MAX_FAILURES
    groups = group_failures(runs[:MAX_FAILURES], bounded_cause, cache=categories, budget=budget, parts=parts)
    if onsets:
        for group in groups[:MAX_ONSETS]:
            group.onset = onset_of(client, group.first_bad)
    for group in groups[:MAX_ONSETS]:
        if group.signature.category in MEMORY_CATEGORIES:
            group.memory = group_memory(client, group.runs)
    earliest = min((g.first_seen for g in groups), default=None)
    # a long window starts its sparkline at the first failure, not months of zeros before it
    days = day_range(start, now, earliest if now - start > 31 * 86400 else None)
    return {
        "project": project,
        "pipeline": pipeline,
        "since": iso(start),
        "until": iso(now),
        "failures": sum(g.count for g in groups),
        "days": days,
        "groups": [g.to_dict(days) for g in groups],
        "truncated": truncated,
        "unclassified": sum(g.count for g in groups if g.signature.category == UNCLASSIFIED),
    }
