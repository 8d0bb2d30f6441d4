"""What can be filtered and ordered on, and how each literal becomes a value of its field.

Why a catalog: the parser, the SQL compiler and the Python evaluator must agree on the same
fields and conversions; keeping them here means adding a column touches one table.
"""

from __future__ import annotations

import difflib
import re
import signal
from dataclasses import dataclass
from typing import Literal, NoReturn, cast

from flightlog.errors import FilterSyntaxError, InvalidInput
from flightlog.query.ast import Ago, Field, FieldKind, Value
from flightlog.query.lexer import Token
from flightlog.statuses import STATUSES
from flightlog.timefmt import parse_duration, parse_time

__all__ = ["ColumnType", "Column", "COLUMNS", "PREFIXES", "STATUSES", "END_REASONS"]

ColumnType = Literal["text", "enum", "int", "time", "duration"]


@dataclass(frozen=True, slots=True)
class Column:
    sql: str  # column of ``runs`` (``duration`` is computed from started/ended)
    type: ColumnType
    nullable: bool = True


COLUMNS: dict[str, Column] = {
    "id": Column("id", "text", nullable=False),
    "name": Column("name", "text"),
    "project": Column("project", "text", nullable=False),
    "status": Column("status", "enum", nullable=False),
    "end_reason": Column("end_reason", "enum"),
    "parent": Column("parent_id", "text"),
    "created": Column("created", "time"),
    "queued": Column("queued", "time"),
    "started": Column("started", "time"),
    "ended": Column("ended", "time"),
    "duration": Column("started", "duration"),
    "attempt": Column("attempt", "int", nullable=False),
    "exit_code": Column("exit_code", "int"),
    "signal": Column("signal", "int"),
    "host": Column("host", "text"),
}
PREFIXES: dict[str, FieldKind] = {
    "params": "param", "param": "param", "tags": "tag", "tag": "tag",
    "metrics": "metric", "metric": "metric",
}  # fmt: skip
END_REASONS = ("exit", "exception", "oom_killed", "timeout", "signal", "lost", "rerun")
_ENUMS = {"status": STATUSES, "end_reason": END_REASONS}
_NUMERIC = re.compile(r"\s*-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*")
_ORDERING = {"<", "<=", ">", ">="}
_PATTERN_OPS = {"like", "not like", "~", "!~"}
VALID_FIELDS = ", ".join(COLUMNS) + ", params.<key>, tags.<key>, metrics.<name>"
MAX_NEEDLE = 200
"""Longest ``~`` text or ``like`` pattern: matching costs its length times every value's length."""
MAX_WILDCARDS = 10
"""Most ``%`` in one ``like`` pattern (each one multiplies what SQLite may try)."""


def resolve_field(token: Token, text: str) -> Field:
    """A ``word`` or ``path`` token → :class:`Field`, or an error naming every valid field."""
    if token.kind == "word":
        word = str(token.value).lower()
        if word in COLUMNS:
            return Field("column", word, token.position)
        if word in PREFIXES:
            _fail(text, token, f"{token.text!r} needs a key", f"{word}.<key>, e.g. {word}.lr")
        hint = difflib.get_close_matches(word, list(COLUMNS), n=1)
        guess = f" (did you mean {hint[0]!r}?)" if hint else f" (did you mean params.{word}?)"
        _fail(text, token, f"unknown field {token.text!r}{guess}", f"a field: {VALID_FIELDS}")
    if token.kind == "path":
        prefix, key = cast(tuple[str, str], token.value)
        kind = PREFIXES.get(prefix.lower())
        if kind is not None:
            return Field(kind, key, token.position)
        what = f"unknown field {token.text!r}" if prefix else f"key {token.text} without a prefix"
        _fail(text, token, what, f"a field: {VALID_FIELDS}")
    shown = "the end" if token.kind == "eof" else repr(token.text)
    _fail(text, token, f"found {shown} where a field belongs", f"a field: {VALID_FIELDS}")


def check_operator(field: Field, op: str, token: Token, text: str) -> None:
    """Refuse operators that make no sense for the field, saying which ones do."""
    kind = _value_kind(field)
    if kind == "text" and op in _ORDERING:
        _fail(text, token, f"{field} is text and cannot be compared with {op}",
              "=, !=, in, like, ~ or is null")  # fmt: skip
    if kind == "number" and op in _PATTERN_OPS:
        _fail(text, token, f"{field} is a number and cannot be matched with {op}",
              "=, !=, <, <=, >, >=, in or is null")  # fmt: skip


def check_number_test(field: Field, token: Token, text: str) -> None:
    """Refuse ``is nan`` / ``is finite`` on anything but a metric, saying what to write.

    Why metrics only: a metric point is the one number flightlog keeps NaN and ±inf for (and
    flags); a param logged as NaN is stored as its text ``'nan'``, and columns and tags are
    never NaN, so the test there would be a silent "never".
    """
    if field.kind == "metric":
        return
    word = token.text.lower()
    if field.kind == "param":
        _fail(text, token, f"is {word} tests metrics only, not {field} (a param logged as NaN "
              "or inf is kept as its text: 'nan', 'inf')",
              f"{field} = 'nan', or metrics.<name> is {word}")  # fmt: skip
    what = "a tag (text)" if field.kind == "tag" else "a column of the run"
    _fail(text, token, f"is {word} tests metrics only; {field} is {what} and never NaN",
          f"metrics.<name> is {word}, e.g. metrics.loss is {word}")  # fmt: skip


