"""The small SQL pieces the compiler assembles: bound values, columns, single comparisons.

Why markers: pieces are built out of textual order (the ORDER BY joins come before WHERE), so
each value first gets a private marker, and :meth:`Binder.finish` numbers the placeholders in
the order they finally appear. Markers are generated here, never taken from user text.
"""

from __future__ import annotations

import re
from typing import Any

from flightlog.query.ast import Ago, Compare, Field, InList, Value
from flightlog.query.fields import COLUMNS

__all__ = ["Binder", "column_sql", "predicate_sql", "like_contains"]

_MARKER = re.compile(r"\x00(\d+)\x00")
_ESCAPE = " ESCAPE '\\'"
_SQL_OPS = {"=": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class Binder:
    """Collects bound values; ``bind(value)`` returns a marker to put in the SQL text."""

    def __init__(self, now: float) -> None:
        self.now = now
        self._values: list[Any] = []

    def __call__(self, value: Value | float | None) -> str:
        if isinstance(value, Ago):
            value = self.now - value.seconds
        self._values.append(value)
        return f"\x00{len(self._values) - 1}\x00"

    def finish(self, sql: str, placeholder: str, first_index: int = 1) -> tuple[str, list[Any]]:
        """Replace markers by ``?``, ``%s`` or numbered ``$n``, values in textual order."""
        if placeholder not in ("?", "%s", "$"):
            raise ValueError(f"placeholder must be '?', '%s' or '$' (numbered), not {placeholder!r}")
        ordered: list[Any] = []

        def place(m: re.Match[str]) -> str:
            ordered.append(self._values[int(m.group(1))])
            return f"${first_index + len(ordered) - 1}" if placeholder == "$" else placeholder

        return _MARKER.sub(place, sql), ordered


def like_contains(text: str) -> str:
    """The LIKE pattern (escape ``\\``) that matches any text containing ``text``."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def column_sql(field: Field, bind: Binder) -> str:
    """``r.<column>``; ``duration`` is seconds from start to end, or to now while running."""
    if field.name == "duration":
        return f"(COALESCE(r.ended, {bind(bind.now)}) - r.started)"
    return "r." + COLUMNS[field.name].sql


def predicate_sql(expr: Compare | InList, col: str, bind: Binder) -> str:
    """One comparison of ``col``; LIKE and ``~`` fold case on both sides (ASCII in SQLite)."""
    if isinstance(expr, InList):
        marks = ", ".join(bind(v) for v in expr.values)
        return f"{col} {'NOT IN' if expr.negated else 'IN'} ({marks})"
    op = expr.op
    if op in _SQL_OPS:
        return f"{col} {_SQL_OPS[op]} {bind(expr.value)}"
    pattern = str(expr.value) if op in ("like", "not like") else like_contains(str(expr.value))
    like = f"LOWER({col}) LIKE LOWER({bind(pattern)}){_ESCAPE}"
    return f"NOT ({like})" if op in ("not like", "!~") else like
