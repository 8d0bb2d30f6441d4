"""Profiles: a small, mergeable summary of a table, built in one streaming pass.

``profile(obj)`` reads any source (frame, table, array, CSV / Parquet / JSON Lines file or a
directory of them) batch by batch, so a file larger than memory works, and returns a
:class:`Profile`: the row count and, per column, the type, null count and share, and

* for numbers: count, mean, std, min, max, quantiles (within 1 % relative error, from a
  DDSketch) and a histogram;
* for categories (strings, booleans): cardinality and the most frequent values;
* for dates and times: the earliest and latest value (what freshness checks use).

Profiles merge (``a.merge(b)`` or ``merge_profiles(...)``): profile shards in parallel, then
merge; counts are exact and the quantile sketch of the merge equals the sketch of the whole.
``to_dict()`` / ``from_dict()`` round-trip through JSON, which is how a profile is logged on a
run (``run.log_profile(name, profile)``) and compared later (``flightlog data drift``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from flightlog.data import progress
from flightlog.data.sources import KindConflict, Source, column_kind, open_source, scan, type_name
from flightlog.data.stats import (
    DEFAULT_QUANTILES,
    EXACT_VALUES_LIMIT,
    MAX_CATEGORIES,
    CategoricalStats,
    DatetimeStats,
    NumericStats,
)
from flightlog.errors import InvalidInput
from flightlog.timefmt import iso, parse_time

__all__ = ["Profile", "ColumnProfile", "profile", "merge_profiles", "PROFILE_VERSION"]

PROFILE_VERSION = 1
_PARALLEL_ROWS = 200_000
_MAX_THREADS = 8


@dataclass
class ColumnProfile:
    """One column: type, counts, and the statistics of its kind."""

    name: str
    type: str
    kind: str  # numeric | categorical | datetime | other
    count: int = 0  # rows, nulls included
    null_count: int = 0
    numeric: NumericStats | None = None
    categorical: CategoricalStats | None = None
    datetime: DatetimeStats | None = None

    @property
    def null_share(self) -> float:
        return self.null_count / self.count if self.count else 0.0

    @property
    def stats(self) -> NumericStats | CategoricalStats | DatetimeStats | None:
        return self.numeric or self.categorical or self.datetime

    def to_dict(self, *, quantiles: tuple[float, ...] = DEFAULT_QUANTILES, top_k: int = 10) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "kind": self.kind,
            "count": self.count,
            "null_count": self.null_count,
            "null_share": self.null_share,
            "numeric": self.numeric.to_dict(quantiles) if self.numeric else None,
            "categorical": self.categorical.to_dict(top_k) if self.categorical else None,
            "datetime": self.datetime.to_dict() if self.datetime else None,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ColumnProfile:
        return cls(
            name=str(d["name"]),
            type=str(d["type"]),
            kind=str(d["kind"]),
            count=int(d["count"]),
            null_count=int(d["null_count"]),
            numeric=NumericStats.from_dict(d["numeric"]) if d.get("numeric") else None,
            categorical=CategoricalStats.from_dict(d["categorical"]) if d.get("categorical") else None,
            datetime=DatetimeStats.from_dict(d["datetime"]) if d.get("datetime") else None,
        )

    def merge(self, other: ColumnProfile) -> None:
        if self.kind == "other" and self.type == "null":
            self.kind, self.type = other.kind, other.type
            self.numeric, self.categorical, self.datetime = _empty_stats_like(other)
        elif other.kind != self.kind and not (other.kind == "other" and other.type == "null"):
            raise InvalidInput(
                f"cannot merge profiles: column {self.name!r} is {self.type} in one and {other.type} in the other"
            )
        elif other.type != self.type and other.type != "null":
            self.type = _wider_type_name(self.type, other.type)
        self.count += other.count
        self.null_count += other.null_count
        for mine, theirs in (
            (self.numeric, other.numeric),
            (self.categorical, other.categorical),
            (self.datetime, other.datetime),
        ):
            if mine is not None and theirs is not None:
                mine.merge(theirs)  # type: ignore[arg-type]


def _empty_stats_like(
    other: ColumnProfile,
) -> tuple[NumericStats | None, CategoricalStats | None, DatetimeStats | None]:
    num = cat = dt = None
    if other.numeric is not None:
        num = NumericStats(other.numeric.sketch.relative_accuracy, other.numeric.exact_limit)
    if other.categorical is not None:
        cat = CategoricalStats(other.categorical.max_categories)
    if other.datetime is not None:
        dt = DatetimeStats()
    return num, cat, dt


def _wider_type_name(a: str, b: str) -> str:
    floats = ("double", "float", "halffloat")
    if a in floats or b in floats:
        return "double"
    return a


@dataclass
class Profile:
    """A table's profile: row count and one :class:`ColumnProfile` per column, in order."""

    row_count: int = 0
    columns: dict[str, ColumnProfile] = field(default_factory=dict)
    source: str | None = None
    created: float = field(default_factory=time.time)
    quantiles: tuple[float, ...] = DEFAULT_QUANTILES
    top_k: int = 10

    def __getitem__(self, name: str) -> ColumnProfile:
        try:
            return self.columns[name]
        except KeyError:
            raise KeyError(f"no column {name!r} in the profile; columns: {list(self.columns)}") from None

    def __iter__(self) -> Iterator[ColumnProfile]:
        return iter(self.columns.values())

    def __len__(self) -> int:
        return len(self.columns)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict: derived figures for readers plus the state needed to merge."""
        return {
            "version": PROFILE_VERSION,
            "source": self.source,
            "created": iso(self.created),
            "row_count": self.row_count,
            "column_count": len(self.columns),
            "columns": [c.to_dict(quantiles=self.quantiles, top_k=self.top_k) for c in self.columns.values()],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Profile:
        if not isinstance(d, dict) or "columns" not in d or "row_count" not in d:
            raise InvalidInput("not a flightlog profile: expected an object with row_count and columns")
        version = int(d.get("version", 1))
        if version > PROFILE_VERSION:
            raise InvalidInput(
                f"profile format version {version} is newer than this flightlog supports "
                f"({PROFILE_VERSION}); upgrade flightlog"
            )
        cols = [ColumnProfile.from_dict(c) for c in d["columns"]]
        created = d.get("created")
        return cls(
            row_count=int(d["row_count"]),
            columns={c.name: c for c in cols},
            source=d.get("source"),
            created=parse_time(created) if isinstance(created, str) else time.time(),
        )

    def merge(self, other: Profile) -> Profile:
        """A new profile of the rows of both (columns missing on one side count as null there)."""
        out = Profile.from_dict(self.to_dict())
        out.source = self.source if self.source == other.source else None
        out.quantiles, out.top_k = self.quantiles, self.top_k
        _merge_into(out, other)
        return out

    def __add__(self, other: Profile) -> Profile:
        return self.merge(other)


def _merge_into(out: Profile, other: Profile) -> None:
    for name, col in other.columns.items():
        mine = out.columns.get(name)
        if mine is None:
            mine = ColumnProfile(name, "null", "other", count=out.row_count, null_count=out.row_count)
            out.columns[name] = mine
        mine.merge(ColumnProfile.from_dict(col.to_dict()))
    for name, col in out.columns.items():
        if name not in other.columns:
            col.count += other.row_count
            col.null_count += other.row_count
    out.row_count += other.row_count


def merge_profiles(profiles: Iterable[Profile]) -> Profile:
    """Merge profiles of shards (at least one) into the profile of their union."""
    items = list(profiles)
    if not items:
        raise InvalidInput("merge_profiles needs at least one profile")
    out = items[0]
    for p in items[1:]:
        out = out.merge(p)
    if len(items) == 1:
        out = Profile.from_dict(out.to_dict())
    return out


def _update(stats: Any, arr: pa.Array, nulls: int) -> None:
    stats.update(pc.drop_null(arr) if nulls else arr)


class _Builder:
    """The state of one streaming pass: a Profile being filled batch by batch."""

    def __init__(self, relative_accuracy: float, exact_limit: int, max_categories: int, pool: Executor | None) -> None:
        self.profile = Profile()
        self.pool = pool
        self.relative_accuracy = relative_accuracy
        self.exact_limit = exact_limit
        self.max_categories = max_categories

    def _new_column(self, name: str, t: pa.DataType) -> ColumnProfile:
        kind = column_kind(t)
        col = ColumnProfile(name, type_name(t), "other" if kind == "null" else kind)
        if kind == "numeric":
            col.numeric = NumericStats(self.relative_accuracy, self.exact_limit)
        elif kind == "categorical":
            col.categorical = CategoricalStats(self.max_categories)
        elif kind == "datetime":
            col.datetime = DatetimeStats()
        rows = self.profile.row_count
        col.count = col.null_count = rows
        return col

    def feed(self, batch: pa.RecordBatch) -> None:
        p = self.profile
        n = batch.num_rows
        seen = set()
        work: list[tuple[Any, pa.Array, int]] = []
        for name, arr in zip(batch.schema.names, batch.columns, strict=True):
            seen.add(name)
            col = p.columns.get(name)
            kind = column_kind(arr.type)
            if col is None:
                col = p.columns[name] = self._new_column(name, arr.type)
            elif col.type == "null" and kind != "null":
                rows_before, nulls_before = col.count, col.null_count
                col = p.columns[name] = self._new_column(name, arr.type)
                col.count, col.null_count = rows_before, nulls_before
            elif kind not in ("null", col.kind):
                raise KindConflict(name, col.type, type_name(arr.type))
            elif kind == "numeric" and type_name(arr.type) != col.type:
                col.type = _wider_type_name(col.type, type_name(arr.type))
            col.count += n
            nulls = arr.null_count
            col.null_count += nulls
            stats = col.stats
            if stats is None or kind == "null" or nulls == n:
                continue
            work.append((stats, arr, nulls))
        if self.pool is not None and n >= _PARALLEL_ROWS and len(work) > 1:
            # numpy and Arrow release the GIL in their kernels: columns update in parallel.
            for f in [self.pool.submit(_update, *w) for w in work]:
                f.result()
        else:
            for w in work:
                _update(*w)
        for name, col in p.columns.items():
            if name not in seen:
                col.count += n
                col.null_count += n
        p.row_count += n


def profile(
    obj: Any,
    *,
    columns: list[str] | None = None,
    name: str | None = None,
    quantiles: tuple[float, ...] = DEFAULT_QUANTILES,
    top_k: int = 10,
    relative_accuracy: float = 0.01,
    exact_limit: int = EXACT_VALUES_LIMIT,
    max_categories: int = MAX_CATEGORIES,
    batch_rows: int | None = None,
    show_progress: bool | None = None,
) -> Profile:
    """Profile a data frame, table, array, file or directory in one streaming pass.

    ``columns`` limits the profile to those columns; ``relative_accuracy`` sets the quantile
    error bound; ``show_progress`` (default: when stderr is a terminal) draws a progress bar.
    """
    if not 0 < relative_accuracy < 1:
        raise InvalidInput(f"relative_accuracy must be between 0 and 1, got {relative_accuracy}")
    kwargs: dict[str, Any] = {"columns": columns, "name": name}
    if batch_rows:
        kwargs["batch_rows"] = batch_rows
    source: Source = open_source(obj, **kwargs)
    workers = min(os.cpu_count() or 1, _MAX_THREADS)
    with (
        progress.task(f"profiling {source.name}", total=source.size_bytes, enabled=show_progress) as bar,
        ThreadPoolExecutor(workers, thread_name_prefix="flightlog-profile") as pool,
    ):
        builder = scan(
            source,
            lambda: _Builder(relative_accuracy, exact_limit, max_categories, pool if workers > 1 else None),
            _Builder.feed,
            on_progress=lambda rows: bar.update(source.position(), rows),
        )
    out = builder.profile
    out.source = source.name
    out.quantiles, out.top_k = tuple(quantiles), top_k
    for col in out.columns.values():
        if col.type == "null":
            col.kind = "other"
    return out
