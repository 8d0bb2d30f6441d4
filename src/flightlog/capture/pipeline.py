"""The capture pipeline: bytes read from a child's pipes in, stored log events out.

The runner passes the workload's output through to the terminal untouched; this pipeline
decides only what is *stored*. A chunk goes through small steps, each in its own module:

    chunk steps (per stream, whole chunks)        event steps (on the batch)
    --------------------------------------        --------------------------
    LineSplitter   bytes → complete lines          RedactFields   secret JSON fields
    strip_ansi     terminal colours and moves out  LineMetrics    metrics from lines (optional)
                                                   RateLimiter    bound the volume
    KeyHold        hold an unfinished key block
    Redactor       secrets → markers (bytes), then decode, then user patterns (text)
    split_lines    lines, ``\\r`` collapsed
    truncate_lines over-long lines cut
    StreamGrouper  lines → events, blocks grouped

Every step works on a whole chunk or batch, never on one line at a time, because the runner
must store hundreds of thousands of lines per second. Event steps share one signature,
``(batch, now, final) -> batch``, so adding one never means editing the others.

Readers may call ``feed`` from two threads at once (one per stream): a lock makes each call
atomic, which costs nothing measurable since the work is CPU-bound under the GIL anyway.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from flightlog.capture.grouping import StreamGrouper, special_lines
from flightlog.capture.keyhold import KeyHold
from flightlog.capture.launchers import has_launcher_marks, read_prefix
from flightlog.capture.lines import LineSplitter, decode, split_lines, strip_ansi, truncate_lines
from flightlog.capture.ratelimit import RateLimiter
from flightlog.errors import InvalidInput
from flightlog.logevents import LogBatch
from flightlog.redaction.engine import Redactor
from flightlog.redaction.stats import count_pass

__all__ = ["CaptureConfig", "CapturePipeline", "EventStep", "RedactFields", "STAT_KEYS"]

STAT_KEYS = (
    "lines",
    "bytes",
    "dropped_lines",
    "dropped_bytes",
    "truncated_lines",
    "redactions",
    "events",
)
_NO_PROGRESS: frozenset[int] = frozenset()


@dataclass
class CaptureConfig:
    """What the runner decides about capture; every field has a safe default."""

    max_line_bytes: int = 65536
    """Longer lines are stored cut to this many UTF-8 bytes, with a visible marker."""
    max_rate: float | None = None
    """Events stored per second (a multi-line event counts once); None: unlimited."""
    rate_interval: float = 10.0
    """While dropping, one summary event per this many seconds."""
    extra_patterns: Sequence[str] = ()
    """User regexes to redact (``--redact``, ``redact.txt`` files)."""
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    """Environment whose secret-looking variables' values are redacted (the child's)."""
    attempt: int = 1
    rank: int | None = None
    group_idle: float = 0.5
    """A pending multi-line block is stored after this much quiet on its stream."""
    launcher_labels: bool = False
    """The launcher numbers every line with its rank (``srun --label``): a leading ``3: `` is a
    rank's mark, not the program's text (``capture/launchers.py``). Bracketed marks
    (``[rank3]: ``, ``[default3]:``, ``[1,3]<stdout>:``) are always read."""

    def __post_init__(self) -> None:
        if self.max_line_bytes < 16:
            raise InvalidInput(f"max_line_bytes must be at least 16, got {self.max_line_bytes}")
        if self.max_rate is not None and not self.max_rate > 0:
            raise InvalidInput(f"max_rate must be a positive number of lines per second, got {self.max_rate}")
        if not self.rate_interval > 0:
            raise InvalidInput(f"rate_interval must be positive, got {self.rate_interval}")
        if self.group_idle < 0:
            raise InvalidInput(f"group_idle must not be negative, got {self.group_idle}")


class EventStep(Protocol):
    """A step over a batch of events; may drop events or add some (summaries)."""

    def __call__(self, batch: LogBatch, now: float, final: bool) -> LogBatch: ...


class RedactFields:
    """Hide values of secret-named keys in parsed fields (``{"password": 1234}``).

    The text of those lines was already redacted as a whole; this catches what only the key
    reveals: numbers, nested mappings, names the text patterns do not know. The events' one
    redaction pass ends here, so they are counted here (``flightlog.redaction.stats``).
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor

    def __call__(self, batch: LogBatch, now: float, final: bool) -> LogBatch:
        if batch.message:
            count_pass("logs", len(batch))
        fields = batch.fields
        if fields.count(None) == len(fields):
            return batch
        redact = self._redactor.redact_keys
        for i, value in enumerate(fields):
            if value:
                fields[i] = redact(value)
        return batch


class _Stream:
    """One stream's steps. ``ranked`` holds a grouper per rank that a launcher's line prefixes
    named (``[rank1]: ``): each rank's lines are grouped on their own, so two ranks' tracebacks
    printed at once stay two events, each with its rank."""

    __slots__ = ("splitter", "keys", "grouper", "ranked")

    def __init__(self, splitter: LineSplitter, keys: KeyHold, grouper: StreamGrouper) -> None:
        self.splitter = splitter
        self.keys = keys
        self.grouper = grouper
        self.ranked: dict[int, StreamGrouper] = {}

    def groupers(self) -> list[StreamGrouper]:
        return [self.grouper, *self.ranked.values()]

    def for_rank(self, rank: int | None) -> StreamGrouper:
        if rank is None:
            return self.grouper
        grouper = self.ranked.get(rank)
        if grouper is None:
            base = self.grouper
            grouper = self.ranked[rank] = StreamGrouper(
                base.stream, rank=rank, attempt=base.attempt, idle=base.idle, max_block_chars=base.max_block_chars
            )
        return grouper


