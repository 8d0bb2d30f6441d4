"""Summary templates: ``"{run.name}: GPU {labels.gpu} idle ({value:.0f}%) for {for}"``.

Placeholders are ``{field}`` or ``{field:format-spec}`` (Python's format mini-language, e.g.
``.3g``); ``{{`` and ``}}`` are literal braces. Fields: ``value``, ``rule``, ``severity``,
``kind``, ``run.<id|short_id|name|project|status|attempt|host|parent_id>``, ``labels.<name>``,
``params.<key>``, ``tags.<key>``, and the fields of the rule's kind (``threshold``, ``step``,
``best``, ``median``, ...; see docs/alerting.md). Templates are checked when the rules file is
read; a value missing at run time renders as ``?`` and never fails a notification.

Widths and precisions are at most :data:`MAX_FORMAT_WIDTH`: a rules file can come from any
reader (``POST /alerts/rules/check``), and ``{value:>1000000000}`` would build a gigabyte
string. A spec over the bound is refused when the file is read, and rendered without its spec
should one reach :meth:`Template.render` some other way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from flightlog.errors import InvalidInput

__all__ = ["Template", "RUN_FIELDS", "COMMON_FIELDS", "MAX_FORMAT_WIDTH"]

MAX_FORMAT_WIDTH = 1000  # characters of width, digits of precision
# Python's format-spec mini-language: [[fill]align][sign][z][#][0][width][grouping][.precision][type]
_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d*)[,_]?(?:\.(?P<precision>\d*))?[a-zA-Z%]?", re.DOTALL)
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}:]*)(?::([^{}]*))?\}|[{}]")
RUN_FIELDS = ("id", "short_id", "name", "project", "status", "attempt", "host", "parent_id", "end_reason")
COMMON_FIELDS = ("value", "rule", "severity", "kind")
_PREFIXED = ("labels", "params", "tags")


@dataclass(frozen=True)
class Template:
    text: str
    parts: tuple[tuple[str, str | None, str | None], ...]  # (literal, field, spec)

    @classmethod
    def parse(cls, text: str, kind_fields: Collection[str]) -> Template:
        """Parse and check ``text``; InvalidInput names the first bad placeholder."""
        parts: list[tuple[str, str | None, str | None]] = []
        literal, pos = "", 0
        for m in _TOKEN.finditer(text):
            literal += text[pos : m.start()]
            pos = m.end()
            token = m.group(0)
            if token in ("{{", "}}"):
                literal += token[0]
                continue
            if token in ("{", "}"):
                raise InvalidInput(
                    f"unmatched {token!r} at position {m.start()}: write {token * 2} for a literal brace"
                )
            name, spec = m.group(1).strip(), m.group(2)
            _check_field(name, kind_fields)
            if spec is not None:
                _check_bounds(name, spec)
                try:
                    format(1.5, spec)
                except ValueError:
                    try:
                        format("x", spec)
                    except ValueError:
                        raise InvalidInput(
                            f"{{{name}:{spec}}}: {spec!r} is not a format spec (e.g. .2f, .3g)"
                        ) from None
            parts.append((literal, name, spec))
            literal = ""
        literal += text[pos:]
        parts.append((literal, None, None))
        return cls(text, tuple(parts))

    def render(self, values: Mapping[str, Any]) -> str:
        out = []
        for literal, name, spec in self.parts:
            out.append(literal)
            if name is not None:
                out.append(_render(_lookup(values, name), spec))
        return "".join(out)


def _too_wide(spec: str) -> str | None:
    """What of ``spec`` is over :data:`MAX_FORMAT_WIDTH` (``"width"``, ``"precision"``), else None."""
    m = _SPEC.fullmatch(spec)
    if m is None:
        return None  # not a spec at all: format() says so
    for part in ("width", "precision"):
        digits = m.group(part)
        if digits and (len(digits) > 6 or int(digits) > MAX_FORMAT_WIDTH):
            return part
    return None


def _check_bounds(name: str, spec: str) -> None:
    part = _too_wide(spec)
    if part is not None:
        raise InvalidInput(
            f"{{{name}:{spec}}}: the {part} is over {MAX_FORMAT_WIDTH}; "
            f"use a {part} of at most {MAX_FORMAT_WIDTH} (e.g. >10, .3f)"
        )


def _check_field(name: str, kind_fields: Collection[str]) -> None:
    root, dot, rest = name.partition(".")
    if root in _PREFIXED and dot and rest:
        return
    if root == "run" and dot:
        if rest in RUN_FIELDS:
            return
        raise InvalidInput(f"{{{name}}}: unknown run field {rest!r}; use one of {', '.join(RUN_FIELDS)}")
    if not dot and (name in COMMON_FIELDS or name in kind_fields):
        return
    known = [*COMMON_FIELDS, *sorted(kind_fields), *(f"{p}.<name>" for p in _PREFIXED), "run.<field>"]
    raise InvalidInput(f"{{{name}}} is not a field of this rule; use one of {', '.join(known)}")


def _lookup(values: Mapping[str, Any], name: str) -> Any:
    if name in values:
        return values[name]
    root, _, rest = name.partition(".")
    section = values.get(root)
    if isinstance(section, Mapping):
        return section.get(rest)
    return None


def _render(value: Any, spec: str | None) -> str:
    if value is None:
        return "?"
    if spec and _too_wide(spec) is None:
        try:
            return format(value, spec)
        except (ValueError, TypeError):
            pass
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.4g}"
    return str(value)
