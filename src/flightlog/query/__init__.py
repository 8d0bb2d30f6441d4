"""The run filter and ordering language: parse it, compile it to SQL, or evaluate it in Python.

    params.lr > 0.01 and status = 'failed' and tags.team = 'vision'
    -metrics.acc,params.lr

The user guide is ``docs/filters.md``. Parsing is shared by every surface (``Client.runs``,
``flightlog runs ls``, the HTTP API, alerts) so the same text means the same runs everywhere.
"""

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
    OrderKey,
)
from flightlog.query.evaluate import matches
from flightlog.query.fields import COLUMNS, END_REASONS, STATUSES
from flightlog.query.parser import parse_filter, parse_order
from flightlog.query.sql import compile_filter, compile_runs_query

__all__ = [
    "parse_filter",
    "parse_order",
    "compile_filter",
    "compile_runs_query",
    "matches",
    "COLUMNS",
    "STATUSES",
    "END_REASONS",
    "Expr",
    "Field",
    "Ago",
    "Compare",
    "InList",
    "IsNull",
    "NumberTest",
    "And",
    "Or",
    "Not",
    "OrderKey",
]
