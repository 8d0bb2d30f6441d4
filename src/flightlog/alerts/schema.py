"""Reading one mapping of a rules file field by field, collecting every problem with its line.

    r = Fields(doc, ("rules", 0), problems)
    name = r.text("name", required=True)
    op = r.choice("op", (">", "<"), default=">")
    r.finish()        # unknown fields are problems too, with a "did you mean" hint

Conversions never raise: a bad value is recorded as a :class:`Problem` and the default is
returned, so one check reports every mistake in the file at once.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from flightlog.alerts.yamlsource import Located, Path, Problem
from flightlog.errors import InvalidInput
from flightlog.timefmt import parse_duration

__all__ = ["Fields", "MISSING"]

T = TypeVar("T")
MISSING: Any = object()


class Fields:
    def __init__(self, doc: Located, path: Path, problems: list[Problem], value: Any = MISSING) -> None:
        self.doc = doc
        self.path = path
        self.problems = problems
        raw = _at(doc.value, path) if value is MISSING else value
        self.ok = isinstance(raw, dict)
        if not self.ok:
            self.fail((), f"must be a mapping of fields, got {_kind(raw)}")
        self.data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.used: set[str] = set()

    # ── problems ────────────────────────────────────────────────────────────
    def fail(self, key: str | int | tuple[str | int, ...], message: str, *, warning: bool = False) -> None:
        sub = key if isinstance(key, tuple) else (key,)
        path = (*self.path, *sub)
        self.problems.append(Problem(self.doc.line(path), path, message, warning))

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any = None) -> Any:
        self.used.add(key)
        return self.data.get(key, default)

    def finish(self, allowed_extra: Iterable[str] = ()) -> None:
        known = self.used | set(allowed_extra)
        for key in self.data:
            if key not in known:
                hint = difflib.get_close_matches(key, sorted(known), n=1)
                more = f" (did you mean {hint[0]!r}?)" if hint else f"; known fields: {', '.join(sorted(known))}"
                self.fail(key, f"unknown field{more}")

    # ── typed fields ────────────────────────────────────────────────────────
    def _get(self, key: str, required: bool) -> Any:
        self.used.add(key)
        if key not in self.data or self.data[key] is None:
            if required:
                self.fail((), f"needs the field {key!r}")
            return MISSING
        return self.data[key]

    def text(self, key: str, *, required: bool = False, default: str | None = None) -> str | None:
        value = self._get(key, required)
        if value is MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.fail(key, f"must be text, got {_kind(value)}")
            return default
        text = str(value).strip()
        if not text:
            self.fail(key, "must not be empty")
            return default
        return text

    def number(
        self,
        key: str,
        *,
        required: bool = False,
        default: float | None = None,
        minimum: float | None = None,
        above: float | None = None,
    ) -> float | None:
        value = self._get(key, required)
        if value is MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(key, f"must be a number, got {value!r}")
            return default
        if minimum is not None and value < minimum:
            self.fail(key, f"must be at least {minimum:g}, got {value:g}")
            return default
        if above is not None and value <= above:
            self.fail(key, f"must be greater than {above:g}, got {value:g}")
            return default
        return float(value)

    def integer(
        self, key: str, *, required: bool = False, default: int | None = None, minimum: int | None = None
    ) -> int | None:
        value = self._get(key, required)
        if value is MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"must be a whole number, got {value!r}")
            return default
        if minimum is not None and value < minimum:
            self.fail(key, f"must be at least {minimum}, got {value}")
            return default
        return value

    def flag(self, key: str, *, default: bool) -> bool:
        value = self._get(key, False)
        if value is MISSING:
            return default
        if not isinstance(value, bool):
            self.fail(key, f"must be true or false, got {value!r}")
            return default
        return value

    def duration(
        self, key: str, *, required: bool = False, default: float | None = None, allow_zero: bool = False
    ) -> float | None:
        value = self._get(key, required)
        if value is MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.fail(key, f"must be a duration such as 30s, 10m or 2h, got {_kind(value)}")
            return default
        try:
            seconds = parse_duration(str(value), what=key)
        except InvalidInput as exc:
            self.fail(key, exc.message)
            return default
        if seconds <= 0 and not allow_zero:
            self.fail(key, "must be longer than 0s")
            return default
        return seconds

    def choice(
        self, key: str, choices: tuple[str, ...], *, required: bool = False, default: str | None = None
    ) -> str | None:
        value = self.text(key, required=required)
        if value is None:
            return default
        if value not in choices:
            hint = difflib.get_close_matches(value, choices, n=1)
            guess = f" (did you mean {hint[0]!r}?)" if hint else ""
            self.fail(key, f"{value!r} is not valid{guess}: use one of {', '.join(choices)}")
            return default
        return value

    def text_list(
        self, key: str, *, required: bool = False, choices: tuple[str, ...] | None = None
    ) -> list[str] | None:
        """A string or a list of strings."""
        value = self._get(key, required)
        if value is MISSING:
            return None
        items = [value] if isinstance(value, (str, int, float)) and not isinstance(value, bool) else value
        if not isinstance(items, list) or not items:
            self.fail(key, f"must be text or a non-empty list of text, got {_kind(value)}")
            return None
        out: list[str] = []
        for i, item in enumerate(items):
            if isinstance(item, bool) or not isinstance(item, (str, int, float)) or not str(item).strip():
                self.fail((key, i) if isinstance(value, list) else key, f"must be text, got {_kind(item)}")
                continue
            text = str(item).strip()
            if choices is not None and text not in choices:
                self.fail(
                    (key, i) if isinstance(value, list) else key,
                    f"{text!r} is not valid: use one of {', '.join(choices)}",
                )
                continue
            out.append(text)
        return out

    def string_map(self, key: str) -> dict[str, str]:
        """A mapping of text to text (labels, headers, environment)."""
        value = self._get(key, False)
        if value is MISSING:
            return {}
        if not isinstance(value, dict):
            self.fail(key, f"must be a mapping of names to text, got {_kind(value)}")
            return {}
        out: dict[str, str] = {}
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                self.fail((key, k), f"must be text, got {_kind(v)}")
                continue
            out[k] = str(v)
        return out

    def check(
        self, key: str, convert: Callable[[Any], T], *, required: bool = False, default: T | None = None
    ) -> T | None:
        """Any other conversion: ``convert`` raises InvalidInput (or ValueError) with the message."""
        value = self._get(key, required)
        if value is MISSING:
            return default
        try:
            return convert(value)
        except (InvalidInput, ValueError) as exc:
            self.fail(key, getattr(exc, "message", None) or str(exc))
            return default


def _at(value: Any, path: Path) -> Any:
    for part in path:
        if isinstance(part, int):
            if not isinstance(value, list) or part >= len(value):
                return MISSING
            value = value[part]
        else:
            if not isinstance(value, dict) or part not in value:
                return MISSING
            value = value[part]
    return value


def _kind(value: Any) -> str:
    if value is MISSING or value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"
