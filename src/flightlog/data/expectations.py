"""Expectations: the assumptions a pipeline makes about its data, checked batch by batch.

Each expectation is a small object with three steps — ``start()`` makes its state,
``feed(state, batch, offset)`` looks at one record batch, ``finish(state, rows)`` turns the
state into a :class:`Result` — so a whole suite is checked in one streaming pass over a file
of any size (``unique`` makes a second pass only when it failed, to show examples).

They are written in Python (``Between("age", 0, 120)``) or in YAML
(:mod:`flightlog.data.expectfile`); :func:`flightlog.data.validation.validate` runs them.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flightlog.data.sketch import hash_values
from flightlog.data.sources import type_name
from flightlog.errors import InvalidInput
from flightlog.timefmt import format_duration, iso, parse_duration, parse_time

__all__ = [
    "Expectation",
    "Result",
    "ColumnPresent",
    "ColumnType",
    "NotNull",
    "Between",
    "InSet",
    "Unique",
    "MatchesRegex",
    "RowCount",
    "Freshness",
    "TYPE_FAMILIES",
    "REDACTED",
]

REDACTED = "<redacted>"
MAX_EXAMPLES = 5

TYPE_FAMILIES: dict[str, str] = {
    "integer": "any integer type",
    "float": "any floating-point type",
    "number": "integer, float or decimal",
    "string": "text",
    "bool": "boolean",
    "datetime": "timestamp",
    "date": "date",
}
_TYPE_ALIASES = {
    "int": "integer",
    "numeric": "number",
    "str": "string",
    "text": "string",
    "boolean": "bool",
    "timestamp": "datetime",
}


@dataclass
class Result:
    """The outcome of one expectation: what was expected, what was seen, offending examples."""

    expectation: str
    column: str | None
    success: bool
    expected: str
    observed: str
    unexpected_count: int = 0
    unexpected_share: float | None = None
    examples: list[dict[str, Any]] = field(default_factory=list)
    redacted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "expectation": self.expectation,
            "column": self.column,
            "success": self.success,
            "expected": self.expected,
            "observed": self.observed,
            "unexpected_count": self.unexpected_count,
            "unexpected_share": self.unexpected_share,
            "examples": self.examples,
            "redacted": self.redacted,
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.UTC)
        return iso(v.timestamp())
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, int | float | str | bool) or v is None:
        return v
    return str(v)


class Expectation:
    """Base: one assumption. Subclasses set ``name`` and implement the three steps."""

    name: ClassVar[str] = "expectation"
    column: str | None
    #: Set for the checks of a column declared ``present: false``: absent, they pass.
    optional = False

    def start(self) -> Any:
        return {"bad": 0, "seen": 0, "examples": []}

    def feed(self, state: Any, batch: pa.RecordBatch, offset: int) -> None:
        raise NotImplementedError

    def finish(self, state: Any, rows: int) -> Result:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


def _missing(e: Expectation) -> Result:
    if e.optional:
        return Result(
            e.name, e.column, True, e.describe(), f"column {e.column!r} is absent (optional)"
        )
    return Result(e.name, e.column, False, e.describe(), f"column {e.column!r} is missing")


class _ColumnCheck(Expectation):
    """A check of each value of one column: counts offenders and keeps the first few rows."""

    def _column(self, batch: pa.RecordBatch) -> pa.Array | None:
        i = batch.schema.get_field_index(self.column or "")
        return batch.column(i) if i >= 0 else None

    def bad_mask(self, arr: pa.Array) -> pa.Array:
        raise NotImplementedError

    def feed(self, state: Any, batch: pa.RecordBatch, offset: int) -> None:
        arr = self._column(batch)
        if arr is None:
            return
        state["present"] = True
        state["seen"] += len(arr) - arr.null_count
        if len(arr) == arr.null_count:
            return
        # Nulls are never offenders here (NotNull is the check for them).
        bad = pc.and_(pc.fill_null(self.bad_mask(arr), False), arr.is_valid())
        n_bad = pc.sum(bad).as_py() or 0
        if n_bad:
            state["bad"] += n_bad
            need = MAX_EXAMPLES - len(state["examples"])
            if need > 0:
                idx = pc.indices_nonzero(bad).slice(0, need)
                values = arr.take(idx).to_pylist()
                state["examples"].extend(
                    {"row": offset + int(i), "value": _jsonable(v)}
                    for i, v in zip(idx.to_pylist(), values, strict=True)
                )

    def finish(self, state: Any, rows: int) -> Result:
        if not state.get("present"):
            return self._missing()
        bad, seen = state["bad"], state["seen"]
        return Result(
            self.name,
            self.column,
            bad == 0,
            self.describe(),
            "all values conform" if bad == 0 else f"{bad:,} of {seen:,} values do not",
            unexpected_count=bad,
            unexpected_share=bad / seen if seen else 0.0,
            examples=state["examples"],
        )

    def _missing(self) -> Result:
        return _missing(self)


@dataclass(repr=False)
class ColumnPresent(Expectation):
    """The column exists."""

    column: str | None
    name: ClassVar[str] = "column_present"

    def start(self) -> Any:
        return {"present": False, "columns": []}

    def feed(self, state: Any, batch: pa.RecordBatch, offset: int) -> None:
        state["present"] = state["present"] or self.column in batch.schema.names
        if not state["columns"]:
            state["columns"] = list(batch.schema.names)

    def finish(self, state: Any, rows: int) -> Result:
        ok = state["present"]
        seen = ", ".join(state["columns"][:20])
        return Result(
            self.name,
            self.column,
            ok,
            self.describe(),
            "present" if ok else f"missing; columns are: {seen}",
        )

    def describe(self) -> str:
        return f"column {self.column!r} is present"


@dataclass(repr=False)
class ColumnType(Expectation):
    """The column has a type of a family (integer, float, number, string, bool, datetime, date) or an exact Arrow type."""

    column: str | None
    type: str
    name: ClassVar[str] = "column_type"

    def __post_init__(self) -> None:
        low = str(self.type).strip().lower()
        family = _TYPE_ALIASES.get(low, low)
        if family in TYPE_FAMILIES:
            self.type = family
            return
        try:
            pa.type_for_alias(low)
        except (ValueError, KeyError):
            if not re.fullmatch(r"[a-z_]+\d*(\[.*\])?(<.*>)?", low):
                raise InvalidInput(
                    f"unknown type {self.type!r}: use one of {', '.join(TYPE_FAMILIES)} or an Arrow "
                    "type name such as int64, double, string, timestamp[us]"
                ) from None
        self.type = low

    def start(self) -> Any:
        return {"types": [], "present": False}

    def feed(self, state: Any, batch: pa.RecordBatch, offset: int) -> None:
        i = batch.schema.get_field_index(self.column or "")
        if i < 0:
            return
        state["present"] = True
        t = batch.schema.field(i).type
        if not pa.types.is_null(t) and t not in state["types"]:
            state["types"].append(t)

    def _fits(self, t: pa.DataType) -> bool:
        fam = self.type
        if fam == "integer":
            return pa.types.is_integer(t)
        if fam == "float":
            return pa.types.is_floating(t)
        if fam == "number":
            return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        if fam == "string":
            return type_name(t) == "string"
        if fam == "bool":
            return pa.types.is_boolean(t)
        if fam == "datetime":
            return pa.types.is_timestamp(t)
        if fam == "date":
            return pa.types.is_date(t)
        return type_name(t) == fam

    def finish(self, state: Any, rows: int) -> Result:
        types = state["types"]
        if not state["present"]:
            return _missing(self)
        if not types:
            return Result(self.name, self.column, True, self.describe(), "all values are null")
        names = ", ".join(dict.fromkeys(type_name(t) for t in types))
        return Result(
            self.name, self.column, all(self._fits(t) for t in types), self.describe(), names
        )

    def describe(self) -> str:
        return f"column {self.column!r} has type {self.type}"


@dataclass(repr=False)
class NotNull(_ColumnCheck):
    """At most ``max_share`` of the values are null (NaN counts as null): 0 means none at all."""

    column: str | None
    max_share: float = 0.0
    name: ClassVar[str] = "not_null"

    def __post_init__(self) -> None:
        if not 0 <= self.max_share <= 1:
            raise InvalidInput(
                f"max_share for {self.column!r} must be between 0 and 1, got {self.max_share}"
            )

    def feed(self, state: Any, batch: pa.RecordBatch, offset: int) -> None:
        arr = self._column(batch)
        if arr is None:
            return
        state["present"] = True
        state["seen"] += len(arr)
        missing = pc.is_null(arr, nan_is_null=True)
        n = pc.sum(missing).as_py() or 0
        if n:
            state["bad"] += n
            need = MAX_EXAMPLES - len(state["examples"])
            if need > 0:
                idx = pc.indices_nonzero(missing).slice(0, need).to_pylist()
                state["examples"].extend({"row": offset + int(i), "value": None} for i in idx)

    def finish(self, state: Any, rows: int) -> Result:
        if not state.get("present"):
            return self._missing()
        bad, seen = state["bad"], state["seen"]
        share = bad / seen if seen else 0.0
        ok = bad == 0 if self.max_share == 0 else share <= self.max_share
        return Result(
            self.name,
            self.column,
            ok,
            self.describe(),
            f"{bad:,} nulls ({share:.2%})",
            unexpected_count=bad,
            unexpected_share=share,
            examples=state["examples"],
        )

    def describe(self) -> str:
        if self.max_share == 0:
            return f"column {self.column!r} has no nulls"
        return f"column {self.column!r} has at most {self.max_share:.2%} nulls"


def _epoch_us(arr: pa.Array) -> pa.Array:
    if pa.types.is_date(arr.type):
        arr = arr.cast(pa.timestamp("s"))
    if pa.types.is_timestamp(arr.type):
        return arr.cast(pa.timestamp("us", tz=arr.type.tz)).cast(pa.int64())
    raise TypeError


def _bound_us(v: Any, what: str) -> int:
    if isinstance(v, dt.datetime):
        return int((v if v.tzinfo else v.replace(tzinfo=dt.UTC)).timestamp() * 1_000_000)
    if isinstance(v, dt.date):
        return int(dt.datetime(v.year, v.month, v.day, tzinfo=dt.UTC).timestamp() * 1_000_000)
    return int(parse_time(str(v), what=what) * 1_000_000)


@dataclass(repr=False)
class Between(_ColumnCheck):
    """Every non-null value lies in [min, max] (either bound may be None); NaN never does.

    Works for numbers, and for dates and times when the bounds are dates or ISO-8601 strings.
    """

    column: str | None
    min: Any = None
    max: Any = None
    name: ClassVar[str] = "between"

    def __post_init__(self) -> None:
        if self.min is None and self.max is None:
            raise InvalidInput(f"between for {self.column!r} needs a min, a max or both")

    def bad_mask(self, arr: pa.Array) -> pa.Array:
        values: pa.Array = arr
        lo, hi = self.min, self.max
        if pa.types.is_timestamp(arr.type) or pa.types.is_date(arr.type):
            values = _epoch_us(arr)
            lo = None if lo is None else _bound_us(lo, "between min")
            hi = None if hi is None else _bound_us(hi, "between max")
        elif pa.types.is_decimal(arr.type):
            values = arr.cast(pa.float64())
        numeric = pa.types.is_integer(values.type) or pa.types.is_floating(values.type)
        if numeric and not all(
            b is None or (isinstance(b, int | float) and not isinstance(b, bool)) for b in (lo, hi)
        ):
            raise InvalidInput(
                f"between bounds for numeric column {self.column!r} must be numbers, got {self.min!r} and {self.max!r}"
            )
        try:
            ok: Any = None
            for bound, op in ((lo, pc.greater_equal), (hi, pc.less_equal)):
                if bound is not None:
                    test = op(values, bound)
                    ok = test if ok is None else pc.and_(ok, test)
        except (pa.ArrowException, TypeError) as exc:
            raise InvalidInput(
                f"cannot compare column {self.column!r} ({type_name(arr.type)}) with bounds "
                f"{self.min!r}..{self.max!r}: {exc}"
            ) from None
        if pa.types.is_floating(values.type):
            ok = pc.and_(ok, pc.invert(pc.is_nan(values)))
        return pc.invert(ok)

    def describe(self) -> str:
        if self.min is None:
            return f"column {self.column!r} values are at most {self.max}"
        if self.max is None:
            return f"column {self.column!r} values are at least {self.min}"
        return f"column {self.column!r} values are between {self.min} and {self.max}"


@dataclass(repr=False)
class InSet(_ColumnCheck):
    """Every non-null value is one of ``values``."""

    column: str | None
    values: Sequence[Any] = ()
    name: ClassVar[str] = "in_set"

    def __post_init__(self) -> None:
        self.values = list(self.values)
        if not self.values:
            raise InvalidInput(f"in_set for {self.column!r} needs at least one value")

    def bad_mask(self, arr: pa.Array) -> pa.Array:
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        try:
            allowed = pa.array(self.values).cast(arr.type)
            return pc.invert(pc.is_in(arr, value_set=allowed))
        except (pa.ArrowException, TypeError):
            # Mixed kinds (numbers listed for a text column or the reverse): compare as text.
            allowed = pa.array([str(v) for v in self.values])
            return pc.invert(pc.is_in(arr.cast(pa.string()), value_set=allowed))

    def describe(self) -> str:
        shown = ", ".join(repr(v) for v in list(self.values)[:10])
        more = f", … ({len(self.values)} values)" if len(self.values) > 10 else ""
        return f"column {self.column!r} values are in {{{shown}{more}}}"


@dataclass(repr=False)
class MatchesRegex(_ColumnCheck):
    """Every non-null value contains a match of ``pattern`` (RE2 syntax; anchor with ^…$ for a full match)."""

    column: str | None
    pattern: str = ""
    name: ClassVar[str] = "matches_regex"

    def __post_init__(self) -> None:
        try:
            re.compile(self.pattern)
            pc.match_substring_regex(pa.array(["probe"]), self.pattern)
        except (re.error, pa.ArrowInvalid) as exc:
            raise InvalidInput(
                f"invalid regex {self.pattern!r} for {self.column!r}: {exc} (RE2 syntax: no "
                "backreferences or lookarounds)"
            ) from None

    def bad_mask(self, arr: pa.Array) -> pa.Array:
        if type_name(arr.type) != "string":
            arr = arr.cast(pa.string())
        return pc.invert(pc.match_substring_regex(arr, self.pattern))

    def describe(self) -> str:
        return f"column {self.column!r} values match {self.pattern!r}"


@dataclass(repr=False)
class Unique(_ColumnCheck):
    """No non-null value occurs twice (checked on 64-bit hashes, confirmed on the values)."""

    column: str | None
    name: ClassVar[str] = "unique"

    def start(self) -> Any:
        return {"hashes": [], "seen": 0, "bad": 0, "examples": []}

    def feed(self, state: Any, batch: pa.RecordBatch, offset: int) -> None:
        arr = self._column(batch)
        if arr is None:
            return
        state["present"] = True
        valid = pc.drop_null(arr)
        state["seen"] += len(valid)
        if len(valid):
            state["hashes"].append(_hashes(valid))

    def finish(self, state: Any, rows: int) -> Result:
        if not state.get("present"):
            return self._missing()
        hashes = np.concatenate(state["hashes"]) if state["hashes"] else np.zeros(0, np.uint64)
        state["hashes"] = []
        uniq, counts = np.unique(hashes, return_counts=True)
        dup = uniq[counts > 1]
        bad = int(counts[counts > 1].sum() - dup.size)
        state["duplicated"] = dup
        seen = state["seen"]
        return Result(
            self.name,
            self.column,
            bad == 0,
            self.describe(),
            "all values distinct"
            if bad == 0
            else f"{bad:,} repeated values ({dup.size:,} distinct values repeat)",
            unexpected_count=bad,
            unexpected_share=bad / seen if seen else 0.0,
        )

    def examples(
        self, state: Any, batch: pa.RecordBatch, offset: int, out: list[dict[str, Any]]
    ) -> None:
        """Second pass: rows holding a repeated value (called only after a failure)."""
        arr = self._column(batch)
        if arr is None or len(out) >= MAX_EXAMPLES:
            return
        rows = pc.indices_nonzero(arr.is_valid()).to_numpy()
        valid = pc.drop_null(arr)
        hit = np.flatnonzero(np.isin(_hashes(valid), state["duplicated"]))
        for i in hit[: MAX_EXAMPLES - len(out)]:
            out.append({"row": offset + int(rows[i]), "value": _jsonable(valid[int(i)].as_py())})

    def describe(self) -> str:
        return f"column {self.column!r} values are unique"


def _hashes(arr: pa.Array) -> np.ndarray:
    """64-bit hashes; integers hash to themselves so equal numbers collide only when equal."""
    if pa.types.is_integer(arr.type) and arr.null_count == 0:
        return arr.cast(pa.int64(), safe=False).to_numpy().view(np.uint64)
    if pa.types.is_floating(arr.type) and arr.null_count == 0:
        # +0.0 and -0.0 are equal values: give them one hash.
        return (arr.cast(pa.float64()).to_numpy() + 0.0).view(np.uint64)
    return hash_values(arr.to_numpy(zero_copy_only=False))


@dataclass(repr=False)
class RowCount(Expectation):
    """The number of rows is within [min, max] (either may be None)."""

    min: int | None = None
    max: int | None = None
    column: str | None = field(default=None, init=False)
    name: ClassVar[str] = "row_count"

    def __post_init__(self) -> None:
        if self.min is None and self.max is None:
            raise InvalidInput("row_count needs a min, a max or both")

    def start(self) -> Any:
        return None

    def feed(self, state: Any, batch: pa.RecordBatch, offset: int) -> None:
        return None

    def finish(self, state: Any, rows: int) -> Result:
        ok = (self.min is None or rows >= self.min) and (self.max is None or rows <= self.max)
        return Result(self.name, None, ok, self.describe(), f"{rows:,} rows")

    def describe(self) -> str:
        if self.max is None:
            return f"at least {self.min:,} rows"
        if self.min is None:
            return f"at most {self.max:,} rows"
        return f"between {self.min:,} and {self.max:,} rows"


@dataclass(repr=False)
class Freshness(Expectation):
    """The newest value of a time column is at most ``max_age`` old (``24h``, ``7d``, seconds).

    Time columns are timestamps or dates (naive times are read as UTC), ISO-8601 strings, or
    numbers of seconds since the epoch. ``now`` fixes the reference time (tests, backfills).
    """

    column: str | None
    max_age: str | float = "24h"
    now: float | None = None
    name: ClassVar[str] = "freshness"

    def __post_init__(self) -> None:
        self._seconds = (
            float(self.max_age)
            if isinstance(self.max_age, int | float)
            else parse_duration(str(self.max_age), what="max_age")
        )

    def start(self) -> Any:
        return {"newest": None, "present": False}

    def feed(self, state: Any, batch: pa.RecordBatch, offset: int) -> None:
        i = batch.schema.get_field_index(self.column or "")
        if i < 0:
            return
        state["present"] = True
        arr = batch.column(i)
        if len(arr) == arr.null_count:
            return
        if pa.types.is_timestamp(arr.type) or pa.types.is_date(arr.type):
            newest = pc.max(_epoch_us(arr)).as_py() / 1e6
        elif pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
            newest = float(pc.max(arr).as_py())
        else:
            try:
                newest = pc.max(_epoch_us(pc.cast(arr, pa.timestamp("us")))).as_py() / 1e6
            except (pa.ArrowException, TypeError):
                raise InvalidInput(
                    f"freshness: column {self.column!r} ({type_name(arr.type)}) holds no times; use a "
                    "timestamp, date, ISO-8601 text or epoch-seconds column"
                ) from None
        state["newest"] = newest if state["newest"] is None else max(state["newest"], newest)

    def finish(self, state: Any, rows: int) -> Result:
        if not state["present"]:
            return _missing(self)
        newest = state["newest"]
        if newest is None:
            return Result(self.name, self.column, False, self.describe(), "no values")
        import time

        age = (self.now if self.now is not None else time.time()) - newest
        return Result(
            self.name,
            self.column,
            age <= self._seconds,
            self.describe(),
            f"newest value {iso(newest)} is {format_duration(max(age, 0.0))} old",
        )

    def describe(self) -> str:
        return f"newest {self.column!r} is at most {format_duration(self._seconds)} old"


def column_names(expectations: Iterable[Expectation]) -> list[str]:
    return list(dict.fromkeys(e.column for e in expectations if e.column))
