"""What one evaluation hands the rules: what is new since the last one, for every run watched.

A cycle holds, per series, one :class:`Column` of the new points of *every* run (numpy arrays,
one segment per run and series labels), so that the point-heavy kinds (threshold,
no_improvement, non_finite) judge a thousand runs with a few array operations and fall back to
Python only for the runs where something changes. Per-run facts (status, rules that apply,
newest log line) are in :class:`RunDelta`. Feeds (live, over the store) and the replay
(``alerts test``) both build cycles; evaluators keep their own state, so a cycle reads only
new points and its cost does not grow with a run's history.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flightlog.models import TERMINAL_STATUSES, RunInfo

__all__ = ["Column", "ColumnBuilder", "Cycle", "RunDelta", "Needs", "run_fields", "Labels", "SegmentKey"]

Labels = tuple[tuple[str, str], ...]
SegmentKey = tuple[str, Labels]  # (run id, series labels such as (("gpu", "0"),))
_EMPTY_I = np.zeros(0, dtype=np.int64)
_EMPTY_F = np.zeros(0, dtype=np.float64)


@dataclass
class Column:
    """New points of one series: segment ``i`` (``keys[i]``) owns rows ``starts[i]:starts[i + 1]``,
    in time (arrival) order."""

    keys: list[SegmentKey]
    starts: np.ndarray  # int64, len(keys) + 1
    times: np.ndarray
    values: np.ndarray
    steps: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.starts)

    @property
    def ends(self) -> np.ndarray:
        return self.starts[1:]

    def segment(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        a, b = int(self.starts[i]), int(self.starts[i + 1])
        return self.times[a:b], self.values[a:b], None if self.steps is None else self.steps[a:b]

    def last_times(self) -> np.ndarray:
        return self.times[self.starts[1:] - 1] if len(self.keys) else _EMPTY_F


class ColumnBuilder:
    """Collects (key, steps, times, values) parts; ``build()`` groups them by key, stably."""

    def __init__(self) -> None:
        self.parts: list[tuple[SegmentKey, Any, Any, Any]] = []

    def add(self, key: SegmentKey, times: Any, values: Any, steps: Any = None) -> None:
        self.parts.append((key, steps, times, values))

    def build(self, *, with_steps: bool) -> Column:
        parts = sorted(self.parts, key=_part_key)  # stable: older parts of a key stay first
        keys: list[SegmentKey] = []
        bounds = [0]
        n = 0
        for key, _, times, _ in parts:
            n += len(times) // 8 if isinstance(times, bytes) else len(times)
            if keys and keys[-1] == key:
                bounds[-1] = n
            else:
                keys.append(key)
                bounds.append(n)
        times = _cat([p[2] for p in parts], np.float64)
        values = _cat([p[3] for p in parts], np.float64)
        steps = _cat([p[1] for p in parts], np.int64) if with_steps else None
        return Column(keys, np.asarray(bounds, dtype=np.int64), times, values, steps)


def _part_key(part: tuple[SegmentKey, Any, Any, Any]) -> SegmentKey:
    return part[0]


def _cat(arrays: Sequence[Any], dtype: Any) -> np.ndarray:
    if not arrays:
        return _EMPTY_I if dtype is np.int64 else _EMPTY_F
    if isinstance(arrays[0], bytes):
        return np.frombuffer(b"".join(arrays), dtype="<i8" if dtype is np.int64 else "<f8").astype(dtype, copy=False)
    return np.concatenate([np.asarray(a, dtype=dtype) for a in arrays])


@dataclass
class RunDelta:
    """One run in a cycle: its facts now, the rules that watch it, its newest signs of life."""

    run: RunInfo
    rules: frozenset[str]  # the rules that apply to this run (project, filter)
    last_log: float | None = None  # newest log event time among the new ones
    last_metric: float | None = None  # newest metric point time among the new ones
    heartbeat: float | None = None  # newest heartbeat (timeline "heartbeat") known
    fresh: float | None = None  # newest time of anything stored for the run (samples too): how current its data is
    finished: bool = False  # the run reached its end: the final evaluation of this run
    late: bool = False  # first seen after it had ended (its live alerts are judged once, afterwards)

    @property
    def running(self) -> bool:
        return self.run.status not in TERMINAL_STATUSES


@dataclass
class Cycle:
    runs: dict[str, RunDelta] = field(default_factory=dict)
    metrics: dict[str, Column] = field(default_factory=dict)
    resources: dict[str, Column] = field(default_factory=dict)
    _masks: dict[tuple[int, str], np.ndarray] = field(default_factory=dict, repr=False)
    _all_rules: frozenset[str] | None = field(default=None, repr=False)

    def applies(self, column: Column, rule: str) -> np.ndarray:
        """Which segments of ``column`` belong to runs ``rule`` watches (cached per cycle)."""
        key = (id(column), rule)
        mask = self._masks.get(key)
        if mask is None and rule in self._everywhere():
            mask = self._masks[key] = np.ones(len(column.keys), dtype=bool)  # every run here: the usual case
        if mask is None:
            runs = self.runs
            mask = np.fromiter(
                (rule in runs[k[0]].rules if k[0] in runs else False for k in column.keys),
                dtype=bool,
                count=len(column.keys),
            )
            self._masks[key] = mask
        return mask

    def _everywhere(self) -> frozenset[str]:
        """The rules that apply to every run of this cycle (columns hold only these runs' points)."""
        if self._all_rules is None:
            sets = [d.rules for d in self.runs.values()]
            self._all_rules = frozenset.intersection(*sets) if sets else frozenset()
        return self._all_rules

    def note_metric_times(self) -> None:
        """Each run's newest metric point time (for the stalled kind)."""
        for column in self.metrics.values():
            if not len(column):
                continue
            for key, t in zip(column.keys, column.last_times().tolist(), strict=True):
                d = self.runs.get(key[0])
                if d is not None and (d.last_metric is None or t > d.last_metric):
                    d.last_metric = t


@dataclass
class Needs:
    """What an evaluator reads, so a feed loads (and decodes) nothing else."""

    metrics: frozenset[str] = frozenset()
    all_metrics: bool = False
    resources: frozenset[str] = frozenset()
    activity: bool = False  # log times and heartbeats
    finish: bool = False  # looks at runs when they end (history queries)

    def merge(self, other: Needs) -> Needs:
        return Needs(
            self.metrics | other.metrics,
            self.all_metrics or other.all_metrics,
            self.resources | other.resources,
            self.activity or other.activity,
            self.finish or other.finish,
        )

    def wants_metric(self, name: str) -> bool:
        return self.all_metrics or name in self.metrics

    @classmethod
    def union(cls, needs: Iterable[Needs]) -> Needs:
        out = cls()
        for n in needs:
            out = out.merge(n)
        return out


def run_fields(run: RunInfo) -> dict[str, Any]:
    """The run as the filter language and the summary templates see it."""
    return {
        "id": run.id,
        "short_id": run.id[:8],
        "project": run.project,
        "name": run.name,
        "status": run.status,
        "end_reason": run.end_reason,
        "parent_id": run.parent_id,
        "created": run.created,
        "queued": run.queued,
        "started": run.started,
        "ended": run.ended,
        "attempt": run.attempt,
        "exit_code": run.exit_code,
        "signal": run.signal,
        "host": run.host,
        "params": run.params,
        "tags": run.tags,
        "metrics": {k: m.last for k, m in run.metrics.items()},
    }
