"""Turn a filter or ordering expression into tokens, each with the offset where it starts.

Why a hand-written lexer: every mistake must point at the exact character that caused it
(``FilterSyntaxError.position``), and the language is small enough that a loop over the text
is clearer than a generated scanner.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from flightlog.errors import FilterSyntaxError

__all__ = ["Token", "TokenKind", "tokenize"]

TokenKind = Literal["word", "path", "string", "number", "duration", "op", "sign", "(", ")", ",", "eof"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_/\-]*")
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_ALNUM_RUN = re.compile(r"[A-Za-z0-9_.]+")
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+", re.IGNORECASE | re.ASCII)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)", re.IGNORECASE | re.ASCII)
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_OPERATORS = ("==", "!=", "<>", "<=", ">=", "!~", "=", "<", ">", "~")
_STRING_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "`": "`", "n": "\n", "t": "\t", "r": "\r"}
_HINTS = {"&": "`and` instead of &&", "|": "`or` instead of ||", "!": "`!=`, `!~` or `not`"}


@dataclass(frozen=True, slots=True)
class Token:
    """One token. ``value`` is decoded: a string's text, a number, seconds of a duration,
    a path's ``(prefix, key)``; ``text`` is the source as written."""

    kind: TokenKind
    value: object
    text: str
    position: int


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens, ending with one ``eof`` token at ``len(text)``."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        start = i
        if c in "'\"":
            value, i = _read_quoted(text, i)
            tokens.append(Token("string", value, text[start:i], start))
        elif c == "`":
            key, i = _read_quoted(text, i)
            _need_key(text, key, start)
            tokens.append(Token("path", ("", key), text[start:i], start))
        elif (c.isdigit() or c in "-.") and _NUMBER.match(text, i):  # ASCII digits only: "¹".isdigit() too
            tokens.append(_read_number(text, i))
            i = start + len(tokens[-1].text)
        elif (c.isascii() and c.isalpha()) or c == "_":  # what _WORD reads; other letters are refused below
            token = _read_word(text, i)
            tokens.append(token)
            i = start + len(token.text)
        elif c in "(),":
            tokens.append(Token(c, c, c, start))  # type: ignore[arg-type]
            i += 1
        elif c in "+-":
            tokens.append(Token("sign", c, c, start))
            i += 1
        else:
            op = next((o for o in _OPERATORS if text.startswith(o, i)), None)
            if op is None:
                hint = _HINTS.get(c, "an operator: = != < <= > >= ~ like in is")
                raise FilterSyntaxError(f"unexpected character {c!r}", expression=text, position=i, expected=hint)
            tokens.append(Token("op", op, op, start))
            i += len(op)
    tokens.append(Token("eof", None, "", n))
    return tokens


def _read_quoted(text: str, start: int) -> tuple[str, int]:
    """Read a '…', "…" or `…` literal with backslash escapes. An escape this language does
    not know (``\\%``) keeps its backslash so LIKE patterns can escape ``%`` and ``_``."""
    quote, i = text[start], start + 1
    out: list[str] = []
    while i < len(text):
        c = text[i]
        if c == quote:
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append(_STRING_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    what = "key" if quote == "`" else "string"
    raise FilterSyntaxError(
        f"unterminated {what} starting with {quote}",
        expression=text,
        position=start,
        expected=f"a closing {quote}",
    )


def _read_number(text: str, i: int) -> Token:
    m = _NUMBER.match(text, i)
    assert m is not None  # the caller checked that a number starts here
    end = m.end()
    if end < len(text) and (text[end].isalpha() or text[end] in "_."):
        run = _ALNUM_RUN.match(text, i + (text[i] == "-"))
        assert run is not None
        word = run.group()
        if text[i] != "-" and _DURATION.fullmatch(word):
            seconds = sum(float(v) * _UNITS[u.lower()] for v, u in _DURATION_PART.findall(word))
            return Token("duration", seconds, word, i)
        raise FilterSyntaxError(
            f"invalid number or duration {text[i : run.end()]!r}",
            expression=text,
            position=i,
            expected="a number (3, -0.5, 1e-3) or a duration (90s, 30m, 1h30m, 7d)",
        )
    number_text = m.group()
    is_int = not any(ch in number_text for ch in ".eE")
    return Token("number", int(number_text) if is_int else float(number_text), number_text, i)


def _read_word(text: str, i: int) -> Token:
    """A keyword or column (``status``) or a dotted path (``params.optimizer.`beta 1```)."""
    m = _WORD.match(text, i)
    assert m is not None
    word, end = m.group(), m.end()
    if end >= len(text) or text[end] != ".":
        return Token("word", word, word, i)
    parts: list[str] = []
    while end < len(text) and text[end] == ".":
        end += 1
        if end < len(text) and text[end] == "`":
            key, after = _read_quoted(text, end)
            _need_key(text, key, end)
            parts.append(key)
            end = after
            continue
        seg = _SEGMENT.match(text, end)
        if seg is None:
            raise FilterSyntaxError(
                f"missing key after {text[i:end]!r}",
                expression=text,
                position=end,
                expected="a key, e.g. params.lr, or one in backquotes: params.`batch size`",
            )
        parts.append(seg.group())
        end = seg.end()
    return Token("path", (word, ".".join(parts)), text[i:end], i)


def _need_key(text: str, key: str, position: int) -> None:
    if not key:
        raise FilterSyntaxError("empty key in backquotes", expression=text, position=position, expected="a key name")
