"""From raw pipe reads to the complete lines of one stream, and from those to text lines.

Why the partial line is kept as *bytes*: a multi-byte UTF-8 character split across two reads
stays whole, because nothing is decoded until its newline has arrived. Why ``\\r`` is collapsed
while the line is still partial: a progress bar that refreshes for hours without a newline must
not grow a buffer without bound. Why over-long partial lines are cut here: the same bound, for
a child that writes a gigabyte without a newline.

``decode`` uses ``errors="backslashreplace"``: bytes that are not UTF-8 are kept, visibly, as
``\\xNN`` instead of being dropped or crashing the reader. It runs on complete lines only.
"""

from __future__ import annotations

import re

__all__ = [
    "LineSplitter",
    "decode",
    "strip_ansi",
    "collapse_progress",
    "split_lines",
    "truncate_lines",
    "truncation_marker",
    "utf8_cut",
]

_ENCODING = "utf-8"
_ERRORS = "backslashreplace"


def decode(data: bytes) -> str:
    """Complete lines to text; invalid UTF-8 bytes become visible ``\\xNN`` escapes."""
    return data.decode(_ENCODING, _ERRORS)


# Terminal escape sequences: CSI (colours ``\x1b[31m``, cursor moves ``\x1b[2K``), OSC (titles,
# hyperlinks; ended by BEL or ST) and the two-byte escapes. Colours around a level word
# (``\x1b[31mERROR\x1b[0m: disk full``) would otherwise hide it from level detection.
_ANSI = re.compile(
    rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[@-Z\\^_]|[ -/]+[0-~])"
)  # (not the 8-bit CSI 0x9b: in UTF-8 that byte is part of ordinary characters)


def strip_ansi(data: bytes) -> bytes:
    """``data`` without terminal escape sequences; ``data`` itself when it has none (one scan).

    Applied to what is stored and parsed only: the terminal still gets the raw bytes."""
    if b"\x1b" not in data:
        return data
    return _ANSI.sub(b"", data)


def truncation_marker(dropped_bytes: int) -> str:
    """The visible note that replaces the end of an over-long line."""
    return f" … [truncated {dropped_bytes} bytes]"


_MARKER = re.compile(r" … \[truncated (\d+) bytes\]$")


def utf8_cut(data: bytes | bytearray, limit: int) -> int:
    """The largest cut ``<= limit`` that does not split a UTF-8 character."""
    if len(data) <= limit:
        return len(data)
    cut = limit
    # Step back over continuation bytes (0b10xxxxxx), at most three of them.
    while cut > 0 and limit - cut < 3 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return cut


def _collapse_partial(buf: bytes) -> bytes:
    """Keep only what a refreshed partial line still needs: its last visible state.

    The result starts with ``\\r`` so the completed line is still known as progress output.
    A trailing blank segment (tqdm clears a bar with spaces) is kept after the last non-blank
    one, because text written after it belongs to the same refresh.
    """
    segments = buf.split(b"\r")
    tail = segments[-1]
    if tail.strip():
        return b"\r" + tail
    for segment in reversed(segments[:-1]):
        if segment.strip():
            return b"\r" + segment + b"\r" + tail
    return b"\r" + tail


