"""What the runner learns from a distributed launcher's output (``flightlog run -- torchrun …``).

The capture pipeline already splits the ranks' lines apart (``capture/launchers.py``): each
rank's traceback is one event carrying its rank. Here the runner keeps, per rank, the first
and the last traceback it printed, and the launcher's own summary of the failed job, so that
the attempt's failure names a worker's error and not the launcher's wrapper
(``ChildFailedError: … FAILED``, raised by torchrun *because* a worker failed): a launcher's
error is never the cause when a worker's error is known. Among the workers, one that only
waited for another (a receive that timed out, a peer that closed the connection:
``launchers.VICTIM_MESSAGES``) is a consequence; the first worker error that is not such a
message is taken as the cause. Which rank truly caused a hang needs more than text (stacks,
the Flight Recorder): that is the diagnosis's job, not the runner's; the runner records the
facts (``launcher_exits`` evidence) and picks the best traceback for its quick classification.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flightlog.capture.launchers import (
    ElasticSummary,
    is_signal_notice,
    is_victim_message,
    parse_deepspeed_exits,
    parse_elastic_summary,
)
from flightlog.logevents import LogBatch

__all__ = ["LauncherOutput", "RankTraceback"]

_HEADER = "Traceback (most recent call last)"
_SUMMARY_MARKS = ("ChildFailedError", "sigkill_handler")
#: bounds of what is kept of a launcher's summary (events, characters)
_MAX_SUMMARY_EVENTS = 5000
_MAX_SUMMARY_CHARS = 4_000_000
_MAX_RANKS = 4096
#: bounds of the tracebacks kept beyond each rank's first and last (``RankTraceback.each``)
_MAX_EACH = 64
_MAX_EACH_CHARS = 8_000_000
_ERROR = 40


@dataclass
class RankTraceback:
    """One rank number's tracebacks in the captured output. Under a launcher that restarts the
    workers (``torchrun --max-restarts``) one rank number is several processes, one per try:
    ``each`` keeps every traceback's time and text (the first ones, bounded), so that each
    process's row gets its own (``runner/ranks.py``; issue 28)."""

    rank: int
    first_at: float
    first: str
    last_at: float
    last: str
    count: int = 1
    each: list[tuple[float, str]] = field(default_factory=list)

    @property
    def victim(self) -> bool:
        return is_victim_message(self.last)


@dataclass
class LauncherOutput:
    """Fed every stored batch (on the output thread); read once the attempt ended."""

    tracebacks: dict[int, RankTraceback] = field(default_factory=dict)
    _summary: list[str] = field(default_factory=list)
    _summary_chars: int = 0
    #: the stream the launcher prints its summary on: a line of the other stream is a rank's (the
    #: capture holds a stream's last line until it ends, so a rank's last stdout line comes in
    #: the middle of torchrun's stderr summary, and was read as the rank's traceback field)
    _summary_stream: str | None = None
    _each_chars: int = 0

    def feed(self, batch: LogBatch) -> None:
        messages, ranks, levels, times, streams = batch.message, batch.rank, batch.level, batch.time, batch.stream
        for i, message in enumerate(messages):
            rank = ranks[i]
            if rank is not None and levels[i] >= _ERROR and _HEADER in message:
                self._traceback(rank, times[i], message)
            elif (
                rank is None
                and (self._summary or any(mark in message for mark in _SUMMARY_MARKS))
                and self._summary_stream in (None, streams[i])
                and len(self._summary) < _MAX_SUMMARY_EVENTS
                and self._summary_chars < _MAX_SUMMARY_CHARS
            ):
                self._summary_stream = streams[i]
                self._summary.append(message)
                self._summary_chars += len(message)

    def _traceback(self, rank: int, at: float, text: str) -> None:
        seen = self.tracebacks.get(rank)
        if seen is None:
            if len(self.tracebacks) < _MAX_RANKS:
                self.tracebacks[rank] = seen = RankTraceback(rank, at, text, at, text)
                seen.each.append((at, text))
            return
        seen.last_at, seen.last = at, text
        seen.count += 1
        if len(seen.each) < _MAX_EACH and self._each_chars + len(text) <= _MAX_EACH_CHARS:
            seen.each.append((at, text))
            self._each_chars += len(text)

    def summary(self) -> ElasticSummary | None:
        """The launcher's account of the failed job (torchrun's, else DeepSpeed's), if it printed one."""
        if not self._summary:
            return None
        text = "\n".join(self._summary)
        return parse_elastic_summary(text) or parse_deepspeed_exits(text.splitlines())

    def cause(self) -> RankTraceback | None:
        """The worker traceback to read as the failure: the first (in time) that is not a
        victim's message, else the first of all. A rank that died before torch marked its lines
        (an error in ``init_process_group``) printed its traceback unmarked; the launcher's
        summary still carries it (``@record``'s error file): the root cause's first, then the
        others'. None when no worker's traceback is known."""
        if self.tracebacks:
            ordered = sorted(self.tracebacks.values(), key=lambda t: t.first_at)
            return next((t for t in ordered if not t.victim), ordered[0])
        summary = self.summary()
        if summary is None:
            return None
        known = [r for r in sorted(summary.ranks, key=lambda r: not r.root_cause) if r.rank is not None and r.traceback]
        known = [r for r in known if _HEADER in (r.traceback or "")]
        if not known:
            return None
        pick = next((r for r in known if not is_victim_message(r.traceback or "")), known[0])
        assert pick.rank is not None and pick.traceback is not None
        return RankTraceback(pick.rank, 0.0, pick.traceback, 0.0, pick.traceback)

    def facts(self) -> dict[str, Any] | None:
        """The ``launcher_exits`` evidence: every rank the launcher or the output named, with its
        exit, signal, pid, host and the headline of its last traceback; None when nothing was seen."""
        summary = self.summary()
        if summary is None and not self.tracebacks:
            return None
        ranks: dict[int, dict[str, Any]] = {}
        for exit_ in summary.ranks if summary else []:
            if exit_.rank is None:
                continue
            ranks[exit_.rank] = {k: v for k, v in exit_.to_dict().items() if k != "traceback"}
            if exit_.traceback and not is_signal_notice(
                exit_.traceback
            ):  # "Signal 15 … received": its end, not an error
                ranks[exit_.rank]["error"] = _headline(exit_.traceback)
        for rank, tb in self.tracebacks.items():
            entry = ranks.setdefault(rank, {"rank": rank})
            entry["error"] = _headline(tb.last)
            entry["error_at"] = tb.first_at
            entry["victim"] = tb.victim
        cause = self.cause()
        return {
            "launcher": summary.launcher if summary else None,
            "script": summary.script if summary else None,
            "reported_root_cause": summary.root_cause.rank if summary and summary.root_cause else None,
            "first_error_rank": cause.rank if cause else None,
            "ranks": [ranks[r] for r in sorted(ranks)],
        }


def _headline(traceback: str) -> str:
    """The exception line of a traceback (its last non-empty line), bounded."""
    for line in reversed(traceback.strip().splitlines()):
        if line.strip():
            return line.strip()[:500]
    return ""
