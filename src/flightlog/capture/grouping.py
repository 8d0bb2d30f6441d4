"""Turn one stream's lines into events: one per line, one per multi-line block.

Why the last line is always held back: the next line may be an indented continuation of it,
or a chained exception may follow a traceback, and that is only known when the next line (or
``group_idle`` of quiet) arrives. Everything else is emitted as soon as it is complete.

Why two paths: ordinary lines (no special first character, no block open) are appended to the
batch a whole run at a time with ``list.extend``; only *special* lines — indented, ``{``,
level prefixes, stack-trace headers — and lines inside an open stack trace are examined one
by one. A plain log therefore costs a few list operations per chunk, not per line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from flightlog.capture.blocks import END, HOLD, TAKE, Block, PlainBlock, start_block
from flightlog.capture.parse import INFO, classify, parse_json, parse_logfmt
from flightlog.logevents import LogBatch

__all__ = ["StreamGrouper", "SPECIAL_FIRST", "special_lines"]

_INDENT = (" ", "\t")

#: First characters that may make a line more than a plain info event.
SPECIAL_FIRST = frozenset(" \t{[#*=/0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZcefptw")
# The same set, searched after every newline of a chunk at once: most chunks of plain output
# have no special line at all, and one regex scan (the engine jumps from "\n" to "\n") says so.
_SPECIAL_AFTER_NEWLINE = re.compile("\n[" + "".join(re.escape(c) for c in sorted(SPECIAL_FIRST)) + "]")
_LOGFMT_NEEDLES = ("level=", "lvl=", "severity=")


def special_lines(text: str, lines: list[str], progress: list[int]) -> list[int]:
    """Indices, ascending, of the lines of ``text`` that the grouper must look at one by one:
    a special first character, a logfmt level anywhere, or a collapsed progress line."""
    logfmt = any(needle in text for needle in _LOGFMT_NEEDLES)
    starts = bool(lines) and (lines[0][:1] in SPECIAL_FIRST or _SPECIAL_AFTER_NEWLINE.search(text) is not None)
    if not starts and not logfmt:
        return progress
    special = SPECIAL_FIRST
    if logfmt:
        found = [
            i
            for i, line in enumerate(lines)
            if line[:1] in special or "level=" in line or "lvl=" in line or "severity=" in line
        ]
    else:
        found = [i for i, line in enumerate(lines) if line[:1] in special]
    if progress:
        found = sorted(set(found).union(progress))
    return found


class StreamGrouper:
    """Per-stream state: the pending block and where events go.

    ``max_block_chars`` bounds a block (an endless indented listing is not one event): past it
    the block is emitted and the following lines start afresh.
    """

    __slots__ = ("stream", "rank", "attempt", "idle", "max_block_chars", "_pending")

    def __init__(
        self, stream: str, *, rank: int | None, attempt: int, idle: float, max_block_chars: int
    ) -> None:
        self.stream = stream
        self.rank = rank
        self.attempt = attempt
        self.idle = idle
        self.max_block_chars = max_block_chars
        self._pending: Block | None = None

    @property
    def pending(self) -> bool:
        return self._pending is not None

    # --- feeding ------------------------------------------------------------------------

    def feed(
        self,
        lines: list[str],
        specials: Sequence[int],
        progress: frozenset[int] | set[int],
        now: float,
        out: LogBatch,
    ) -> None:
        """Add ``lines`` (all completed at ``now``); ``specials`` lists, in order, the indices
        of lines that need a closer look; ``progress`` those that were ``\\r``-collapsed."""
        n = len(lines)
        i = 0
        k = 0
        n_special = len(specials)
        one = self._one
        while i < n:
            block = self._pending
            if block is not None and not block.bulk_ends:
                one(lines[i], i in progress, now, out, True)
                i += 1
                continue
            while k < n_special and specials[k] < i:
                k += 1
            j = specials[k] if k < n_special else n
            if j == i:
                # Hold the line as a block only if the next line could continue it.
                nxt = i + 1
                hold = nxt >= n or (lines[nxt].startswith(_INDENT) and nxt not in progress)
                one(lines[i], i in progress, now, out, hold)
                i += 1
                continue
            # lines[i:j] are ordinary: each ends what came before and none continues another.
            if block is not None:
                self._pending = None
                self._emit(block, out)
            if j - 1 > i:
                self._emit_plain(lines[i : j - 1], now, out)
            self._pending = PlainBlock(lines[j - 1], now, INFO)
            i = j

    def _one(self, line: str, is_progress: bool, now: float, out: LogBatch, hold: bool = True) -> None:
        """One line through the pending block; ``hold`` is False when the next line is
        known not to continue this one, so a plain line can be emitted at once."""
        block = self._pending
        if block is not None:
            verdict = END if is_progress else block.accept(line)
            if verdict == TAKE:
                block.take(line, now)
                if block.chars > self.max_block_chars:
                    self._pending = None
                    self._emit(block, out)
                return
            if verdict == HOLD:
                block.hold(line, now)
                return
            self._pending = None
            self._emit(block, out)
            if block.held:  # lines kept aside for a chain that did not come: start over
                for held in block.held:
                    self._one(held, False, now, out)
                self._one(line, is_progress, now, out, hold)
                return
        self._start(line, is_progress, now, out, hold)

    def _start(self, line: str, is_progress: bool, now: float, out: LogBatch, hold: bool) -> None:
        if is_progress:
            self._emit_plain([line], now, out)
            return
        first = line[:1]
        if first == "{":
            parsed = parse_json(line)
            if parsed is not None:
                self._append(out, now, parsed.level, parsed.message, parsed.component, parsed.fields)
                return
        block = start_block(line, now)
        if block is None:
            if "level=" in line or "lvl=" in line or "severity=" in line:
                parsed = parse_logfmt(line)
                if parsed is not None:
                    self._append(out, now, parsed.level, parsed.message, parsed.component, parsed.fields)
                    return
            level, component = classify(line)
            if not hold:
                self._append(out, now, level, line, component, None)
                return
            block = PlainBlock(line, now, level, component)
        self._pending = block

    # --- flushing -----------------------------------------------------------------------

    def poll(self, now: float, out: LogBatch) -> None:
        """Emit the pending block when nothing has been added to it for ``idle`` seconds."""
        block = self._pending
        if block is not None and now - block.last >= self.idle:
            self.flush(out)

    def flush(self, out: LogBatch) -> None:
        block = self._pending
        if block is None:
            return
        self._pending = None
        self._emit(block, out)
        if block.held:
            self._emit_plain(block.held, block.last, out)

    # --- output -------------------------------------------------------------------------

    def _emit(self, block: Block, out: LogBatch) -> None:
        self._append(
            out,
            block.time,
            block.level,
            block.message() if len(block.lines) > 1 else block.lines[0],
            block.component,
            block.describe(),
        )

    def _append(
        self,
        out: LogBatch,
        time: float,
        level: int,
        message: str,
        component: str | None,
        fields: dict[str, Any] | None,
    ) -> None:
        # LogBatch.append with its keyword arguments costs twice as much; this is per event.
        out.time.append(time)
        out.stream.append(self.stream)
        out.level.append(level)
        out.component.append(component)
        out.message.append(message)
        out.fields.append(fields)
        out.rank.append(self.rank)
        out.attempt.append(self.attempt)
        out.stage.append(None)

    def _emit_plain(self, lines: list[str], now: float, out: LogBatch) -> None:
        n = len(lines)
        out.time.extend([now] * n)
        out.stream.extend([self.stream] * n)
        out.level.extend([INFO] * n)
        out.component.extend([None] * n)
        out.message.extend(lines)
        out.fields.extend([None] * n)
        out.rank.extend([self.rank] * n)
        out.attempt.extend([self.attempt] * n)
        out.stage.extend([None] * n)