class LineSplitter:
    """Per-stream splitter: ``feed(bytes)`` returns the bytes of the lines it completed.

    The result is empty or ends with ``b"\\n"``; it is decoded later, after redaction (see
    ``families.py`` for why redaction works on bytes). ``counts`` (shared with the pipeline)
    receives ``truncated_lines`` for partial lines that had to be cut.
    """

    __slots__ = ("_limit", "_pending", "_dropped", "_counts")

    def __init__(self, max_line_bytes: int, counts: dict[str, int]) -> None:
        self._limit = max(1, max_line_bytes)
        # A bytearray: a line written a byte at a time grows in amortised constant time.
        self._pending = bytearray()
        self._dropped = 0
        self._counts = counts

    def feed(self, data: bytes) -> bytes:
        last_nl = data.rfind(b"\n")
        if last_nl < 0:
            self._keep(data)
            return b""
        if self._pending or self._dropped:
            first_nl = data.find(b"\n")
            self._keep(data[:first_nl])
            complete = self._take() + data[first_nl : last_nl + 1]
        elif last_nl == len(data) - 1:
            complete = data
        else:
            complete = data[: last_nl + 1]
        self._keep(data[last_nl + 1 :])
        return complete

    def flush(self) -> bytes:
        """The partial line at end of stream, as a final line (empty when there is none)."""
        if not self._pending and not self._dropped:
            return b""
        return self._take() + b"\n"

    def _keep(self, tail: bytes) -> None:
        if not tail:
            return
        pending = self._pending
        if self._dropped:
            cr = tail.rfind(b"\r")
            after = tail[cr + 1 :] if cr >= 0 else b""
            if cr < 0 or not after.strip():
                # Still inside the over-long segment (or a blank refresh of it): count only.
                self._dropped += len(tail)
                return
            # A refresh replaced the over-long segment: start over from the new state.
            self._dropped = 0
            pending[:] = b"\r" + after
        else:
            refreshed = pending.endswith(b"\r") or b"\r" in tail[:-1]
            pending += tail
            if refreshed:  # a "\r" with something after it: keep only the last state
                pending[:] = _collapse_partial(bytes(pending))
        if len(pending) > self._limit:
            cut = utf8_cut(pending, self._limit)
            self._dropped += len(pending) - cut
            del pending[cut:]

    def _take(self) -> bytes:
        line = bytes(self._pending)
        if self._dropped:
            line += truncation_marker(self._dropped).encode()
            self._counts["truncated_lines"] += 1
        self._pending.clear()
        self._dropped = 0
        return line


def collapse_progress(line: str) -> str:
    """``"10%\\r20%\\r30%"`` → ``"30%"``: the last non-blank state of a refreshed line."""
    segments = line.split("\r")
    for segment in reversed(segments):
        if segment.strip():
            return segment
    return ""


def split_lines(text: str) -> tuple[list[str], list[int]]:
    """Split completed text (ending in ``"\\n"``) into lines; collapse ``\\r`` refreshes.

    Returns the lines and the indices of lines that were progress output, so grouping does
    not take a refreshed bar (which often starts with spaces) for an indented continuation.
    A lone ``\\r`` before the newline (``\\r\\n`` line endings) is dropped, nothing more.
    """
    lines = text[:-1].split("\n")
    if "\r" not in text:
        return lines, []
    progress = []
    for i in [i for i, line in enumerate(lines) if "\r" in line]:
        line = lines[i]
        if line.find("\r") == len(line) - 1:  # "\r\n": a plain line ending
            lines[i] = line[:-1]
        else:
            lines[i] = collapse_progress(line)
            progress.append(i)
    return lines, progress


def truncate_lines(lines: list[str], max_line_bytes: int, counts: dict[str, int]) -> None:
    """Cut lines longer than ``max_line_bytes`` (UTF-8) in place, with a visible marker.

    A character is at most four bytes, so lines of fewer than a quarter of the limit in
    characters are skipped without encoding them; most chunks cost one ``max()``.
    """
    quarter = max_line_bytes // 4
    if not lines or max(map(len, lines)) <= quarter:
        return
    for i, line in enumerate(lines):
        if len(line) <= quarter:
            continue
        # A line the splitter already cut carries its marker: count on from it, once.
        earlier = _MARKER.search(line, len(line) - 48)
        if earlier is not None:
            line = line[: earlier.start()]
        raw = line.encode(_ENCODING, _ERRORS)
        if len(raw) <= max_line_bytes:
            continue
        cut = utf8_cut(raw, max_line_bytes)
        dropped = len(raw) - cut + (int(earlier.group(1)) if earlier is not None else 0)
        lines[i] = raw[:cut].decode(_ENCODING, _ERRORS) + truncation_marker(dropped)
        if earlier is None:
            counts["truncated_lines"] += 1
