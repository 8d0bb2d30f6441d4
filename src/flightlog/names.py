"""One rule for every name a person gives a thing: model names, aliases, endpoints,
environments, experiment (project) names, tag and param keys.

Why: a name is read by people and compared by programs, and the two must agree. ``fraud`` and
``fraud\\n`` side by side look like one model in every listing while a program resolves them
apart; a right-to-left override (U+202E) makes ``prod‮ved`` print as ``prodved`` reversed; an
escape code rewrites the terminal that lists it. So no name may hold:

* a control character (U+0000–U+001F, DEL U+007F, U+0080–U+009F: newlines, tabs, escape codes),
* a bidirectional-text control (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069),
* a line or paragraph separator (U+2028, U+2029), or half of a surrogate pair,
* white space at either end.

Each surface keeps its own alphabet on top (a model name is letters, digits, ``_ . -``); this
rule is the floor under all of them, checked first so the refusal names the rule and the
offending character's position.
"""

from __future__ import annotations

from typing import Any

from flightlog.errors import InvalidInput

__all__ = [
    "MAX_RUN_NAME",
    "NAME_RULE",
    "InvalidName",
    "check_name_text",
    "check_run_name",
    "control_character",
    "name_problem",
]

NAME_RULE = (
    "a name is printable text: no control characters (U+0000-U+001F, U+007F-U+009F: newlines, tabs, "
    "escape codes), no bidirectional-text controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), "
    "no line or paragraph separators, and no white space at either end"
)
_BIDI = frozenset([0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
_SEPARATORS = frozenset([0x2028, 0x2029])


class InvalidName(InvalidInput):
    """A name that breaks :data:`NAME_RULE` (a 400 on the wire, ``invalid_name``)."""

    code = "invalid_name"


def _bad_char(cp: int) -> str | None:
    if cp < 0x20 or 0x7F <= cp <= 0x9F:
        return "a control character"
    if cp in _BIDI:
        return "a bidirectional-text control"
    if cp in _SEPARATORS:
        return "a line or paragraph separator"
    if 0xD800 <= cp <= 0xDFFF:
        return "half of a surrogate pair"
    return None


def control_character(value: str) -> tuple[str, int] | None:
    """The first character of ``value`` that no name may hold (what it is, its index), or None."""
    for i, ch in enumerate(value):
        what = _bad_char(ord(ch))
        if what is not None:
            return f"{what} (U+{ord(ch):04X})", i
    return None


def name_problem(value: str) -> tuple[str, int] | None:
    """What breaks the rule in ``value`` and where (a character's index), or None when it holds."""
    bad = control_character(value)
    if bad is not None:
        return bad
    if value != value.strip():
        return "white space at one end", 0 if value[:1].isspace() else len(value) - 1
    return None


def check_name_text(value: Any, what: str) -> Any:
    """``value`` unchanged when it is not text or keeps :data:`NAME_RULE`; :class:`InvalidName`
    (naming ``what``, the rule, the character and its position) otherwise. Text-ness and each
    surface's own alphabet are the caller's checks."""
    if not isinstance(value, str):
        return value
    problem = name_problem(value)
    if problem is None:
        return value
    found, at = problem
    raise InvalidName(
        f"{what} {value[:80]!r} is not valid: it has {found} at position {at}; {NAME_RULE}",
        details={"value": value[:200], "position": at, "rule": NAME_RULE, "what": what},
    )


#: the longest run name (``flightlog.init(name=...)``, ``flightlog runs edit --name``)
MAX_RUN_NAME = 200


def check_run_name(name: Any) -> str:
    """A run name: non-empty text of at most MAX_RUN_NAME characters, on one line. One check for
    the SDK (``Run.name``) and the store's edits (``runs edit --name``), so both refuse alike."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("a run name needs some text")
    name = name.strip()
    if len(name) > MAX_RUN_NAME or "\n" in name:
        raise InvalidInput(f"a run name is one line of at most {MAX_RUN_NAME} characters (got {len(name)})")
    return name
