"""Value checks: every non-null value of a column must pass (not null, between, in a set,
matching a regex, unique). Offending values are counted and the first rows kept as examples.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flightlog.data.expectbase import MAX_EXAMPLES, ColumnCheck, Result, jsonable
from flightlog.data.sketch import hash_values
from flightlog.data.sources import type_name
from flightlog.errors import InvalidInput
from flightlog.timefmt import parse_time

__all__ = ["NotNull", "Between", "InSet", "MatchesRegex", "Unique", "epoch_us"]


@dataclass(repr=False)
class NotNull(ColumnCheck):
    """At most ``max_share`` of the values are null (NaN counts as null): 0 means none at all."""

    column: str | None
    max_share: float = 0.0
    name: ClassVar[str] = "not_null"

    def __post_init__(self) -> None:
        if not 0 <= self.max_share <= 1:
            raise InvalidInput(f"max_share for {self.column!r} must be between 0 and 1, got {self.max_share}")

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


def epoch_us(arr: pa.Array) -> pa.Array:
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
class Between(ColumnCheck):
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
            values = epoch_us(arr)
            lo = None if lo is None else _bound_us(lo, "between min")
            hi = None if hi is None else _bound_us(hi, "between max")
        elif pa.types.is_decimal(arr.type):
            values = arr.cast(pa.float64())
        numeric = pa.types.is_integer(values.type) or pa.types.is_floating(values.type)
        if numeric and not all(b is None or (isinstance(b, int | float) and not isinstance(b, bool)) for b in (lo, hi)):
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
class InSet(ColumnCheck):
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
class MatchesRegex(ColumnCheck):
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
        return f"column {self.column!r} values match the regex {self.pattern}"


@dataclass(repr=False)
class Unique(ColumnCheck):
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
            else f"{bad:,} duplicate{'s' if bad != 1 else ''} of {dup.size:,} value{'s' if dup.size != 1 else ''}",
            unexpected_count=bad,
            unexpected_share=bad / seen if seen else 0.0,
        )

    def examples(self, state: Any, batch: pa.RecordBatch, offset: int, out: list[dict[str, Any]]) -> None:
        """Second pass: rows holding a repeated value (called only after a failure)."""
        arr = self._column(batch)
        if arr is None or len(out) >= MAX_EXAMPLES:
            return
        rows = pc.indices_nonzero(arr.is_valid()).to_numpy()
        valid = pc.drop_null(arr)
        hit = np.flatnonzero(np.isin(_hashes(valid), state["duplicated"]))
        for i in hit[: MAX_EXAMPLES - len(out)]:
            out.append({"row": offset + int(rows[i]), "value": jsonable(valid[int(i)].as_py())})

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
