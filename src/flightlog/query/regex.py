"""Log ``grep`` patterns, compiled by RE2: matching takes time linear in the line, whatever the pattern.

Why not :mod:`re`: a backtracking engine lets one pattern such as ``(a+)+$`` spend seconds
on a 27-character line, and a server that greps for a user would freeze for every other
request. RE2 never backtracks, so it cannot do that; it also refuses the few features that
need backtracking (backreferences, lookaround, possessive and atomic groups), and those are
refused here with a message that names the feature.

Matching is case-insensitive, as ``flightlog logs --grep`` documents.
"""

from __future__ import annotations

import functools
from typing import Protocol

import re2

from flightlog.errors import InvalidInput

__all__ = ["GrepPattern", "compile_grep", "MAX_PATTERN"]

MAX_PATTERN = 1000
"""Longest pattern accepted, in characters (the API's ``grep`` parameter has the same bound)."""

# (the start of what RE2 says, what a person calls it): RE2 names the construct it stopped at
_UNSUPPORTED = (
    *((f"invalid escape sequence: \\{d}", "a backreference (\\1 … \\9)") for d in "123456789"),
    ("invalid perl operator: (?=", "a lookahead (?=…)"),
    ("invalid perl operator: (?!", "a negative lookahead (?!…)"),
    ("invalid perl operator: (?<=", "a lookbehind (?<=…)"),
    ("invalid perl operator: (?<!", "a negative lookbehind (?<!…)"),
    ("invalid perl operator: (?>", "an atomic group (?>…)"),
    ("invalid perl operator: (?P", "a named backreference (?P=name)"),
    *((f"bad repetition operator: {q}+", f"a possessive quantifier ({q}+)") for q in "*+?"),
)


class GrepPattern(Protocol):
    """What a compiled pattern offers: ``search(text)`` is truthy when the text matches."""

    def search(self, text: str) -> object: ...


def _options() -> re2.Options:
    options = re2.Options()
    options.case_sensitive = False
    options.log_errors = False  # a refused pattern is an answer to the user, not a line on stderr
    return options


@functools.lru_cache(maxsize=256)
def compile_grep(pattern: str, *, what: str = "grep") -> GrepPattern:
    """``pattern`` compiled for a case-insensitive search, or :class:`InvalidInput` saying why not.

    ``what`` names the pattern in the message (``grep``, ``--grep``).
    """
    if len(pattern) > MAX_PATTERN:
        raise InvalidInput(
            f"{what} is too long ({len(pattern)} characters; at most {MAX_PATTERN})", details={"max": MAX_PATTERN}
        )
    if "\x00" in pattern:
        raise InvalidInput(f"{what} contains a NUL character")
    try:
        compiled: GrepPattern = re2.compile(pattern, _options())
    except re2.error as exc:
        reason = _reason(exc)
        feature = next((name for said, name in _UNSUPPORTED if said in reason), None)
        if feature is not None:
            raise InvalidInput(
                f"{what} {pattern[:200]!r} uses {feature}, which flightlog's regular expressions do not "
                "support (they match in linear time, so no pattern can stall a search): rewrite it without",
                details={"pattern": pattern[:MAX_PATTERN], "unsupported": feature, "reason": reason},
            ) from None
        raise InvalidInput(
            f"{what} {pattern[:200]!r} is not a valid regular expression: {reason}",
            details={"pattern": pattern[:MAX_PATTERN], "reason": reason},
        ) from None
    return compiled


def _reason(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else exc
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)