class CapturePipeline:
    """Feed it what a child wrote; get back the ``LogBatch`` to store.

    ``stats`` counts lines and bytes read, dropped lines and bytes, truncated lines,
    redactions and events returned. ``metrics`` is an optional step that reads metrics from
    the stored lines (``linemetrics.LineMetrics``).
    """

    def __init__(self, config: CaptureConfig, metrics: EventStep | None = None) -> None:
        self.config = config
        self.stats: dict[str, int] = dict.fromkeys(STAT_KEYS, 0)
        self.redactor = Redactor(config.extra_patterns, config.env)
        self._streams: dict[str, _Stream] = {}
        self._lock = threading.Lock()
        self.event_steps: list[EventStep] = [RedactFields(self.redactor)]
        if metrics is not None:  # reads every redacted event, dropped by the rate limit or not
            self.event_steps.append(metrics)
        if config.max_rate is not None:
            self.event_steps.append(
                RateLimiter(
                    config.max_rate,
                    config.rate_interval,
                    self.stats,
                    attempt=config.attempt,
                    rank=config.rank,
                )
            )

    # --- the three calls ----------------------------------------------------------------

    def feed(self, stream: str, data: bytes, now: float) -> LogBatch:
        """Events completed by ``data`` on ``stream`` (``"stdout"`` or ``"stderr"``)."""
        with self._lock:
            state = self._stream(stream)
            self.stats["bytes"] += len(data)
            self.stats["lines"] += data.count(b"\n")
            out = LogBatch()
            complete = state.splitter.feed(data)
            if complete:
                self._text(state, complete, now, out, final=False)
            return self._finish(out, now, final=False)

    def poll(self, now: float) -> LogBatch:
        """Blocks quiet for ``group_idle``, held key blocks, and due rate-limit summaries."""
        with self._lock:
            out = LogBatch()
            for state in self._streams.values():
                for grouper in state.groupers():
                    grouper.poll(now, out)
                released = state.keys.poll(now)
                if released:
                    self._lines(state, released, now, out)
            return self._finish(out, now, final=False)

    def close(self, now: float) -> LogBatch:
        """End of both streams: flush partial lines, held text, pending blocks, summaries."""
        with self._lock:
            out = LogBatch()
            for state in self._streams.values():
                rest = state.splitter.flush()
                if rest:
                    self.stats["lines"] += 1
                self._text(state, rest, now, out, final=True)
                for grouper in state.groupers():
                    grouper.flush(out)
            return self._finish(out, now, final=True)

    # --- steps --------------------------------------------------------------------------

    def _stream(self, stream: str) -> _Stream:
        state = self._streams.get(stream)
        if state is None:
            config = self.config
            state = _Stream(
                LineSplitter(config.max_line_bytes, self.stats),
                KeyHold(config.group_idle),
                StreamGrouper(
                    stream,
                    rank=config.rank,
                    attempt=config.attempt,
                    idle=config.group_idle,
                    max_block_chars=4 * config.max_line_bytes,
                ),
            )
            self._streams[stream] = state
        return state

    def _text(self, state: _Stream, data: bytes, now: float, out: LogBatch, final: bool) -> None:
        data = state.keys.feed(strip_ansi(data), now, final)
        if data:
            self._lines(state, data, now, out)

    def _lines(self, state: _Stream, data: bytes, now: float, out: LogBatch) -> None:
        text = decode(self.redactor.redact_bytes(data))
        text = self.redactor.redact_custom(text)
        if not text.endswith("\n"):  # a marker swallowed the final newline (an open key block)
            text += "\n"
        lines, progress = split_lines(text)
        truncate_lines(lines, self.config.max_line_bytes, self.stats)
        if self.config.launcher_labels or has_launcher_marks(text):
            self._ranked_lines(state, lines, progress, now, out)
            return
        for grouper in state.ranked.values():  # the ranks spoke before: what they finished comes first
            grouper.flush_settled(out)
        specials = special_lines(text, lines, progress)
        state.grouper.feed(lines, specials, frozenset(progress) if progress else _NO_PROGRESS, now, out)

    def _ranked_lines(self, state: _Stream, lines: list[str], progress: list[int], now: float, out: LogBatch) -> None:
        """Lines some of which carry a launcher's rank prefix: each run of lines of one rank
        goes, without its prefixes, to that rank's grouper (unmarked lines to the stream's own)."""
        labels = self.config.launcher_labels
        marked = [read_prefix(line, labels=labels) for line in lines]
        collapsed = set(progress)
        start = 0
        n = len(lines)
        while start < n:
            rank = marked[start].rank
            end = start + 1
            while end < n and marked[end].rank == rank:
                end += 1
            body = [p.text for p in marked[start:end]]
            moved = [i - start for i in range(start, end) if i in collapsed]
            specials = special_lines("\n".join(body) + "\n", body, moved)
            grouper = state.for_rank(rank)
            for other in state.groupers():  # another source speaks: what is whole is stored first
                if other is not grouper:
                    other.flush_settled(out)
            grouper.feed(body, specials, frozenset(moved) if moved else _NO_PROGRESS, now, out)
            start = end

    def _finish(self, batch: LogBatch, now: float, final: bool) -> LogBatch:
        for step in self.event_steps:
            batch = step(batch, now, final)
        self.stats["events"] += len(batch)
        self.stats["redactions"] = self.redactor.count
        return batch
