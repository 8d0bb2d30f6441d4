"""The fast classifier: the taxonomy category of a failed process from its exit facts, its
last traceback and its last lines. Pure, no I/O, a few milliseconds — the runner calls it
for ``--retry-on`` before deciding on another attempt; the full diagnosis deepens it with the
whole run's evidence (same pattern tables, same signals)."""

from __future__ import annotations

from collections.abc import Sequence

from flightlog.diagnose.signals import (
    Signal,
    combine,
    exception_line_signals,
    exit_signals,
    line_signals,
    traceback_signals,
    weigh_memory_at_the_kill,
)
from flightlog.diagnose.tracebacks import find_last_traceback, parse_chain, parse_exception_lines

__all__ = ["classify_failure", "failure_signals"]

#: confidence given to a non-zero exit that nothing explains
UNEXPLAINED = 0.25
#: how many of the last lines are read for exceptions when there is no whole traceback
_EXCEPTION_LINES = 20


def failure_signals(
    *,
    exit_code: int | None,
    signal: int | None,
    timed_out: bool,
    oom_killed: bool,
    traceback_text: str | None,
    last_lines: Sequence[str],
    at: float | None = None,
    memory_share: float | None = None,
) -> list[Signal]:
    """Every signal the exit, the last traceback, the last lines and the memory at the end give
    (see :func:`classify_failure`)."""
    lines = list(last_lines)
    text = traceback_text or find_last_traceback(lines)
    signals = exit_signals(exit_code=exit_code, signal=signal, timed_out=timed_out, oom_killed=oom_killed, at=at)
    if not timed_out and memory_share is not None:
        signals = weigh_memory_at_the_kill(
            signals,
            memory_share,
            at=at,
            detail=f"memory was at {memory_share:.0%} of its limit in the last samples before the process was killed",
        )
    # a traceback whose reporter cut its exception line off still names its exceptions line by line
    chain = parse_chain(text) or (parse_exception_lines(text) if text else [])
    signals += traceback_signals(chain, at=at)
    if not chain:
        # no whole traceback: the exceptions the last lines name, read as one (see exception_line_signals)
        signals += exception_line_signals(lines[-_EXCEPTION_LINES:], at=at)
    n = len(lines)
    signals += line_signals([(line, None, 0.75 + 0.25 * (i + 1) / n) for i, line in enumerate(lines)])
    return signals


def classify_failure(
    *,
    exit_code: int | None,
    signal: int | None,
    timed_out: bool,
    oom_killed: bool,
    traceback_text: str | None,
    last_lines: Sequence[str],
    memory_share: float | None = None,
) -> tuple[str, float]:
    """``(category, confidence)`` of a finished process.

    ``("none", 0.0)`` for a success (exit 0, no signal, no timeout, no OOM kill) or when there
    is nothing to go on. ``traceback_text`` is the last Python traceback (chained ones
    included); when it is None, the last line holding a traceback is used. ``last_lines`` are
    the last log lines (a multi-line traceback may be one of them). ``memory_share`` is the
    highest share of the memory limit the process tree used in the last resource samples before
    it ended (None without a limit): at the limit, a kill reads as ``oom_killed``.

    >>> classify_failure(exit_code=1, signal=None, timed_out=False, oom_killed=False,
    ...     traceback_text=None, last_lines=["ConnectionRefusedError: [Errno 111] Connection refused"])
    ('service_unavailable', 0.4)
    """
    if exit_code == 0 and signal is None and not timed_out and not oom_killed:
        return "none", 0.0
    signals = failure_signals(
        exit_code=exit_code,
        signal=signal,
        timed_out=timed_out,
        oom_killed=oom_killed,
        traceback_text=traceback_text,
        last_lines=last_lines,
        memory_share=memory_share,
    )
    scores = combine(signals)
    if scores:
        return scores[0].category, scores[0].confidence
    if exit_code not in (None, 0):
        return "code_error", UNEXPLAINED
    return "none", 0.0
