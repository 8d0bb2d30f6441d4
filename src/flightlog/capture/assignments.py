"""Secrets recognised by their *name*: ``password=…``, ``"api_key": "…"``, ``Authorization: …``.

How it stays fast: the chunk is lower-cased once and searched for a handful of keywords
(``pass``, ``secret``, ``token``, …) followed by ``=`` or ``:``. Each keyword pattern starts
with a literal, so the regex engine skips straight to candidates; ``tokens=123`` and
``max_tokens=1024`` never match because the keyword must end the name. Only the few
candidates are examined in Python: the whole name is read backwards from the keyword and
judged by ``names.is_secret_key``, then the value after the separator is replaced.

JSON stays valid: a quoted value keeps its quotes, and an unquoted value of a quoted key
(``"password": 12345``) becomes a quoted marker.
"""

from __future__ import annotations

import re

from flightlog.capture.families import marker
from flightlog.capture.names import is_secret_key, key_words

__all__ = ["redact_assignments", "NEEDLES"]

_SEP = r"""["']?[ \t]*[:=]"""
# (needle searched in the lower-cased chunk, pattern run on it when the needle is present)
_KEYWORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("pass", re.compile(rf"pass(?:word|wd|phrase)?{_SEP}")),
    ("pwd", re.compile(rf"pwd{_SEP}")),
    ("secret", re.compile(rf"secret{_SEP}")),
    ("token", re.compile(rf"token{_SEP}")),
    ("key", re.compile(rf"keys?{_SEP}")),
    ("credential", re.compile(rf"credentials?{_SEP}")),
    ("auth", re.compile(rf"auth(?:orization)?{_SEP}")),
)
NEEDLES = tuple(needle for needle, _ in _KEYWORDS) + ("bearer",)

_CASELESS = tuple((needle, re.compile(p.pattern, re.IGNORECASE)) for needle, p in _KEYWORDS)
_BEARER = re.compile(r"bearer[ \t]+")
_BEARER_CASELESS = re.compile(r"bearer[ \t]+", re.IGNORECASE)
_BEARER_VALUE = re.compile(r"[A-Za-z0-9._~+/\-]{8,}=*")

_NAME_TAIL = re.compile(r"[A-Za-z0-9_.\-]*\Z")
_VALUE = re.compile(r"""[ \t]*(?:"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)'|([^\s,;&)}\]"']+))""")
_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "negotiate", "apikey", "aws4-hmac-sha256"})
# Values that say "there is no secret here" and are more useful kept.
_PLACEHOLDERS = frozenset(
    {"none", "null", "nil", "true", "false", "str", "bytes", "any", "secretstr", "optional", "required"}
)
_AUTH_WORDS = frozenset({"authorization", "auth"})

Replacement = tuple[int, int, str]


def _is_placeholder(value: str) -> bool:
    if not value or value[0] in "<[$*={(" or value.startswith("%("):
        return True
    return value.lower() in _PLACEHOLDERS


def _marker_for(name: str) -> str:
    words = key_words(name)
    joined = "_".join(words)
    if "secret_access_key" in joined or "secretaccesskey" in joined:
        return marker("aws_secret_access_key")
    if words and words[-1] in _AUTH_WORDS:
        return marker("authorization")
    return marker("secret")


def _value_replacement(text: str, pos: int, name: str, quoted_key: bool) -> Replacement | None:
    """The span of the value that starts at ``pos`` and what replaces it."""
    m = _VALUE.match(text, pos)
    if m is None:
        return None
    is_auth = bool(key_words(name)) and key_words(name)[-1] in _AUTH_WORDS
    for group in (1, 2, 3):
        value = m.group(group)
        if value is None:
            continue
        start, end = m.span(group)
        if is_auth:
            scheme, _, rest = value.partition(" ")
            if scheme.lower() in _SCHEMES:
                if group != 3:  # "Bearer abc" inside quotes: keep the scheme word
                    if not rest.strip():
                        return None
                    start += len(scheme) + 1
                    value = rest
                else:  # Authorization: Bearer abc — the credential is the next word
                    return _value_replacement(text, end, name, quoted_key)
        if _is_placeholder(value.strip()):
            return None
        replacement = _marker_for(name)
        if group == 3 and quoted_key:
            replacement = f'"{replacement}"'
        return start, end, replacement
    return None


def _candidates(text: str, low: str | None) -> list[Replacement]:
    found: list[Replacement] = []
    keywords = _KEYWORDS if low is not None else _CASELESS
    haystack = low if low is not None else text
    for needle, pattern in keywords:
        if low is not None and needle not in low:
            continue
        for m in pattern.finditer(haystack):
            start = m.start()
            tail = _NAME_TAIL.search(text, max(0, start - 80), start)
            name_start = tail.start() if tail is not None else start
            separator = m.group(0)
            name_end = start + len(separator.rstrip(":= \t\"'"))
            name = text[name_start:name_end]
            if not is_secret_key(name):
                continue
            quoted_key = name_start > 0 and text[name_start - 1] in "\"'" and separator[-1] == ":"
            after = m.end()
            if after < len(text) and text[after] == "=":  # a comparison, "token == x"
                continue
            replacement = _value_replacement(text, after, name, quoted_key)
            if replacement is not None:
                found.append(replacement)
    bearer = _BEARER if low is not None else _BEARER_CASELESS
    if low is None or "bearer" in low:
        for m in bearer.finditer(haystack):
            v = _BEARER_VALUE.match(text, m.end())
            if v is not None:
                found.append((v.start(), v.end(), marker("authorization")))
    return found


def redact_assignments(text: str, low: str | None) -> tuple[str, int]:
    """Replace values assigned to secret-looking names. ``low`` is ``text.lower()`` when it
    has the same length as ``text`` (positions agree), else None and a slower path is used."""
    found = _candidates(text, low)
    if not found:
        return text, 0
    found.sort()
    parts: list[str] = []
    pos = 0
    count = 0
    for start, end, replacement in found:
        if start < pos:  # overlaps one already replaced (the header rule and "bearer" rule)
            continue
        parts.append(text[pos:start])
        parts.append(replacement)
        pos = end
        count += 1
    parts.append(text[pos:])
    return "".join(parts), count
