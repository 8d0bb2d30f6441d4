"""Expectation files: YAML (or JSON) for pipelines, Python for anything YAML cannot say.

A YAML file looks like this::

    row_count: {min: 1000, max: 5000000}
    freshness: {column: event_time, max_age: 24h}
    sensitive: [email]
    columns:
      user_id: {type: integer, not_null: true, unique: true}
      age: {between: [0, 120], max_null_share: 0.01}
      country: {in_set: [US, DE, FR]}
      email: {matches_regex: '^[^@ ]+@[^@ ]+$'}
      coupon: {present: false, type: string}

Listing a column requires it to exist unless ``present: false``. Every mistake is reported
with the file, the line and the field (``expect.yaml:6: columns.age.between: ...``) because a
gate that fails on its own configuration must say exactly where to look.

A Python file defines ``suite`` (a :class:`~flightlog.data.validation.Suite`) or
``expectations`` (a list of expectation objects).
"""

from __future__ import annotations

import difflib
import os
import runpy
from pathlib import Path
from typing import Any

import yaml

from flightlog.data.expectations import (
    Between,
    ColumnPresent,
    ColumnType,
    Expectation,
    Freshness,
    InSet,
    MatchesRegex,
    NotNull,
    RowCount,
    Unique,
)
from flightlog.data.validation import Suite
from flightlog.errors import FlightlogError, InvalidInput, NotFound

__all__ = ["load_expectations", "parse_expectations", "TOP_FIELDS", "COLUMN_FIELDS"]

TOP_FIELDS = ("columns", "row_count", "freshness", "sensitive")
COLUMN_FIELDS = (
    "present",
    "type",
    "not_null",
    "max_null_share",
    "between",
    "in_set",
    "unique",
    "matches_regex",
    "sensitive",
)


