"""History an evaluation may consult: earlier runs of a group, stage timings, diagnosis.

Only the kinds that look back (``consecutive_failures``, ``duration``, ``diagnosis``) call
these, and only when a run ends (or, for ``duration``, with cached baselines), so the cost of
a live evaluation cycle does not depend on them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from flightlog.models import RunInfo, StageSummary
from flightlog.statuses import FAILED_STATUSES
from flightlog.store.base import Store
from flightlog.timefmt import iso

__all__ = ["Lookup", "quote", "FAILED_STATUSES"]


def quote(text: str) -> str:
    """A string literal of the filter language."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class Lookup:
    def __init__(
        self, store: Store, diagnose: Callable[[str], dict[str, Any]] | None = None, *, cache_seconds: float = 300.0
    ) -> None:
        self.store = store
        self._diagnose = diagnose
        self.cache_seconds = cache_seconds
        self._cache: dict[tuple[Any, ...], tuple[float, Any]] = {}

    def _cached(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        now = time.monotonic()
        hit = self._cache.get(key)
        if hit is not None and now - hit[0] < self.cache_seconds:
            return hit[1]
        value = compute()
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[key] = (now, value)
        return value

    def group_filter(self, run: RunInfo, group_by: str) -> tuple[str | None, str | None]:
        """(project, filter) selecting the runs of ``run``'s group: same name, pipeline or project."""
        if group_by == "project":
            return run.project, None
        if run.name is None:
            return run.project, "name is null" + (" and parent is null" if group_by == "pipeline" else "")
        clause = f"name = {quote(run.name)}"
        if group_by == "pipeline":
            clause += " and parent is null"
        return run.project, clause

    def recent(
        self,
        run: RunInfo,
        group_by: str,
        statuses: Sequence[str],
        *,
        limit: int,
        until: float | None = None,
        order: str = "-ended",
        exclude: str | None = None,
    ) -> list[RunInfo]:
        """The group's latest runs with one of ``statuses``, newest first (ended or created until ``until``)."""
        project, clause = self.group_filter(run, group_by)
        parts = [f"status in ({', '.join(quote(s) for s in statuses)})"]
        if clause:
            parts.append(clause)
        if until is not None:
            column = order.lstrip("-")
            parts.append(f"{column} <= {quote(iso(until + 0.001) or '')}")
        if exclude is not None:
            parts.append(f"id != {quote(exclude)}")
        return self.store.search_runs(project=project, filter=" and ".join(parts), order_by=order, limit=limit)

    def baseline(self, run: RunInfo, stage: str | None, count: int, *, until: float | None) -> list[float]:
        """Durations (of the run, or of one stage) of the group's last ``count`` successful runs."""
        key = ("baseline", run.project, run.name, stage, count, until is None)

        def compute() -> list[float]:
            runs = self.recent(run, "name", ("succeeded",), limit=count, until=until, order="-created", exclude=run.id)
            if stage is None:
                return [r.duration for r in runs if r.duration is not None]
            out = []
            for r in runs:
                total = stage_total(self.store.stages(r.id), stage)
                if total is not None:
                    out.append(total)
            return out

        if until is not None:
            return compute()  # a replay looks at the past as it was: no cache
        values: list[float] = self._cached(key, compute)
        return values

    def stage_total(self, run_id: str, stage: str) -> float | None:
        return stage_total(self.store.stages(run_id), stage)

    def diagnose(self, run_id: str) -> dict[str, Any] | None:
        return None if self._diagnose is None else self._diagnose(run_id)


def stage_total(stages: Sequence[StageSummary], name: str) -> float | None:
    for s in stages:
        if s.name == name:
            return s.total
    return None


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))
