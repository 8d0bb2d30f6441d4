"""Table checks: a column is present, has a type; the table has a row count in range; the
newest time in a column is recent enough (freshness).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from flightlog.data.expectbase import Expectation, Result, missing
from flightlog.data.sources import type_name
from flightlog.data.valuechecks import epoch_us
from flightlog.errors import InvalidInput
from flightlog.timefmt import format_duration, iso, parse_duration

__all__ = ["ColumnPresent", "ColumnType", "RowCount", "Freshness", "TYPE_FAMILIES"]

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
            return missing(self)
        if not types:
            return Result(self.name, self.column, True, self.describe(), "all values are null")
        names = ", ".join(dict.fromkeys(type_name(t) for t in types))
        return Result(self.name, self.column, all(self._fits(t) for t in types), self.describe(), names)

    def describe(self) -> str:
        return f"column {self.column!r} has type {self.type}"


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
            newest = pc.max(epoch_us(arr)).as_py() / 1e6
        elif pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
            newest = float(pc.max(arr).as_py())
        else:
            newest = _newest_text_time(arr, self.column)
        state["newest"] = newest if state["newest"] is None else max(state["newest"], newest)

    def finish(self, state: Any, rows: int) -> Result:
        if not state["present"]:
            return missing(self)
        newest = state["newest"]
        if newest is None:
            return Result(self.name, self.column, False, self.describe(), "no values")

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


def _newest_text_time(arr: pa.Array, column: str | None) -> float:
    """The latest of ISO-8601 texts that may mix zone offsets and naive (UTC) times."""
    import pandas as pd

    if type_name(arr.type) == "string":
        parsed = pd.to_datetime(arr.to_pandas(), utc=True, format="ISO8601", errors="coerce")
        newest = parsed.max()
        if not pd.isna(newest):
            return float(newest.timestamp())
    raise InvalidInput(
        f"freshness: column {column!r} ({type_name(arr.type)}) holds no times; use a timestamp, "
        "date, ISO-8601 text or epoch-seconds column"
    )
