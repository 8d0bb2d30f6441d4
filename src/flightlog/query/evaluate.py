"""Evaluate a filter against one run held in memory, with exactly the SQL semantics.

Why: alerts and live streams see runs change one event at a time and must decide whether a
run matches without a query. ``matches`` agrees with :func:`~flightlog.query.compile_filter`
on the SQLite store (the tests check this on generated filters): two-valued logic, numbers
compare a param's number, text its display text (as :func:`flightlog.schema.values.param_columns`
writes them), LIKE and ``~`` fold ASCII case.
"""

from __future__ import annotations

import math
import operator
import time
from collections.abc import Callable, Mapping
from typing import Any

from flightlog.query.ast import (
    Ago,
    And,
    Compare,
    Expr,
    Field,
    InList,
    IsNull,
    Not,
    NumberTest,
    Or,
    Value,
)
from flightlog.query.fields import COLUMNS
from flightlog.query.like import ascii_lower, like_match
from flightlog.query.parser import parse_filter
from flightlog.query.sqlparts import like_contains
from flightlog.schema.values import param_columns
from flightlog.timefmt import parse_time

__all__ = ["matches", "flatten_params"]

_CMP: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge,
}  # fmt: skip
_MISSING = object()


def flatten_params(params: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"optimizer": {"lr": 0.1}}`` → ``{"optimizer.lr": 0.1}`` (flat keys pass through)."""
    flat: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten_params(value, name + "."))
        else:
            flat[name] = value
    return flat


def matches(expr: str | Expr, run: Mapping[str, Any], *, now: float | None = None) -> bool:
    """Whether ``run`` satisfies the filter. ``run`` has the columns of ``runs`` (``id``,
    ``status``, ``created`` … as epoch seconds or ISO text) plus ``params`` (nested or
    flattened), ``tags`` and ``metrics`` (name → latest value) mappings."""
    tree = parse_filter(expr) if isinstance(expr, str) else expr
    return _eval(tree, _Run(run, time.time() if now is None else now))


class _Run:
    def __init__(self, run: Mapping[str, Any], now: float) -> None:
        self.run = run
        self.now = now
        self.params = flatten_params(run.get("params") or {})

    def get(self, field: Field) -> Any:
        """The field's value, or ``_MISSING`` when SQL would see no row / NULL."""
        name = field.name
        if field.kind == "param":
            value = self.params.get(name)
            return _MISSING if value is None else value
        if field.kind == "tag":
            value = (self.run.get("tags") or {}).get(name)
            return _MISSING if value is None else str(value)
        if field.kind == "metric":
            value = (self.run.get("metrics") or {}).get(name)
            if isinstance(value, Mapping):
                value = value.get("last_value")
            return _MISSING if value is None or math.isnan(value) else float(value)
        column = COLUMNS[name]
        value = self.run.get(column.sql, self.run.get(name) if name == "parent" else None)
        if value is None:
            return _MISSING
        if column.type in ("time", "duration") and isinstance(value, str):
            value = parse_time(value)
        if name == "duration":
            ended = self.run.get("ended")
            ended = parse_time(ended) if isinstance(ended, str) else ended
            return (self.now if ended is None else ended) - value
        return value

    def value(self, v: Value) -> Any:
        return self.now - v.seconds if isinstance(v, Ago) else v


def _eval(expr: Expr, run: _Run) -> bool:
    if isinstance(expr, And):
        return all(_eval(e, run) for e in expr.operands)
    if isinstance(expr, Or):
        return any(_eval(e, run) for e in expr.operands)
    if isinstance(expr, Not):
        return not _eval(expr.operand, run)
    if isinstance(expr, NumberTest):
        return _number_test(expr, run)
    actual = run.get(expr.field)
    if isinstance(expr, IsNull):
        return (actual is _MISSING) != expr.negated
    if actual is _MISSING:
        return False
    if expr.field.kind == "param":
        return _param(expr, actual)
    if isinstance(expr, InList):
        found = any(actual == run.value(v) for v in expr.values)
        return found != expr.negated
    return _compare(actual, expr.op, run.value(expr.value))


def _number_test(expr: NumberTest, run: _Run) -> bool:
    """``is nan`` / ``is finite`` on the latest value of a metric the run logged; a metric
    present with no value (``None``, how the store hands back a NaN) is NaN."""
    metrics = run.run.get("metrics") or {}
    if expr.field.name not in metrics:
        return False
    value = metrics[expr.field.name]
    if isinstance(value, Mapping):
        value = value.get("last_value")
    value = math.nan if value is None else float(value)
    found = math.isnan(value) if expr.test == "nan" else math.isfinite(value)
    return found != expr.negated


def _param(expr: Compare | InList, raw: Any) -> bool:
    text, num, _ = param_columns(raw)  # exactly what the store writes
    num = None if num is not None and math.isnan(num) else num  # SQLite keeps NaN as NULL
    if isinstance(expr, InList):
        tests = [Compare(expr.field, "!=" if expr.negated else "=", v) for v in expr.values]
        results = [_param(t, raw) for t in tests]
        return all(results) if expr.negated else any(results)
    value = expr.value
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if numeric and expr.op in _CMP:
        return num is not None and _CMP[expr.op](num, value)
    as_text = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return _compare(text, expr.op, as_text)


def _compare(actual: Any, op: str, value: Any) -> bool:
    if op in _CMP:
        return _CMP[op](actual, value)
    pattern = value if op in ("like", "not like") else like_contains(value)
    found = _like(str(actual), pattern)
    return not found if op in ("not like", "!~") else found


def _like(text: str, pattern: str) -> bool:
    """SQL ``LOWER(text) LIKE LOWER(pattern) ESCAPE '\\'`` as SQLite computes it, in linear time (like.py)."""
    return like_match(ascii_lower(text), ascii_lower(pattern), escape="\\")
