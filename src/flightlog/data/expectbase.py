"""The shared vocabulary of expectations: the :class:`Expectation` protocol and its :class:`Result`.

Each expectation is a small object with three steps — ``start()`` makes its state,
``feed(state, batch, offset)`` looks at one record batch, ``finish(state, rows)`` turns the
state into a :class:`Result` — so a whole suite is checked in one streaming pass over a file
of any size. Value checks (:mod:`flightlog.data.valuechecks`) share :class:`ColumnCheck`,
which counts offending values and keeps the first few rows; table checks live in
:mod:`flightlog.data.tablechecks`.
"""

from __future__ import annotations

import abc
import datetime as dt
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc

from flightlog.timefmt import iso

__all__ = [
    "Expectation",
    "Result",
    "ColumnCheck",
    "REDACTED",
    "MAX_EXAMPLES",
    "jsonable",
    "missing",
    "column_names",
]

REDACTED = "<redacted>"
MAX_EXAMPLES = 5


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


def jsonable(v: Any) -> Any:
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


class Expectation(abc.ABC):
    """Base: one assumption. Subclasses set ``name`` and implement the three steps."""

    name: ClassVar[str] = "expectation"
    column: str | None
    #: Set for the checks of a column declared ``present: false``: absent, they pass.
    optional = False

    def start(self) -> Any:
        return {"bad": 0, "seen": 0, "examples": []}

    @abc.abstractmethod
    def feed(self, state: Any, batch: pa.RecordBatch, offset: int) -> None:
        """Implemented by each subclass."""

    @abc.abstractmethod
    def finish(self, state: Any, rows: int) -> Result:
        """Implemented by each subclass."""

    @abc.abstractmethod
    def describe(self) -> str:
        """Implemented by each subclass."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


def missing(e: Expectation) -> Result:
    if e.optional:
        return Result(e.name, e.column, True, e.describe(), f"column {e.column!r} is absent (optional)")
    return Result(e.name, e.column, False, e.describe(), f"column {e.column!r} is missing")


class ColumnCheck(Expectation):
    """A check of each value of one column: counts offenders and keeps the first few rows."""

    def _column(self, batch: pa.RecordBatch) -> pa.Array | None:
        i = batch.schema.get_field_index(self.column or "")
        return batch.column(i) if i >= 0 else None

    def bad_mask(self, arr: pa.Array) -> pa.Array:
        """Which values offend (true: bad); checks that look at whole batches override `feed` instead."""
        raise TypeError(f"{type(self).__name__} defines neither bad_mask nor feed")

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
                    {"row": offset + int(i), "value": jsonable(v)} for i, v in zip(idx.to_pylist(), values, strict=True)
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
        return missing(self)


def column_names(expectations: Iterable[Expectation]) -> list[str]:
    return list(dict.fromkeys(e.column for e in expectations if e.column))
