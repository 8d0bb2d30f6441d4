"""The fast classifier: the taxonomy category of a failed process from its exit facts, its
last traceback and its last lines. Pure, no I/O, a few milliseconds — the runner calls it
for ``--retry-on`` and its "looks like X" line; the full diagnosis (:mod:`.failures`) reads the
same structure with more to go on (every event, the memory samples) and ranks it the same way.

One path for both: the texts are read as a structure (:func:`~.structure.read_failure`), the
rules find candidates with their evidence (:func:`~.candidates.collect`), the learned ranker
orders them and gives each a calibrated confidence (:func:`~.ranker.rank`).
"""

from __future__ import annotations

from collections.abc import Sequence

from flightlog.diagnose.candidates import collect
from flightlog.diagnose.ranker import UNEXPLAINED, Ranked, rank
from flightlog.diagnose.signals import Signal
from flightlog.diagnose.structure import FailureRead, read_failure

__all__ = ["classify_failure", "failure_signals", "read_process", "rank_process"]


def read_process(
    *,
    exit_code: int | None,
    signal: int | None,
    timed_out: bool,
    oom_killed: bool,
    traceback_text: str | None,
    last_lines: Sequence[str],
    memory_share: float | None = None,
) -> FailureRead:
    """The arguments of :func:`classify_failure` read as one structure: the last lines, then the
    traceback when the lines do not hold it already."""
    texts = list(last_lines)
    # a traceback the lines hold already is read where it was printed (the full diagnosis reads
    # the log so): appended again, torchrun's ChildFailedError came after its own summary
    if traceback_text and not any(traceback_text.strip() in t for t in texts if t):
        texts.append(traceback_text)
    if exit_code is None and signal is None and not timed_out and not oom_killed and traceback_text:
        exit_code = 1  # an uncaught exception the SDK recorded without an exit code: Python exits 1
    return read_failure(
        texts,
        exit_code=exit_code,
        signal=signal,
        timed_out=timed_out,
        oom_killed=oom_killed,
        memory_share_at_end=None if timed_out else memory_share,
    )


def rank_process(read: FailureRead, *, at: float | None = None) -> list[Ranked]:
    """The candidates of a read process, ranked (highest confidence first)."""
    return rank(read, collect(read, at=at))


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
    """Every piece of evidence the rules find (see :func:`classify_failure`)."""
    read = read_process(
        exit_code=exit_code,
        signal=signal,
        timed_out=timed_out,
        oom_killed=oom_killed,
        traceback_text=traceback_text,
        last_lines=last_lines,
        memory_share=memory_share,
    )
    return [h.signal for h in collect(read, at=at)]


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
    included), when the caller has it apart from the lines; ``last_lines`` are the last log
    lines (a multi-line traceback may be one of them). ``memory_share`` is the highest share of
    the memory limit the process tree used in the last resource samples before it ended (None
    without a limit): at the limit, a kill reads as ``oom_killed``.

    >>> classify_failure(exit_code=1, signal=None, timed_out=False, oom_killed=False,
    ...     traceback_text=None, last_lines=["ConnectionRefusedError: [Errno 111] Connection refused"])[0]
    'service_unavailable'
    """
    if exit_code == 0 and signal is None and not timed_out and not oom_killed:
        return "none", 0.0
    read = read_process(
        exit_code=exit_code,
        signal=signal,
        timed_out=timed_out,
        oom_killed=oom_killed,
        traceback_text=traceback_text,
        last_lines=last_lines,
        memory_share=memory_share,
    )
    ranked = rank_process(read)
    if ranked:
        return ranked[0].category, ranked[0].confidence
    if exit_code not in (None, 0):
        return "code_error", UNEXPLAINED
    return "none", 0.0
