"""MLflow's run filter and ``order_by`` compiled onto flightlog's query language (`flightlog.query`).

MLflow's grammar (``mlflow/utils/search_utils.py``) is a conjunction of comparisons::

    metrics.acc > 0.9 and params.lr = '0.1' and tags.team LIKE '%vision%'
    attributes.status = 'FINISHED' and run_name ILIKE 'bert%' and start_time > 1700000000000

An identifier is ``metrics.``, ``params.``, ``tags.`` or ``attributes.`` (``attr.``, ``run.``,
or none for an attribute) then a key, plain, in backquotes or in double quotes. Each
comparison becomes the flightlog predicate with the same meaning (a status becomes the
flightlog statuses MLflow's status covers, milliseconds become seconds), and the whole
becomes one flightlog filter the store compiles to SQL: the same engine, the same indexes and
the same timeouts as ``flightlog runs ls``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from flightlog.mlflow_server.entities import DELETED_TAG, TO_FLIGHTLOG, USER_TAG
from flightlog.mlflow_server.errors import invalid
from flightlog.query.ast import Field
from flightlog.statuses import ACTIVE_STATUSES, ERROR_STATUSES, SIGNALLED_STATUSES

__all__ = [
    "Clause",
    "EXPERIMENT_ATTRIBUTES",
    "parse_mlflow_filter",
    "to_flightlog_filter",
    "to_flightlog_order",
    "lifecycle_filter",
]

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<num>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w.])
      | (?P<op>!=|<>|>=|<=|==|=|<|>|\(|\)|,)
      | (?P<ident>(?:[A-Za-z_][\w]*\.)?(?:`(?:[^`])*`|"(?:[^"\\]|\\.)*"|[\w.:/\-]+))
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"and", "or", "like", "ilike", "in", "not", "is", "null"}
_ENTITY = {"metrics": "metric", "metric": "metric", "params": "param", "param": "param", "tags": "tag", "tag": "tag"}
_ATTR_PREFIXES = {"attributes", "attribute", "attr", "run"}
#: MLflow's attributes → flightlog's columns ("ms": a time in epoch milliseconds)
_ATTRS = {
    "run_id": ("id", "text"),
    "run_name": ("name", "text"),
    "status": ("status", "status"),
    "start_time": ("started", "ms"),
    "end_time": ("ended", "ms"),
    "created": ("created", "ms"),
    "user_id": (USER_TAG, "tag"),
}
#: an experiment's attributes in ``experiments/search`` (``name``, ``creation_time > 1700000000000``)
EXPERIMENT_ATTRIBUTES = {"name": ("name", "text"), "creation_time": ("created", "ms"),
                         "last_update_time": ("updated", "ms")}  # fmt: skip
_STATUS_OF: dict[str, list[str]] = {
    "FINISHED": ["succeeded"],
    "FAILED": list(ERROR_STATUSES),
    "KILLED": list(SIGNALLED_STATUSES),
    "RUNNING": ["running"],
    "SCHEDULED": [s for s in ACTIVE_STATUSES if s != "running"],
}
_ORDER_ATTRS = {"run_id": "id", "run_name": "name", "status": "status", "start_time": "started",
                "end_time": "ended", "created": "created"}  # fmt: skip
assert set(_STATUS_OF) == set(TO_FLIGHTLOG)  # noqa: S101 - the two tables name the same statuses


@dataclass(frozen=True)
class Clause:
    kind: str  # metric | param | tag | column
    key: str  # a key, or a flightlog column
    op: str  # = != < <= > >= like ilike in not in "is null" "is not null"
    value: object  # str, float, tuple of them, or None
    ms: bool = False  # the value is epoch milliseconds
    status: bool = False  # the value is an MLflow status


def _bad(text: str, why: str) -> Exception:
    return invalid(f"Invalid filter string '{text}': {why}")


def _tokens(text: str) -> list[tuple[str, str]]:
    out, i = [], 0
    while i < len(text):
        if text[i:].strip() == "":
            break
        m = _TOKEN.match(text, i)
        if m is None or m.end() == i:
            raise _bad(text, f"unexpected character at position {i}: {text[i : i + 20]!r}")
        kind = m.lastgroup or ""
        value = m.group(kind)
        if kind == "ident" and value.lower() in _KEYWORDS:
            kind = "kw"
            value = value.lower()
        out.append((kind, value))
        i = m.end()
    return out


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"`":
        body = text[1:-1]
        return body if text[0] == "`" else re.sub(r"\\(.)", r"\1", body)
    return text


def _identifier(text: str, ident: str) -> tuple[str, str]:
    """(entity kind or "attr", key) for ``metrics.acc``, ``params.`lr```, ``start_time``..."""
    m = re.match(r"^([A-Za-z_]\w*)\.(.+)$", ident)
    if m and (m.group(1).lower() in _ENTITY or m.group(1).lower() in _ATTR_PREFIXES | {"dataset", "datasets"}):
        prefix, key = m.group(1).lower(), _unquote(m.group(2))
        if prefix in ("dataset", "datasets"):
            raise _bad(text, "dataset filters are not supported by flightlog's MLflow protocol (docs/mlflow.md)")
        if not key:
            raise _bad(text, f"'{ident}' needs a key")
        return (_ENTITY.get(prefix, "attr"), key)
    return ("attr", _unquote(ident))


def parse_mlflow_filter(text: str | None, attributes: dict[str, tuple[str, str]] | None = None) -> list[Clause]:
    """MLflow's filter string as clauses, all of which must hold; refused in MLflow's words.

    ``attributes`` names the attributes the filter may compare (a run's by default)."""
    if text is None or not text.strip():
        return []
    toks = _tokens(text)
    clauses: list[Clause] = []
    i = 0

    def take() -> tuple[str, str]:
        nonlocal i
        if i >= len(toks):
            raise _bad(text, "it ends in the middle of a comparison")
        i += 1
        return toks[i - 1]

    while True:
        kind, ident = take()
        if kind != "ident":
            raise _bad(
                text, f"expected an identifier such as metrics.acc, params.lr or attributes.status, not {ident!r}"
            )
        entity, key = _identifier(text, ident)
        kind, op = take()
        if kind == "kw" and op == "not":
            _, nxt = take()
            op = f"not {nxt}"
        elif kind == "kw" and op == "is":
            _, nxt = take()
            if nxt == "not":
                _, nxt = take()
                op = "is not null" if nxt == "null" else "?"
            else:
                op = "is null" if nxt == "null" else "?"
        if op in ("==", "<>"):
            op = {"==": "=", "<>": "!="}[op]
        if op not in ("=", "!=", "<", "<=", ">", ">=", "like", "ilike", "in", "not in", "is null", "is not null"):
            raise _bad(text, f"invalid comparator {op!r} after {ident!r}")
        value: object = None
        if op in ("in", "not in"):
            if take()[1] != "(":
                raise _bad(text, f"{op.upper()} needs a parenthesized list of values")
            items = []
            while True:
                k, v = take()
                if k not in ("str", "num"):
                    raise _bad(text, f"expected a value in the {op.upper()} list, not {v!r}")
                items.append(_unquote(v) if k == "str" else v)
                sep = take()[1]
                if sep == ")":
                    break
                if sep != ",":
                    raise _bad(text, f"expected ',' or ')' in the {op.upper()} list, not {sep!r}")
            value = tuple(items)
        elif op not in ("is null", "is not null"):
            k, v = take()
            if k == "str":
                value = _unquote(v)
            elif k == "num":
                value = float(v)
            else:
                raise _bad(text, f"expected a value after {ident} {op}, not {v!r}")
        clauses.append(_clause(text, entity, key, op, value, _ATTRS if attributes is None else attributes))
        if i >= len(toks):
            return clauses
        k, v = take()
        if k == "kw" and v == "or":
            raise _bad(text, "OR is not supported: MLflow's filter joins comparisons with AND only")
        if not (k == "kw" and v == "and"):
            raise _bad(text, f"expected AND between comparisons, not {v!r}")


def _clause(text: str, entity: str, key: str, op: str, value: object, attrs: dict[str, tuple[str, str]]) -> Clause:
    if entity == "metric":
        if op in ("like", "ilike", "in", "not in") or isinstance(value, str):
            raise _bad(text, f"metrics.{key} is compared with a number: = != < <= > >=")
        return Clause("metric", key, op, value)
    if entity in ("param", "tag"):
        if isinstance(value, float):
            raise _bad(text, f"{entity}s.{key} is text: quote the value, e.g. {entity}s.{key} = '{value:g}'")
        return Clause(entity, key, op, value)
    attr = attrs.get(key.lower())
    if attr is None:
        raise _bad(text, f"invalid attribute key '{key}': use one of {', '.join(sorted(attrs))}")
    column, how = attr
    if how == "tag":
        return Clause("tag", column, op, value)
    if how == "ms":
        if op in ("like", "ilike", "in", "not in") or isinstance(value, str):
            raise _bad(text, f"{key} is a time in milliseconds: compare it with a number")
        return Clause("column", column, op, value, ms=True)
    if how == "status":
        values = value if isinstance(value, tuple) else (value,)
        for v in values:
            if not isinstance(v, str) or v.upper() not in _STATUS_OF:
                raise _bad(text, f"invalid status {v!r}: use one of {', '.join(_STATUS_OF)}")
        if op not in ("=", "!=", "in", "not in"):
            raise _bad(text, f"status takes = != IN or NOT IN, not {op.upper()}")
        return Clause("column", "status", op, value, status=True)
    if isinstance(value, float):
        raise _bad(text, f"{key} is text: quote the value")
    return Clause("column", column, op, value)


def _lit(value: object) -> str:
    if isinstance(value, float):
        return repr(value) if value != int(value) or abs(value) > 2**53 else str(int(value))
    text = str(value)
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _like(value: object) -> str:
    """An MLflow LIKE pattern in flightlog's LIKE (backslash is our escape: keep it literal)."""
    return "'" + str(value).replace("\\", "\\\\\\\\").replace("'", "\\'") + "'"


def _field(c: Clause) -> str:
    return c.key if c.kind == "column" else str(Field(c.kind, c.key))  # type: ignore[arg-type]


def _predicate(c: Clause) -> str:
    name = _field(c)
    if c.status:
        values = c.value if isinstance(c.value, tuple) else (c.value,)
        statuses = [s for v in values for s in _STATUS_OF[str(v).upper()]]
        negate = c.op in ("!=", "not in")
        return f"{name} {'not in' if negate else 'in'} ({', '.join(_lit(s) for s in statuses)})"
    if c.op in ("is null", "is not null"):
        return f"{name} {c.op}"
    if c.op in ("in", "not in"):
        assert isinstance(c.value, tuple)  # noqa: S101 - the parser makes a tuple for IN
        return f"{name} {c.op} ({', '.join(_lit(v) for v in c.value)})"
    if c.op in ("like", "ilike"):  # flightlog's like folds case: ILIKE exactly, LIKE a little wider
        return f"{name} like {_like(c.value)}"
    value = c.value
    if c.ms and isinstance(value, float):
        value = value / 1000
    return f"{name} {c.op} {_lit(value)}"


def to_flightlog_filter(clauses: list[Clause]) -> str:
    return " and ".join(f"({_predicate(c)})" for c in clauses)


def lifecycle_filter(view_type: str | None) -> str:
    """MLflow's run_view_type as a flightlog predicate on the tag a soft delete sets."""
    view = (view_type or "ACTIVE_ONLY").upper()
    tag = str(Field("tag", DELETED_TAG))
    if view == "ACTIVE_ONLY":
        return f"{tag} is null"
    if view == "DELETED_ONLY":
        return f"{tag} is not null"
    if view == "ALL":
        return ""
    raise invalid(f"Invalid run_view_type '{view_type}': use ACTIVE_ONLY, DELETED_ONLY or ALL.")


def to_flightlog_order(order_by: list[str]) -> str:
    """MLflow's ``order_by`` ("metrics.acc DESC", "attributes.start_time") as flightlog's, with
    the run id last so that pages never overlap."""
    keys = []
    for raw in order_by:
        if not isinstance(raw, str) or not raw.strip():
            raise invalid(f"Invalid order_by clause {raw!r}.")
        m = re.match(r"^\s*(.+?)(?:\s+(asc|desc))?\s*$", raw, re.IGNORECASE)
        assert m is not None  # noqa: S101 - the pattern matches any non-blank text
        ident, direction = m.group(1), (m.group(2) or "asc").lower()
        entity, key = _identifier(raw, ident)
        if entity == "attr":
            column = _ORDER_ATTRS.get(key.lower())
            if column is None:
                raise invalid(
                    f"Invalid order_by clause '{raw}': invalid attribute key '{key}', "
                    f"use one of {', '.join(sorted(_ORDER_ATTRS))}"
                )
            name = column
        else:
            name = str(Field(entity, key))  # type: ignore[arg-type]
        keys.append(("-" if direction == "desc" else "") + name)
    if not keys:
        keys = ["-started"]
    keys.append("id")
    return ",".join(keys)
