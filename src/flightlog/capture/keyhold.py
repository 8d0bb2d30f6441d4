"""Hold back a private key block that is still arriving, so it is redacted whole.

A key is printed over several lines and a pipe read can end anywhere inside it. Redacting each
read on its own would hide the first half (header plus body) and store the second half (more
base64 and the footer) in clear. So when a chunk ends inside a key block — a header, then only
base64 body lines up to the end of the chunk — that tail is held and put in front of the next
chunk. The hold is bounded in size and in time; if it has to be released unfinished, the
next chunk's leading body lines are still treated as the rest of that key.
"""

from __future__ import annotations

import re

from flightlog.capture.families import PRIVATE_KEY

__all__ = ["KeyHold"]

_HEADER = re.compile(rb"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_FOOTER_TEXT = b"-----END"
# Leading lines that can only be the rest of an interrupted key (base64 body or its footer).
_CONTINUATION = re.compile(
    rb"(?:[ \t]*[A-Za-z0-9+/=]{4,}[ \t]*\n)+(?:[ \t]*-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[^\n]*\n)?"
    rb"|[ \t]*-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[^\n]*\n"
)
_SYNTHETIC_HEADER = b"-----BEGIN PRIVATE KEY-----\n"


class KeyHold:
    """Per-stream hold on raw output. ``feed`` returns what may be processed now (maybe b"")."""

    __slots__ = ("_held", "_since", "_open", "max_chars", "idle")

    def __init__(self, idle: float, max_chars: int = 65536) -> None:
        self._held = b""
        self._since = 0.0
        self._open = False  # a key was released unfinished; its rest may follow
        self.max_chars = max_chars
        self.idle = idle

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def feed(self, text: bytes, now: float, final: bool = False) -> bytes:
        """Text that may be processed now; with ``final`` (end of stream) nothing is held."""
        if not text and not final:
            return b""
        if self._open and text:
            text = self._continue(text)
        if self._held:
            text = self._held + text
            self._held = b""
        elif b"PRIVATE KEY" not in text:
            return text
        if final:
            return text
        start = self._unfinished_block_start(text)
        if start is None:
            return text
        if len(text) - start > self.max_chars:
            self._open = True
            return text
        self._since = now  # quiet is measured from the last chunk that added to the block
        self._held = text[start:]
        return text[:start]

    def poll(self, now: float) -> bytes:
        """Release a block held longer than ``idle``: better redacted late than held forever."""
        if self._held and now - self._since >= self.idle:
            return self.flush()
        return b""

    def flush(self) -> bytes:
        text, self._held = self._held, b""
        if text:
            self._open = True
        return text

    def _continue(self, text: bytes) -> bytes:
        self._open = False
        m = _CONTINUATION.match(text)
        if m is None:
            return text
        if _FOOTER_TEXT not in m.group(0):
            self._open = True
        return _SYNTHETIC_HEADER + text

    @staticmethod
    def _unfinished_block_start(text: bytes) -> int | None:
        """Start of the line holding a key header whose block runs, unfinished, to the end."""
        headers = list(_HEADER.finditer(text))
        if not headers:
            return None
        last = headers[-1]
        block = PRIVATE_KEY.match(text, last.start())
        if block is None or _FOOTER_TEXT in block.group(0) or text[block.end() :].strip():
            return None
        return text.rfind(b"\n", 0, last.start()) + 1
