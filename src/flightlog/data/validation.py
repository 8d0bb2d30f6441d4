"""Validation gates: run a suite of expectations over data in one streaming pass.

``validate(data, suite)`` returns a :class:`Validation`; its ``success`` is what a pipeline
gates on (``flightlog data validate`` exits 1 when it is False), ``to_dict()`` is what is
stored on the run as evidence kind ``validation`` (a failed validation is a ``data_error`` for
diagnosis). Examples of offending values are kept for every failed check, except in columns
marked sensitive, where the row numbers are kept and the values are replaced by
``<redacted>``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from flightlog.data import progress
from flightlog.data.expectations import REDACTED, Expectation, Result, Unique
from flightlog.data.sources import open_source, scan
from flightlog.errors import InvalidInput
from flightlog.timefmt import iso

__all__ = ["Suite", "Validation", "validate"]


@dataclass
class Suite:
    """Expectations plus the columns whose values must never be shown."""

    expectations: list[Expectation] = field(default_factory=list)
    sensitive: set[str] = field(default_factory=set)
    source: str | None = None

    def __post_init__(self) -> None:
        self.expectations = list(self.expectations)
        self.sensitive = set(self.sensitive)
        for e in self.expectations:
            if not isinstance(e, Expectation):
                raise InvalidInput(f"not an expectation: {e!r} (use the classes in flightlog.data.expectations)")

    def __iter__(self) -> Any:
        return iter(self.expectations)

    def __len__(self) -> int:
        return len(self.expectations)


@dataclass
class Validation:
    """The outcome of a suite on one data source."""

    source: str
    row_count: int
    results: list[Result]
    time: float
    suite: str | None = None

    @property
    def success(self) -> bool:
        return all(r.success for r in self.results)

    @property
    def failed(self) -> list[Result]:
        return [r for r in self.results if not r.success]

    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self.success,
            "source": self.source,
            "suite": self.suite,
            "time": iso(self.time),
            "row_count": self.row_count,
            "evaluated": len(self.results),
            "passed": len(self.results) - len(self.failed),
            "failed": len(self.failed),
            "results": [r.to_dict() for r in self.results],
        }


class _State:
    def __init__(self, expectations: Sequence[Expectation]) -> None:
        self.expectations = expectations
        self.states = [e.start() for e in expectations]
        self.rows = 0

    def feed(self, batch: pa.RecordBatch) -> None:
        for e, s in zip(self.expectations, self.states, strict=True):
            e.feed(s, batch, self.rows)
        self.rows += batch.num_rows


def validate(
    data: Any,
    expectations: Suite | Iterable[Expectation] | str | os.PathLike[str],
    *,
    sensitive: Iterable[str] = (),
    show_progress: bool | None = None,
) -> Validation:
    """Check ``data`` (anything :func:`flightlog.data.profile` accepts) against expectations.

    ``expectations`` is a :class:`Suite`, a list of expectations, or the path of a YAML or
    Python expectation file. ``sensitive`` adds columns whose values are redacted.
    """
    if isinstance(expectations, str | os.PathLike):
        from flightlog.data.expectfile import load_expectations

        suite = load_expectations(expectations)
    elif isinstance(expectations, Suite):
        suite = expectations
    else:
        suite = Suite(list(expectations))
    hidden = suite.sensitive | set(sensitive)
    source = open_source(data)
    exps = suite.expectations
    with progress.task(f"validating {source.name}", total=source.size_bytes, enabled=show_progress) as bar:
        state = scan(
            source,
            lambda: _State(exps),
            _State.feed,
            on_progress=lambda n: bar.update(source.position(), n),
        )
        results = [e.finish(s, state.rows) for e, s in zip(exps, state.states, strict=True)]
        _unique_examples(source, exps, state.states, results)
    for r in results:
        if r.column in hidden and r.examples:
            r.examples = [{**ex, "value": REDACTED} for ex in r.examples]
            r.redacted = True
    return Validation(source.name, state.rows, results, time.time(), suite.source)


def _unique_examples(source: Any, exps: Sequence[Expectation], states: list[Any], results: list[Result]) -> None:
    """A second pass, only for failed uniqueness checks, to show rows with repeated values."""
    todo: list[tuple[Unique, Any, Result]] = [
        (e, s, r) for e, s, r in zip(exps, states, results, strict=True) if isinstance(e, Unique) and not r.success
    ]
    if not todo:
        return
    offset = 0
    for batch in source.batches():
        for e, s, r in todo:
            e.examples(s, batch, offset, r.examples)
        offset += batch.num_rows
        if all(len(r.examples) >= 5 for _, _, r in todo):
            break
