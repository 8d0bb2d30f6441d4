"""Where a private key block ends, including when every line of it carries a prefix.

A key printed bare is one regex (``PRIVATE_KEY``): the header, base64 body lines, the footer.
But keys are often printed through something that prefixes *every* line: a logger
(``INFO:app:``), ``kubectl logs --timestamps``, torchrun's ``[rank0]:``. Then the body lines
do not start with base64 and the regex stops after the header, which would store the body in
clear. So the text before the header on its line is taken as the block's prefix and each
following line may repeat it — literally, or with different numbers (timestamps tick, ranks
differ), since digit runs in the prefix match any digit run.

``key_block`` is shared by the redaction family (``families.py``) and by the hold on an
unfinished block (``keyhold.py``), so the two always agree on where a block ends.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["HEADER", "PRIVATE_KEY", "KeyBlock", "key_block", "line_prefix", "prefix_pattern"]

# A line break inside a key block: a real newline, or ``\n`` escaped inside a JSON string.
_KEY_SEP = r"(?:\r?\n|\\(?:r\\)?n)"
# A body line is whole: base64 or a header, then the end of the line (or of a JSON string).
_KEY_BODY_LINE = (
    r"[ \t]*(?:(?:Proc-Type|DEK-Info|Comment|Version):[^\n\\\"]*|[A-Za-z0-9+/=]+)?[ \t]*"
    r"(?=\r?\n|\\(?:r\\)?n|\"|\Z)"
)
_KEY_HEADER = r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_KEY_FOOTER = r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"

HEADER = re.compile(_KEY_HEADER.encode())
#: A bare private key block: the header, the base64 body lines, and the footer when it is
#: there. Without a footer the block ends at the first line that is not base64, so an
#: unterminated key is still hidden while ordinary text after it is not.
PRIVATE_KEY = re.compile(rf"{_KEY_HEADER}(?:{_KEY_SEP}{_KEY_BODY_LINE})*(?:{_KEY_SEP}?[ \t]*{_KEY_FOOTER})?".encode())
# What may follow a prefix on a line of the block (the line without its newline).
_PREFIXED_BODY = re.compile(rb"[ \t]*(?:(?:Proc-Type|DEK-Info|Comment|Version):[^\n]*|[A-Za-z0-9+/=]+)?[ \t]*\r?")
_PREFIXED_FOOTER = re.compile(rb"[ \t]*" + _KEY_FOOTER.encode())
_DIGITS = re.compile(rb"\d+")
_FOOTER_TEXT = b"-----END"


def prefix_pattern(prefix: bytes) -> re.Pattern[bytes]:
    """A regex for ``prefix`` in which every digit run matches any digit run
    (``2026-12-01T10:00:00.5Z`` also matches ``…:01.123Z``; ``[rank0]:`` matches ``[rank1]:``)."""
    parts: list[bytes] = []
    pos = 0
    for m in _DIGITS.finditer(prefix):
        parts.append(re.escape(prefix[pos : m.start()]))
        parts.append(rb"\d+")
        pos = m.end()
    parts.append(re.escape(prefix[pos:]))
    return re.compile(b"".join(parts))


def line_prefix(data: bytes, header_start: int) -> bytes:
    """The text before the header on its line."""
    return data[data.rfind(b"\n", 0, header_start) + 1 : header_start]


class KeyBlock(NamedTuple):
    """Where a key block lies: ``spans`` to hide, in order — the first (from the header) gets
    the marker, the others are removed (a prefixed body line with its newline) — and whether
    it ran, without its footer, to the end of the data (it may go on in the next read)."""

    spans: list[tuple[int, int]]
    open_end: bool


# At most this many lines in a row without the block's prefix (another thread, another rank's
# output) inside a prefixed block; past that the block is over.
MAX_FOREIGN_LINES = 16


def key_block(data: bytes, header_start: int) -> KeyBlock:
    """The block whose header starts at ``header_start``.

    A bare block is one regex match. When the header's line has a prefix, the following
    lines that repeat the prefix (digits may differ) and go on as base64 belong to the block,
    up to the footer; lines without the prefix in between are skipped over and kept.
    """
    bare = PRIVATE_KEY.match(data, header_start)
    if bare is None:  # not a header after all
        return KeyBlock([(header_start, header_start)], False)
    end = bare.end()
    if _FOOTER_TEXT in bare.group(0):
        return KeyBlock([(header_start, end)], False)
    prefix = line_prefix(data, header_start)
    if not prefix.strip():
        return KeyBlock([(header_start, end)], not data[end:].strip())
    spans, open_end = _prefixed_lines(data, end, prefix_pattern(prefix))
    first = (header_start, end)
    if spans and spans[0][0] == end:  # the body follows the header directly: one span
        first = (header_start, spans.pop(0)[1])
    return KeyBlock([first, *spans], open_end)


def _prefixed_lines(data: bytes, pos: int, prefix: re.Pattern[bytes]) -> tuple[list[tuple[int, int]], bool]:
    """From ``pos`` (the end of the header or of a body line): the spans ``(newline, end of
    line)`` of the following lines that are the block's prefix and then body or footer, and
    whether the data ran out before the footer."""
    spans: list[tuple[int, int]] = []
    foreign = 0
    nl = data.find(b"\n", pos)
    if nl < 0 or data[pos:nl].strip():  # text after the header on its line: no block
        return spans, nl < 0 and not data[pos:].strip()
    while True:
        start = nl + 1
        if start >= len(data):
            return spans, True
        nl = data.find(b"\n", start)
        line_end = len(data) if nl < 0 else nl
        m = prefix.match(data, start, line_end)
        if m is None:
            foreign += 1
            if foreign > MAX_FOREIGN_LINES:
                return spans, False
        else:
            foreign = 0
            rest = m.end()
            footer = _PREFIXED_FOOTER.match(data, rest, line_end)
            if footer is not None:
                spans.append((start - 1, footer.end()))
                return spans, False
            if _PREFIXED_BODY.fullmatch(data, rest, line_end) is None:
                return spans, False
            spans.append((start - 1, line_end))
        if nl < 0:
            return spans, True