def load_expectations(path: str | os.PathLike[str]) -> Suite:
    """Read a YAML / JSON (``.yaml``, ``.yml``, ``.json``) or Python (``.py``) expectation file."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise NotFound(f"no expectation file {p}: pass --expect with a YAML or Python file")
    if p.suffix == ".py":
        return _load_python(p)
    return parse_expectations(p.read_text(encoding="utf-8"), name=str(p))


def _load_python(p: Path) -> Suite:
    try:
        namespace = runpy.run_path(str(p))
    except FlightlogError as exc:
        raise InvalidInput(f"{p}: {exc.message}") from None
    if "suite" in namespace and isinstance(namespace["suite"], Suite):
        suite: Suite = namespace["suite"]
    elif "expectations" in namespace:
        suite = Suite(list(namespace["expectations"]))
    else:
        raise InvalidInput(
            f"{p} defines neither `suite` (a flightlog.data.Suite) nor `expectations` (a list of "
            "expectations from flightlog.data.expectations)"
        )
    suite.source = suite.source or str(p)
    return suite


class _Doc:
    """A YAML node tree read with line numbers, so every error can point at its line."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._loader = yaml.SafeLoader("")

    def fail(self, node: yaml.Node, field: str, problem: str) -> InvalidInput:
        return InvalidInput(
            f"{self.name}:{node.start_mark.line + 1}: {field}: {problem}",
            details={"file": self.name, "line": node.start_mark.line + 1, "field": field},
        )

    def value(self, node: yaml.Node) -> Any:
        return self._loader.construct_object(node, deep=True)

    def mapping(self, node: yaml.Node, field: str, allowed: tuple[str, ...]) -> list[tuple[str, yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, field, "expected a mapping of names to settings")
        out = []
        for k, v in node.value:
            key = str(self.value(k))
            if allowed and key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise self.fail(
                    k,
                    f"{field}.{key}" if field else key,
                    f"unknown field{hint} valid fields: {', '.join(allowed)}",
                )
            out.append((key, k, v))
        return out

    def number(self, node: yaml.Node, field: str, *, integer: bool = False) -> float | int | None:
        v = self.value(node)
        ok = isinstance(v, int) if integer else isinstance(v, int | float)
        if v is None or (ok and not isinstance(v, bool)):
            return v
        raise self.fail(node, field, f"expected {'an integer' if integer else 'a number'}, got {v!r}")

    def flag(self, node: yaml.Node, field: str) -> bool:
        v = self.value(node)
        if not isinstance(v, bool):
            raise self.fail(node, field, f"expected true or false, got {v!r}")
        return v

    def text(self, node: yaml.Node, field: str) -> str:
        v = self.value(node)
        if not isinstance(v, str | int | float) or isinstance(v, bool) or v == "":
            raise self.fail(node, field, f"expected text, got {v!r}")
        return str(v)

    def bounds(self, node: yaml.Node, field: str, *, integer: bool = False) -> tuple[Any, Any]:
        """``[min, max]`` or ``{min: .., max: ..}``; numbers, dates or ISO-8601 times."""
        if isinstance(node, yaml.SequenceNode):
            if len(node.value) != 2:
                raise self.fail(node, field, "expected [min, max] (two values; use null for an open end)")
            lo, hi = (self._bound(n, field, integer) for n in node.value)
        elif isinstance(node, yaml.MappingNode):
            d = {k: v for k, _, v in self.mapping(node, field, ("min", "max"))}
            lo = self._bound(d["min"], field + ".min", integer) if "min" in d else None
            hi = self._bound(d["max"], field + ".max", integer) if "max" in d else None
        else:
            raise self.fail(
                node,
                field,
                f"expected [min, max] or {{min: ..., max: ...}}, got {self.value(node)!r}",
            )
        if lo is None and hi is None:
            raise self.fail(node, field, "give a min, a max or both")
        if isinstance(lo, int | float) and isinstance(hi, int | float) and lo > hi:
            raise self.fail(node, field, f"min {lo} is greater than max {hi}")
        return lo, hi

    def _bound(self, node: yaml.Node, field: str, integer: bool) -> Any:
        v = self.value(node)
        if integer:
            return self.number(node, field, integer=True)
        if v is None or (isinstance(v, int | float | str) and not isinstance(v, bool)) or hasattr(v, "isoformat"):
            return v
        raise self.fail(node, field, f"expected a number, a date or an ISO-8601 time, got {v!r}")


def parse_expectations(text: str, *, name: str = "<expectations>") -> Suite:
    """Parse the YAML form (see the module docstring) into a :class:`Suite`."""
    doc = _Doc(name)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidInput(f"{where}: invalid YAML: {problem}") from None
    if root is None:
        raise InvalidInput(f"{name}: the expectation file is empty; see `flightlog data validate --help`")
    out: list[Expectation] = []
    sensitive: set[str] = set()
    for key, _knode, vnode in doc.mapping(root, "", TOP_FIELDS):
        try:
            if key == "columns":
                for col, cnode, spec in doc.mapping(vnode, "columns", ()):
                    out.extend(_column(doc, col, cnode, spec, sensitive))
            elif key == "row_count":
                lo, hi = doc.bounds(vnode, "row_count", integer=True)
                out.append(RowCount(lo, hi))
            elif key == "freshness":
                items = vnode.value if isinstance(vnode, yaml.SequenceNode) else [vnode]
                for item in items:
                    out.append(_freshness(doc, item))
            elif key == "sensitive":
                if not isinstance(vnode, yaml.SequenceNode):
                    raise doc.fail(vnode, "sensitive", "expected a list of column names")
                sensitive.update(doc.text(n, "sensitive") for n in vnode.value)
        except InvalidInput as exc:
            if exc.details.get("line"):
                raise
            raise doc.fail(vnode, key, exc.message) from None
    return Suite(out, sensitive, name)


def _freshness(doc: _Doc, node: yaml.Node) -> Freshness:
    fields = {k: v for k, _, v in doc.mapping(node, "freshness", ("column", "max_age"))}
    if "column" not in fields:
        raise doc.fail(node, "freshness", "needs a column (the time column to check)")
    age_node = fields.get("max_age")
    age: Any = doc.value(age_node) if age_node is not None else "24h"
    try:
        return Freshness(doc.text(fields["column"], "freshness.column"), age)
    except InvalidInput as exc:
        raise doc.fail(age_node or node, "freshness.max_age", exc.message) from None


def _column(doc: _Doc, col: str, cnode: yaml.Node, spec: yaml.Node, sensitive: set[str]) -> list[Expectation]:
    base = f"columns.{col}"
    if isinstance(spec, yaml.ScalarNode) and doc.value(spec) is None:
        return [ColumnPresent(col)]
    out: list[Expectation] = []
    present = True
    for key, _knode, v in doc.mapping(spec, base, COLUMN_FIELDS):
        field = f"{base}.{key}"
        try:
            if key == "present":
                present = doc.flag(v, field)
            elif key == "type":
                out.append(ColumnType(col, doc.text(v, field)))
            elif key == "not_null":
                if doc.flag(v, field):
                    out.append(NotNull(col))
            elif key == "max_null_share":
                share = doc.number(v, field)
                if share is None or not 0 <= share <= 1:
                    raise doc.fail(v, field, f"expected a share between 0 and 1, got {share!r}")
                out.append(NotNull(col, float(share)))
            elif key == "between":
                lo, hi = doc.bounds(v, field)
                out.append(Between(col, lo, hi))
            elif key == "in_set":
                if not isinstance(v, yaml.SequenceNode) or not v.value:
                    raise doc.fail(v, field, "expected a non-empty list of allowed values")
                out.append(InSet(col, [doc.value(n) for n in v.value]))
            elif key == "unique":
                if doc.flag(v, field):
                    out.append(Unique(col))
            elif key == "matches_regex":
                out.append(MatchesRegex(col, doc.text(v, field)))
            elif key == "sensitive" and doc.flag(v, field):
                sensitive.add(col)
        except InvalidInput as exc:
            if exc.details.get("line"):
                raise
            raise doc.fail(v, field, exc.message) from None
    if present:
        out.insert(0, ColumnPresent(col))
    else:
        for e in out:
            e.optional = True
    return out
