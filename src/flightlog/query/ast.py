"""The typed syntax tree of a run filter and of an ordering.

Why a tree of frozen dataclasses: the parser checks every field and literal once, so the SQL
compiler and the pure-Python evaluator only walk already-valid, hashable nodes; a parsed
filter can be cached and shared between threads.

Values in the tree are already converted for their field: numbers are ``int``/``float``,
times are epoch seconds or :class:`Ago`, durations are seconds, text is ``str``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

__all__ = [
    "FieldKind",
    "Field",
    "Ago",
    "Value",
    "CompareOp",
    "Compare",
    "InList",
    "IsNull",
    "NumberTest",
    "And",
    "Or",
    "Not",
    "Expr",
    "OrderKey",
]

FieldKind = Literal["column", "param", "tag", "metric"]
CompareOp = Literal["=", "!=", "<", "<=", ">", ">=", "like", "not like", "~", "!~"]


@dataclass(frozen=True, slots=True)
class Field:
    """A column of the run (``kind="column"``, ``name`` one of :data:`COLUMNS`) or a key of
    its params, tags or metrics (``name`` is the key, dots and all: ``optimizer.lr``)."""

    kind: FieldKind
    name: str
    position: int = field(default=0, compare=False)

    def __str__(self) -> str:
        if self.kind == "column":
            return self.name
        plain = re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_/\-]*(?:\.[A-Za-z0-9_][A-Za-z0-9_/\-]*)*", self.name)
        key = self.name if plain else "`" + self.name.replace("\\", "\\\\").replace("`", "\\`") + "`"
        return f"{self.kind}s.{key}"


@dataclass(frozen=True, slots=True)
class Ago:
    """A time given relative to now (``created > 7d``): ``now - seconds`` when evaluated.
    Kept symbolic so a parsed filter stays valid while time passes."""

    seconds: float


Value: TypeAlias = str | int | float | bool | Ago


@dataclass(frozen=True, slots=True)
class Compare:
    """``field op value``; true only when the run has the field (``!=`` included)."""

    field: Field
    op: CompareOp
    value: Value


@dataclass(frozen=True, slots=True)
class InList:
    """``field in (…)`` or, with ``negated``, ``field not in (…)`` (the field must exist)."""

    field: Field
    values: tuple[Value, ...]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class IsNull:
    """``field is null`` (the run has no value for it) or ``is not null``."""

    field: Field
    negated: bool = False


@dataclass(frozen=True, slots=True)
class NumberTest:
    """``metrics.x is nan`` (``test="nan"``) or ``metrics.x is finite`` (``test="finite"``:
    neither NaN nor ±inf), ``negated`` for ``is not nan`` / ``is not finite``.

    Why its own node and not a comparison: NaN equals nothing, so no value in a
    :class:`Compare` can find it. Like every comparison it is true only when the run logged
    the metric, and it tests the latest value, as ``metrics.x > 1`` does.
    """

    field: Field
    test: Literal["nan", "finite"]
    negated: bool = False


@dataclass(frozen=True, slots=True)
class And:
    operands: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """Logical negation; two-valued: a run lacking the field satisfies ``not (field = x)``."""

    operand: Expr


Expr: TypeAlias = Compare | InList | IsNull | NumberTest | And | Or | Not


@dataclass(frozen=True, slots=True)
class OrderKey:
    """One ordering key; runs without a value for it come last in both directions."""

    field: Field
    descending: bool = False
