"""Turn one stream's lines into events: one per line, one per multi-line block.

Why a line is sometimes held back: the line after it may be an indented continuation, or a
chained exception may follow a traceback. When the next line is already in the same chunk the
question is answered at once; the last line of a chunk, and a traceback that may still go on,
wait for the next read or for ``group_idle`` of quiet. Everything else is emitted as soon as
it is complete.

Why two paths: ordinary lines (no special first character, no block open) are appended to the
batch a whole run at a time with ``list.extend``; only *special* lines — indented, ``{``,
level prefixes, stack-trace headers — and lines inside an open stack trace are examined one
by one. A plain log therefore costs a few list operations per chunk, not per line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import chain
from typing import Any

from flightlog.capture.blocks import END, HOLD, PY_TRACEBACK_HEADER, TAKE, Block, PlainBlock, start_block
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


# Lines starting with these never open a stack trace or hold JSON: after a cheap check for a
# logfmt level they go straight to ``classify`` (timestamps, level words, glog letters, …).
_DIRECT_FIRST = frozenset("[/0123456789ABCDGHIJKLMNOPQRUVWXYZcetw")

Row = tuple[float, int, str, str | None, dict[str, Any] | None]


class StreamGrouper:
    """Per-stream state: the pending block and where events go.

    ``max_block_chars`` bounds a block (an endless indented listing is not one event): past it
    the block is emitted and the following lines start afresh.

    Events are collected as rows ``(time, level, message, component, fields)`` and written to
    the batch's columns a run at a time, which costs a third of appending to nine lists.
    """

    __slots__ = ("stream", "rank", "attempt", "idle", "max_block_chars", "_pending", "_rows")

    def __init__(self, stream: str, *, rank: int | None, attempt: int, idle: float, max_block_chars: int) -> None:
        self.stream = stream
        self.rank = rank
        self.attempt = attempt
        self.idle = idle
        self.max_block_chars = max_block_chars
        self._pending: Block | None = None
        self._rows: list[Row] = []

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
        rows = self._rows
        add = rows.append
        one = self._one
        n = len(lines)
        pos = 0  # lines before pos are done
        for i in chain(specials, (n,)):
            if i < pos:
                continue
            if pos < i:  # lines[pos:i] are ordinary
                block = self._pending
                while pos < i and block is not None and not block.bulk_ends:  # in a stack trace
                    one(lines[pos], False, now, True)
                    pos += 1
                    block = self._pending
                if pos < i:  # each ordinary line ends what came before; none continues another
                    if block is not None:
                        self._pending = None
                        self._emit(block)
                    if i - 1 > pos:
                        self._flush_rows(out)
                        self._extend_plain(lines[pos : i - 1], now, out)
                    self._pending = PlainBlock(lines[i - 1], now, INFO)
                    pos = i
            if i == n:
                break
            line = lines[i]
            is_progress = i in progress
            nxt = i + 1
            # Hold the line as a block only if the next line could continue it.
            hold = nxt >= n or (lines[nxt].startswith(_INDENT) and nxt not in progress)
            if (
                self._pending is None
                and not is_progress
                and line[:1] in _DIRECT_FIRST
                and "l=" not in line  # level=, lvl=: logfmt takes the general path
                and "y=" not in line  # severity=
            ):
                level, component = classify(line)
                if hold:
                    self._pending = PlainBlock(line, now, level, component)
                else:
                    add((now, level, line, component, None))
            else:
                one(line, is_progress, now, hold)
            pos = nxt
        self._flush_rows(out)

    def _one(self, line: str, is_progress: bool, now: float, hold: bool = True) -> None:
        """One line through the pending block; ``hold`` is False when the next line is
        known not to continue this one, so a plain line can be emitted at once."""
        block = self._pending
        if block is not None:
            verdict = END if is_progress else block.accept(line)
            if verdict == TAKE:
                if block.chars + len(line) + 1 <= self.max_block_chars:
                    block.take(line, now)
                    return
                # Full: store what there is; the line starts the next event.
                self._pending = None
                self._emit(block)
                self._start(line, is_progress, now, hold)
                return
            if verdict == HOLD:
                block.hold(line, now)
                return
            self._pending = None
            self._emit(block)
            if block.held:  # lines kept aside for a chain that did not come: start over
                for held in block.held:
                    self._one(held, False, now)
                self._one(line, is_progress, now, hold)
                return
        self._start(line, is_progress, now, hold)

    def _start(self, line: str, is_progress: bool, now: float, hold: bool) -> None:
        if is_progress:
            header = line.find(PY_TRACEBACK_HEADER)
            if header < 0:
                self._rows.append((now, INFO, line, None, None))
                return
            # A bar left without its newline when the workload died: Python writes the
            # traceback's header right after the bar's last state, on the same line. The bar
            # stays progress; the header opens the traceback, so the failure is read whole.
            bar = line[:header]
            if bar.strip():
                self._rows.append((now, INFO, bar, None, None))
            line = line[header:]
        if line[:1] == "{":
            parsed = parse_json(line)
            if parsed is not None:
                level, component, message, fields = parsed
                self._rows.append((now, level, message, component, fields))
                return
        block = start_block(line, now)
        if block is None:
            if "level=" in line or "lvl=" in line or "severity=" in line:
                parsed = parse_logfmt(line)
                if parsed is not None:
                    level, component, message, fields = parsed
                    self._rows.append((now, level, message, component, fields))
                    return
            level, component = classify(line)
            if not hold:
                self._rows.append((now, level, line, component, None))
                return
            block = PlainBlock(line, now, level, component)
        self._pending = block

    # --- flushing -----------------------------------------------------------------------

    def poll(self, now: float, out: LogBatch) -> None:
        """Emit the pending block when nothing has been added to it for ``idle`` seconds."""
        block = self._pending
        if block is not None and now - block.last >= self.idle:
            self.flush(out)

    def flush_settled(self, out: LogBatch) -> None:
        """Emit the pending block if it is whole as it stands (``Block.settled``): called when
        another source's lines arrive on the stream, so that events keep the order of the
        output (a rank's finished traceback before the launcher's summary that follows it)."""
        block = self._pending
        if block is not None and block.settled:
            self.flush(out)

    def flush(self, out: LogBatch) -> None:
        block = self._pending
        if block is not None:
            self._pending = None
            self._emit(block)
            for held in block.held:
                self._rows.append((block.last, INFO, held, None, None))
        self._flush_rows(out)

    # --- output -------------------------------------------------------------------------

    def _emit(self, block: Block) -> None:
        message = block.message() if len(block.lines) > 1 else block.lines[0]
        self._rows.append((block.time, block.level, message, block.component, block.describe()))

    def _flush_rows(self, out: LogBatch) -> None:
        rows = self._rows
        if not rows:
            return
        n = len(rows)
        times, levels, messages, components, fields = zip(*rows, strict=True)
        out.time.extend(times)
        out.level.extend(levels)
        out.message.extend(messages)
        out.component.extend(components)
        out.fields.extend(fields)
        self._extend_constants(n, out)
        rows.clear()

    def _extend_plain(self, lines: list[str], now: float, out: LogBatch) -> None:
        n = len(lines)
        out.time.extend([now] * n)
        out.level.extend([INFO] * n)
        out.message.extend(lines)
        out.component.extend([None] * n)
        out.fields.extend([None] * n)
        self._extend_constants(n, out)

    def _extend_constants(self, n: int, out: LogBatch) -> None:
        out.stream.extend([self.stream] * n)
        out.rank.extend([self.rank] * n)
        out.attempt.extend([self.attempt] * n)
        out.stage.extend([None] * n)
