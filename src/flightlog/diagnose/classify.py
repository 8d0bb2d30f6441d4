"""The fast classifier: the taxonomy category of a failed process from its exit facts, its
last traceback and its last lines. Pure, no I/O, a few milliseconds — the runner calls it
for ``--retry-on`` before deciding on another attempt; the full diagnosis deepens it with the
whole run's evidence (same pattern tables, same signals)."""

from __future__ import annotations

from collections.abc import Sequence

from flightlog.diagnose.signals import (
    Signal,
    combine,
    exit_signals,
    line_signals,
    traceback_signals,
)
from flightlog.diagnose.tracebacks import find_last_traceback, parse_chain

__all__ = ["classify_failure", "failure_signals"]

#: confidence given to a non-zero exit that nothing explains
UNEXPLAINED = 0.25


def failure_signals(
    *,
    exit_code: int | None,
    signal: int | None,
    timed_out: bool,
    oom_killed: bool,
    traceback_text: str | None,
    last_lines: Sequence[str],
    at: float | None = None,
) -> list[Signal]:
    """Every signal the exit, the last traceback and the last lines give (see :func:`classify_failure`)."""
    lines = list(last_lines)
    text = traceback_text or find_last_traceback(lines)
    signals = exit_signals(exit_code=exit_code, signal=signal, timed_out=timed_out, oom_killed=oom_killed, at=at)
    signals += traceback_signals(parse_chain(text), at=at)
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
) -> tuple[str, float]:
    """``(category, confidence)`` of a finished process.

    ``("none", 0.0)`` for a success (exit 0, no signal, no timeout, no OOM kill) or when there
    is nothing to go on. ``traceback_text`` is the last Python traceback (chained ones
    included); when it is None, the last line holding a traceback is used. ``last_lines`` are
    the last log lines (a multi-line traceback may be one of them).

    >>> classify_failure(exit_code=1, signal=None, timed_out=False, oom_killed=False,
    ...     traceback_text=None, last_lines=["ConnectionRefusedError: [Errno 111] Connection refused"])
    ('service_unavailable', 0.4)
    """
    if exit_code == 0 and signal is None and not timed_out and not oom_killed:
        return "none", 0.0
    signals = failure_signals(
        exit_code=exit_code, signal=signal, timed_out=timed_out, oom_killed=oom_killed,
        traceback_text=traceback_text, last_lines=last_lines,
    )
    scores = combine(signals)
    if scores:
        return scores[0].category, scores[0].confidence
    if exit_code not in (None, 0):
        return "code_error", UNEXPLAINED
    return "none", 0.0
