"""Compile a parsed filter and ordering to one SQL query over ``runs r``.

Why one compiler for every SQL store: the SQLite store and the PostgreSQL store must return
the same runs for the same filter. The SQL here is standard (EXISTS, LEFT JOIN, CASE, LOWER,
LIKE … ESCAPE, IS NOT TRUE) and only the placeholder style differs. User text never enters
the SQL: every value and key is a bound parameter.

Logic is two-valued, as users read it: a comparison is true only when the run has the field
(``exit_code != 0`` skips runs without an exit code) and ``not`` turns "unknown" into true.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.query.ast import (
    And,
    Compare,
    Expr,
    Field,
    InList,
    IsNull,
    Not,
    NumberTest,
    Or,
    OrderKey,
)
from flightlog.query.fields import COLUMNS
from flightlog.query.parser import parse_filter, parse_order
from flightlog.query.sqlparts import Binder, column_sql, predicate_sql

__all__ = ["compile_filter", "compile_runs_query"]

_MAX_LIMIT = 2**63 - 1  # "no limit" that SQLite and PostgreSQL both accept before an OFFSET
_TABLES = {"param": ("params", "key"), "tag": ("tags", "key"), "metric": ("metric_series", "name")}


def compile_filter(
    expr: str | Expr, *, now: float | None = None, placeholder: str = "?", first_index: int = 1
) -> tuple[str, list[Any]]:
    """A boolean SQL fragment over ``runs r`` and its bound values, for reuse in other queries.

    ``now`` fixes the clock for ``duration`` and relative times (``created > 7d``);
    ``first_index`` numbers the first ``$n`` placeholder when the fragment joins others.
    """
    tree = parse_filter(expr) if isinstance(expr, str) else expr
    bind = Binder(_now(now))
    sql = _expr(tree, bind)[0]
    return bind.finish(sql, placeholder, first_index)


def compile_runs_query(
    *,
    project: str | None,
    filter: str | None,
    order_by: str | None,
    limit: int | None,
    offset: int = 0,
    now: float | None = None,
    placeholder: str = "?",
) -> tuple[str, list[Any]]:
    """``SELECT r.* FROM runs r … WHERE … ORDER BY … LIMIT … OFFSET …`` and its bound values.

    Without ``order_by`` the newest runs come first. A blank filter or ordering means none.
    ``placeholder`` is ``?`` (sqlite3), ``%s`` (psycopg) or ``$`` (numbered ``$1``, asyncpg).
    Raises :class:`~flightlog.errors.FilterSyntaxError` for a bad filter or ordering and
    :class:`~flightlog.errors.InvalidInput` for a negative limit or offset.
    """
    for what, n in (("limit", limit), ("offset", offset)):
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise InvalidInput(f"{what} must be a whole number ≥ 0, not {n!r}")
    bind = Binder(_now(now))
    keys = parse_order(order_by) if order_by and order_by.strip() else ()
    joins, terms = _order(keys, bind)
    where = [] if project is None else [f"r.project = {bind(project)}"]
    if filter and filter.strip():
        where.append(_expr(parse_filter(filter), bind)[0])
    parts = ["SELECT r.* FROM runs r", *joins]
    if where:
        parts.append("WHERE " + " AND ".join(where))
    parts.append("ORDER BY " + ", ".join(terms))
    if limit is not None or offset:
        parts.append(f"LIMIT {bind(_MAX_LIMIT if limit is None else limit)}")
    if offset:
        parts.append(f"OFFSET {bind(offset)}")
    return bind.finish(" ".join(parts), placeholder)


def _now(now: float | None) -> float:
    return time.time() if now is None else now


def _expr(expr: Expr, bind: Binder) -> tuple[str, bool]:
    """SQL for one node and whether it can be NULL (only plain column comparisons can)."""
    if isinstance(expr, And | Or):
        parts = [_expr(e, bind) for e in expr.operands]
        glue = " AND " if isinstance(expr, And) else " OR "
        return "(" + glue.join(p for p, _ in parts) + ")", any(n for _, n in parts)
    if isinstance(expr, Not):
        inner, nullable = _expr(expr.operand, bind)
        return (f"(({inner}) IS NOT TRUE)" if nullable else f"NOT ({inner})"), False
    field = expr.field
    if field.kind == "column" and not isinstance(expr, NumberTest):  # the parser allows it on metrics only
        col = column_sql(field, bind)
        if isinstance(expr, IsNull):
            return f"{col} IS {'NOT ' if expr.negated else ''}NULL", False
        return predicate_sql(expr, col, bind), COLUMNS[field.name].nullable
    table, keycol = _TABLES[field.kind]
    alias = table[0]
    head = f"SELECT 1 FROM {table} {alias} WHERE {alias}.run_id = r.id AND {alias}.{keycol} = {bind(field.name)}"
    if isinstance(expr, NumberTest):
        return f"EXISTS ({head} AND {_number_test(expr, bind)})", False
    if isinstance(expr, IsNull):
        present = {"param": "p.kind <> 'null'", "tag": "t.value IS NOT NULL",
                   "metric": "m.last_value IS NOT NULL"}[field.kind]  # fmt: skip
        return f"{'' if expr.negated else 'NOT '}EXISTS ({head} AND {present})", False
    if field.kind == "param":
        cond = _param_condition(expr, bind)
    else:
        col = f"{alias}.value" if field.kind == "tag" else f"{alias}.last_value"
        cond = predicate_sql(expr, col, bind)
    return f"EXISTS ({head} AND {cond})", False


def _number_test(expr: NumberTest, bind: Binder) -> str:
    """The store keeps a NaN latest value as NULL (``store/sql/ingest.py``) and ±inf as itself;
    "finite" is written as a range so neither store needs an infinity literal."""
    col = "m.last_value"
    if expr.test == "nan":
        return f"{col} IS {'NOT ' if expr.negated else ''}NULL"
    top = sys.float_info.max
    if expr.negated:
        return f"({col} IS NULL OR {col} > {bind(top)} OR {col} < {bind(-top)})"
    return f"{col} >= {bind(-top)} AND {col} <= {bind(top)}"


def _param_condition(expr: Compare | InList, bind: Binder) -> str:
    """Numbers compare ``p.num`` (a non-numeric param never matches); text, booleans and
    patterns compare the display text ``p.value`` of a param that is not None."""
    if isinstance(expr, Compare):
        if _numeric(expr.value) and expr.op not in ("like", "not like", "~", "!~"):
            return predicate_sql(expr, "p.num", bind)
        value = _text(expr.value)
        return "p.kind <> 'null' AND " + predicate_sql(Compare(expr.field, expr.op, value), "p.value", bind)
    nums = tuple(v for v in expr.values if _numeric(v))
    texts = tuple(_text(v) for v in expr.values if not _numeric(v))
    parts = [predicate_sql(InList(expr.field, vs, expr.negated), col, bind)
             for vs, col in ((nums, "p.num"), (texts, "p.value")) if vs]  # fmt: skip
    if expr.negated:  # x not in (a, b) == x != a and x != b
        return "p.kind <> 'null' AND " + " AND ".join(parts)
    return "p.kind <> 'null' AND (" + " OR ".join(parts) + ")"


def _numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _order(keys: tuple[OrderKey, ...], bind: Binder) -> tuple[list[str], list[str]]:
    """LEFT JOINs and ORDER BY terms: missing values last in both directions, numeric params
    before text ones, then ``r.created DESC, r.id DESC`` so pages stay stable."""
    joins: list[str] = []
    terms: list[str] = []
    for i, key in enumerate(keys):
        d = " DESC" if key.descending else " ASC"
        field: Field = key.field
        if field.kind == "column":
            if COLUMNS[field.name].nullable and field.name == "duration":  # an expression: no index gives it
                terms.append(f"CASE WHEN {column_sql(field, bind)} IS NULL THEN 1 ELSE 0 END")
                terms.append(column_sql(field, bind) + d)
            else:
                # a stored column: NULLS LAST rather than a CASE before it, the same order but one
                # an index gives (SQLite 3.30+, PostgreSQL): the runs page's `-created` reads 100
                # rows of an index instead of sorting every run of the project
                terms.append(column_sql(field, bind) + d + (" NULLS LAST" if COLUMNS[field.name].nullable else ""))
            continue
        table, keycol = _TABLES[field.kind]
        a = f"o{i}"
        extra = f" AND {a}.kind <> 'null'" if field.kind == "param" else ""
        joins.append(f"LEFT JOIN {table} {a} ON {a}.run_id = r.id AND {a}.{keycol} = {bind(field.name)}{extra}")
        if field.kind == "param":
            terms += [f"CASE WHEN {a}.key IS NULL THEN 1 ELSE 0 END",
                      f"CASE WHEN {a}.num IS NULL THEN 1 ELSE 0 END", f"{a}.num{d}", f"{a}.value{d}"]  # fmt: skip
        else:
            col = f"{a}.value" if field.kind == "tag" else f"{a}.last_value"
            terms += [f"CASE WHEN {col} IS NULL THEN 1 ELSE 0 END", col + d]
    return joins, [*terms, "r.created DESC", "r.id DESC"]
