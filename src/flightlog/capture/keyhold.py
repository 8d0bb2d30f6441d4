"""Hold back a private key block that is still arriving, so it is redacted whole.

A key is printed over several lines and a pipe read can end anywhere inside it. Redacting each
read on its own would hide the first half (header plus body) and store the second half (more
base64 and the footer) in clear. So when a chunk ends inside a key block — a header, then only
base64 body lines up to the end of the chunk — that tail is held and put in front of the next
chunk. The hold is bounded in size and in time; if it has to be released unfinished, the
next chunk's leading body lines are still treated as the rest of that key.

Blocks whose every line carries a prefix (``[rank0]: …``, a timestamp) are held the same way;
``keyblocks.py`` says where a block ends, for both this hold and the redaction itself.
"""

from __future__ import annotations

import re

from flightlog.redaction.keyblocks import HEADER, key_block

__all__ = ["KeyHold"]

# Leading lines that can only be the rest of an interrupted key (base64 body or its footer).
_CONTINUATION = re.compile(
    rb"(?:[ \t]*[A-Za-z0-9+/=]{4,}[ \t]*\n)+(?:[ \t]*-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[^\n]*\n)?"
    rb"|[ \t]*-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[^\n]*\n"
)
_SYNTHETIC_HEADER = b"-----BEGIN PRIVATE KEY-----\n"


class KeyHold:
    """Per-stream hold on raw output. ``feed`` returns what may be processed now (maybe b"")."""

    __slots__ = ("_held", "_since", "_open", "_lead", "max_chars", "idle")

    def __init__(self, idle: float, max_chars: int = 65536) -> None:
        self._held = b""
        self._since = 0.0
        self._open = False  # a key was released unfinished; its rest may follow
        self._lead = b""  # the prefix of that key's lines, if they had one
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
            self._release(text[start:])
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
            self._release(text)
        return text

    def _release(self, block: bytes) -> None:
        """``block`` (from the start of its header's line) goes out unfinished."""
        self._open = True
        header = HEADER.search(block)
        lead = block[: header.start()] if header is not None else b""
        self._lead = lead if lead.strip() else b""

    def _continue(self, text: bytes) -> bytes:
        self._open = False
        if self._lead:  # put a header with the same prefix in front and see what follows it
            candidate = self._lead + _SYNTHETIC_HEADER + text
            block = key_block(candidate, len(self._lead))
            if len(block.spans) == 1 and block.spans[0][1] <= len(self._lead) + len(_SYNTHETIC_HEADER) - 1:
                self._lead = b""
                return text  # the key's rest is not there: text as it is
            self._open = block.open_end
            return candidate
        m = _CONTINUATION.match(text)
        if m is None:
            return text
        if b"-----END" not in m.group(0):
            self._open = True
        return _SYNTHETIC_HEADER + text

    @staticmethod
    def _unfinished_block_start(text: bytes) -> int | None:
        """Start of the line holding the first key header whose block runs, unfinished, to
        the end — or earlier, so as not to cut a block that reaches past that line (prefixed
        keys interleaved on one stream: a finished block may span an open one's header)."""
        blocks = []
        for header in HEADER.finditer(text):
            block = key_block(text, header.start())
            line_start = text.rfind(b"\n", 0, header.start()) + 1
            blocks.append((line_start, block.spans[-1][1], block.open_end))
        open_starts = [start for start, _, is_open in blocks if is_open]
        if not open_starts:
            return None
        cut = min(open_starts)
        moved = True
        while moved:
            moved = False
            for start, end, _ in blocks:
                if start < cut < end:
                    cut, moved = start, True
        return cut