def convert(field: Field, op: str, token: Token, text: str) -> Value:
    """Convert one literal token to the value compared with ``field`` under ``op``."""
    if token.kind == "word" and token.text.lower() in ("nan", "inf", "infinity"):
        hint = (
            f"{field} = '{token.text.lower()}' (a param keeps NaN as text)"
            if field.kind == "param"
            else f"{field} is nan or {field} is not finite"
            if field.kind == "metric"
            else "a value"
        )
        _fail(text, token, f"{token.text} is not a value to compare with (NaN equals nothing)", hint)
    if token.kind not in ("string", "number", "duration") and not _is_bool(token):
        shown = "the end" if token.kind == "eof" else repr(token.text)
        _fail(text, token, f"missing value after {op}: found {shown}",
              "a value: 'text', a number, true, false, null or a duration such as 30m")  # fmt: skip
    if op in _PATTERN_OPS:
        if token.kind != "string":
            _fail(text, token, f"{op} needs a quoted pattern", "a string, e.g. 'resnet%'")
        pattern = str(token.value)
        if len(pattern) > MAX_NEEDLE:
            _fail(text, token, f"the {op} pattern is too long ({len(pattern)} characters; at most {MAX_NEEDLE})",
                  "a shorter pattern")  # fmt: skip
        if op in ("like", "not like") and pattern.count("%") > MAX_WILDCARDS:
            _fail(text, token, f"the like pattern has {pattern.count('%')} % wildcards (at most {MAX_WILDCARDS})",
                  "fewer % wildcards")  # fmt: skip
        if op in ("like", "not like") and re.search(r"(?<!\\)(?:\\\\)*\\$", pattern):
            _fail(text, token, "like pattern ends with a lone backslash", "\\\\ for a backslash")
        return pattern
    boolean = _is_bool(token)
    if field.kind == "tag" or (field.kind == "column" and COLUMNS[field.name].type == "text"):
        if token.kind == "string":
            return str(token.value)
        return token.text.lower() if boolean else token.text  # text fields: as written
    if field.kind == "column" and COLUMNS[field.name].type == "enum":
        return _enum(field, token, text)
    if boolean:
        if field.kind == "param" and op not in _ORDERING:
            return token.text.lower() == "true"
        _fail(text, token, f"{field} cannot be compared with {token.text}", "a number")
    column = COLUMNS[field.name].type if field.kind == "column" else None
    if column == "time":
        return _time(token, text)
    if column == "duration" or token.kind == "duration":
        return _duration(field, token, text)
    if token.kind == "number":
        return token.value  # type: ignore[return-value]
    value = str(token.value)
    if field.kind == "param" and op not in _ORDERING:
        return value
    if _NUMERIC.fullmatch(value):
        return float(value)
    if field.name == "signal" and field.kind == "column":
        return _signal(token, text)
    _fail(text, token, f"{field} is compared as a number, not {token.text}", "a number, e.g. 0.01")


def _value_kind(field: Field) -> Literal["text", "number", "any"]:
    if field.kind == "param":
        return "any"
    if field.kind == "tag":
        return "text"
    if field.kind == "metric":
        return "number"
    return "text" if COLUMNS[field.name].type in ("text", "enum") else "number"


def _is_bool(token: Token) -> bool:
    return token.kind == "word" and token.text.lower() in ("true", "false")


def _enum(field: Field, token: Token, text: str) -> str:
    choices = _ENUMS[field.name]
    value = (str(token.value) if token.kind == "string" else token.text).lower()
    if value not in choices:
        _fail(text, token, f"unknown {field.name} {token.text}", "one of " + ", ".join(choices))
    return value


def _time(token: Token, text: str) -> Value:
    if token.kind == "number":
        return float(token.value)  # type: ignore[arg-type]
    if token.kind == "duration":
        return Ago(float(token.value))  # type: ignore[arg-type]
    try:
        return Ago(parse_duration(str(token.value)))
    except InvalidInput:
        pass
    try:
        return parse_time(str(token.value))
    except InvalidInput:
        _fail(text, token, f"invalid time {token.text}",
              "an ISO-8601 time such as '2026-11-30' or '2026-11-30T12:00:00Z', "
              "or a duration ago such as 7d")  # fmt: skip


def _duration(field: Field, token: Token, text: str) -> float:
    if token.kind != "string":
        return float(token.value)  # type: ignore[arg-type]
    try:
        return parse_duration(str(token.value))
    except InvalidInput:
        _fail(text, token, f"invalid duration {token.text} for {field}",
              "seconds or a duration such as 90s, 30m, 1h30m or 7d")  # fmt: skip


def _signal(token: Token, text: str) -> int:
    name = str(token.value).upper()
    name = name if name.startswith("SIG") else "SIG" + name
    try:
        return int(signal.Signals[name])
    except KeyError:
        _fail(text, token, f"unknown signal {token.text}", "a number or a name such as 'SIGTERM'")


def _fail(text: str, token: Token, message: str, expected: str) -> NoReturn:
    raise FilterSyntaxError(message, expression=text, position=token.position, expected=expected)
