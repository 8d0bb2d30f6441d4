"""Secrets recognised by their *name*: ``password=…``, ``"api_key": "…"``, ``Authorization: …``.

How it stays fast: the chunk (raw bytes, see ``families.py``) is lower-cased once — ASCII
only, so positions do not move — and searched for a handful of keywords (``pass``,
``secret``, ``token``, …) directly followed by ``=`` or ``:``. Each keyword pattern starts
with a literal, so the regex engine skips straight to candidates; ``tokens=123`` and
``max_tokens=1024`` never match because the keyword must end the name. Only the few
candidates are examined in Python: the whole name is read backwards from the keyword and
judged by ``names.is_secret_name``, then the value after the separator is replaced.

JSON stays valid: a quoted value keeps its quotes, and an unquoted value of a quoted key
(``"password": 12345``) becomes a quoted marker.
"""

from __future__ import annotations

import re

from flightlog.redaction.families import marker_bytes, splice
from flightlog.redaction.names import VARIANT_WORDS, is_secret_name, key_words

__all__ = ["redact_assignments"]

# A variant suffix may follow the keyword (``api_key_2=``, ``DB_PASSWORD_PROD=``; names.py).
_VARIANTS = "|".join(sorted(VARIANT_WORDS, key=len, reverse=True)).encode()
_SEP = (
    rb"(?:[_.\-](?:v?\d+|"
    + _VARIANTS
    + rb"))*"
    # ``password=…``, ``"token": …``, or a command-line option and its value in a logged
    # command (``docker login --password X``): a blank separator counts only after ``--``.
    + rb"""(?:["']?[ \t]*[:=]|[ \t]+(?=[^\s\-]))"""
)
_KEYWORDS: tuple[re.Pattern[bytes], ...] = (
    re.compile(rb"p(?:ass(?:word|wd|phrase)?|wd)" + _SEP),
    re.compile(rb"secret" + _SEP),
    re.compile(rb"token" + _SEP),
    re.compile(rb"keys?" + _SEP),
    re.compile(rb"credentials?" + _SEP),
    re.compile(rb"auth(?:orization)?" + _SEP),
    re.compile(rb"dsn" + _SEP),
    re.compile(rb"cookies?" + _SEP),
    re.compile(rb"signature" + _SEP),
    re.compile(rb"str(?:ing)?" + _SEP),  # connection_string=…
)
_BEARER = re.compile(rb"bearer[ \t]+")
_BEARER_VALUE = re.compile(rb"[A-Za-z0-9._~+/\-]{8,}=*")

_NAME_TAIL = re.compile(rb"[A-Za-z0-9_.\-]*\Z")
_VALUE = re.compile(rb"""[ \t]*(?:"((?:[^"\\\n]|\\.)*)"|'([^'\n]*)'|([^\s,;&)}\]"']+))""")
_SCHEMES = frozenset({b"bearer", b"basic", b"token", b"digest", b"negotiate", b"apikey", b"aws4-hmac-sha256"})
# Values that say "there is no secret here" and are more useful kept.
_PLACEHOLDERS = frozenset(
    {
        b"none",
        b"null",
        b"nil",
        b"true",
        b"false",
        b"str",
        b"bytes",
        b"any",
        b"secretstr",
        b"optional",
        b"required",
    }
)
_PLACEHOLDER_FIRST = frozenset(b"<[$*={(")
_AUTH_WORDS = frozenset({"authorization", "auth"})
_SEPARATOR_CHARS = b":= \t\"'"
_BLANKS = (b" ", b"\t")
_PROSE = frozenset(
    {
        b"to",
        b"is",
        b"was",
        b"for",
        b"and",
        b"or",
        b"the",
        b"a",
        b"an",
        b"in",
        b"of",
        b"with",
        b"option",
        b"flag",
        b"argument",
        b"instead",
        b"not",
        b"must",
        b"should",
        b"can",
    }
)
_BLANK_BYTES = frozenset(b" \t\"'=([")
_QUOTES = b"\"'"
_QUOTE_BYTES = (b'"', b"'")

Replacement = tuple[int, int, bytes]


def _is_placeholder(value: bytes) -> bool:
    if not value or value[0] in _PLACEHOLDER_FIRST or value.startswith(b"%("):
        return True
    return value.lower() in _PLACEHOLDERS


def _marker_for(words: list[str]) -> bytes:
    joined = "_".join(words)
    if "secret_access_key" in joined or "secretaccesskey" in joined:
        return marker_bytes("aws_secret_access_key")
    if words and words[-1] in _AUTH_WORDS:
        return marker_bytes("authorization")
    return marker_bytes("secret")


def _value_replacement(data: bytes, pos: int, words: list[str], quoted_key: bool) -> Replacement | None:
    """The span of the value that starts at ``pos`` and what replaces it."""
    m = _VALUE.match(data, pos)
    if m is None:
        return None
    is_auth = bool(words) and words[-1] in _AUTH_WORDS
    for group in (1, 2, 3):
        value = m.group(group)
        if value is None:
            continue
        start, end = m.span(group)
        if is_auth:
            scheme, _, rest = value.partition(b" ")
            if scheme.lower() in _SCHEMES:
                if group != 3:  # "Bearer abc" inside quotes: keep the scheme word
                    if not rest.strip():
                        return None
                    start += len(scheme) + 1
                    value = rest
                else:  # Authorization: Bearer abc — the credential is the next word
                    return _value_replacement(data, end, words, quoted_key)
        if _is_placeholder(value.strip()):
            return None
        replacement = _marker_for(words)
        if group == 3 and quoted_key:
            replacement = b'"' + replacement + b'"'
        return start, end, replacement
    return None


def _candidates(data: bytes, low: bytes) -> list[Replacement]:
    found: list[Replacement] = []
    for pattern in _KEYWORDS:
        for m in pattern.finditer(low):
            start = m.start()
            tail = _NAME_TAIL.search(data, max(0, start - 80), start)
            name_start = tail.start() if tail is not None else start
            separator = m.group(0)
            name_end = start + len(separator.rstrip(_SEPARATOR_CHARS))
            name = data[name_start:name_end].decode("ascii", "replace")
            if separator[-1:] in _BLANKS:  # "--password X": only an option's value, not prose
                if not name.startswith("--") or (name_start > 0 and data[name_start - 1] not in _BLANK_BYTES):
                    continue
                name = name[2:]
                word = _VALUE.match(data, m.end())
                if word is not None and (word.group(3) or b"").lower() in _PROSE:
                    continue  # "use --password to set it" talks about the option
            if not is_secret_name(name):
                continue
            after = m.end()
            if data[after : after + 1] == b"=":  # a comparison, "token == x"
                continue
            # "password": … (JSON, a Python dict): the quotes hug the name on both sides.
            quoted_key = (
                name_start > 0 and data[name_start - 1] in _QUOTES and data[name_end : name_end + 1] in _QUOTE_BYTES
            )
            replacement = _value_replacement(data, after, key_words(name), quoted_key)
            if replacement is not None:
                found.append(replacement)
    for m in _BEARER.finditer(low):
        v = _BEARER_VALUE.match(data, m.end())
        if v is not None:
            found.append((v.start(), v.end(), marker_bytes("authorization")))
    return found


def redact_assignments(data: bytes) -> tuple[bytes, int]:
    """Replace values assigned to secret-looking names; return the data and the count."""
    return splice(data, _candidates(data, data.lower()))
