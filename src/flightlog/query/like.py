"""SQL ``LIKE`` patterns matched in time linear in the text, whatever the pattern.

Why not a Python regular expression: ``LIKE '%%%…%!'`` turned into ``.*.*.*…!`` makes a
backtracking engine try every way of splitting the text before it gives up — a pattern of 60
``%`` held a server's event loop until the process was killed (issue 31). RE2 runs the same
pattern as an automaton: one pass over the text, however many wildcards. Every surface that
matches ``LIKE`` in Python (MLflow's experiment, registered-model and logged-model searches,
the query engine's in-memory evaluator) goes through :func:`like_matcher`.

``%`` matches any run of characters (newlines too), ``_`` exactly one character; ``escape``
(when given) makes the next character literal, as SQL's ``LIKE … ESCAPE``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import re2

from flightlog.errors import InvalidInput

__all__ = ["MAX_LIKE_PATTERN", "ascii_lower", "like_match", "like_matcher"]

MAX_LIKE_PATTERN = 10_000
"""Longest pattern accepted, in characters (MLflow's filter strings are bounded the same)."""

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _options(fold: bool) -> re2.Options:
    options = re2.Options()
    options.dot_nl = True  # SQL's % and _ match a newline like any other character
    options.case_sensitive = not fold
    options.log_errors = False
    return options


def _literal(ch: str) -> str:
    """One character as RE2 reads it literally (a hex escape for anything not a letter or digit)."""
    return ch if ch.isascii() and ch.isalnum() else f"\\x{{{ord(ch):x}}}"


def _safe(text: str) -> str:
    """The text RE2 can take: a lone surrogate (which UTF-8 cannot encode) becomes U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text


@functools.lru_cache(maxsize=512)
def like_matcher(pattern: str, *, fold: bool = False, escape: str | None = None) -> Callable[[str], bool]:
    """A function telling whether a whole text matches the ``LIKE`` pattern (``fold``: ``ILIKE``,
    case folded the Unicode way). :class:`InvalidInput` for a pattern over :data:`MAX_LIKE_PATTERN`."""
    if len(pattern) > MAX_LIKE_PATTERN:
        raise InvalidInput(
            f"the LIKE pattern is {len(pattern)} characters long; at most {MAX_LIKE_PATTERN} are accepted",
            details={"max": MAX_LIKE_PATTERN},
        )
    parts: list[str] = []
    chars = iter(_safe(pattern))
    for ch in chars:
        if escape is not None and ch == escape:
            nxt = next(chars, None)
            parts.append(_literal(ch if nxt is None else nxt))
        elif ch == "%":
            if not parts or parts[-1] != ".*":  # %% is %: fewer states, the same language
                parts.append(".*")
        elif ch == "_":
            parts.append(".")
        else:
            parts.append(_literal(ch))
    compiled = re2.compile("".join(parts), _options(fold))

    def matches(text: str) -> bool:
        return compiled.fullmatch(_safe(text)) is not None

    return matches


def like_match(text: str, pattern: str, *, fold: bool = False, escape: str | None = None) -> bool:
    """Whether ``text`` matches ``pattern`` as SQL's ``LIKE`` (``fold``: ``ILIKE``)."""
    return like_matcher(pattern, fold=fold, escape=escape)(text)


def ascii_lower(text: str) -> str:
    """Lowercase ASCII letters only, as SQLite's ``LOWER`` does."""
    return text.translate(_ASCII_LOWER)
