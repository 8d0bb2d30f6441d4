"""Which rank caused a distributed run's failure or hang, and which ranks only waited.

The rules, strongest first (docs/distributed.md, "Hangs, culprits and victims"):

1. **The Flight Recorder.** Each rank's last entries say how many collectives it entered on
   each process group. Ranks that entered fewer than the others are the culprits: "rank 1
   never entered all_reduce #4"; the ranks that did entered it and waited. Ranks that all
   reached collective #k but called different operations there, or with different sizes, are
   a ``collective_mismatch``: the rank whose call differs from the others' (or from its own
   earlier calls, with two ranks) is the culprit.
2. **Errors of their own.** A rank's first error that is not a known victim's message (gloo's
   "Timed out waiting … for recv", "Connection closed by peer", the NCCL watchdog's timeout,
   "remote process exited", a launcher's teardown: `capture.launchers.VICTIM_MESSAGES`) is
   its own failure; the earliest such rank is the culprit. Every rank with an error of its own
   failed **alike** (the same exception, its message the same but for numbers, or raised at the
   same line of the workload's own code): none is the culprit — the cause is one they share (the
   data path, the configuration, the environment), and the verdict names them all (issue 28).
3. **Silent exits.** A rank that ended (an exit code, a signal: ``launcher_exits``; ``lost`` in
   the store: it vanished without recording an end) with no error of its own while the others
   only reported victims' messages. A rank that *finished* (exit 0) while the others still
   waited for it in a collective left the job early (a shorter loop). A rank its launcher stopped (SIGTERM: torchrun tears the
   job down once one rank failed) with no error of its own, while the others failed waiting
   for it, was **stuck**: it never reached the collective they waited in (a ``hang``, never
   "terminated from outside").
4. **Stacks.** With no recorder and no exit: among stalled ranks, the ones whose main thread is
   not inside ``torch.distributed`` (the others wait there).
5. **A rank never seen**, as a hint: every rank that recorded only waited, and a rank of the
   job's world left no record at all.

The culprit's own cause is read with the usual taxonomy: its own events read whole by
`structure.read_failure` (contract C4), their exceptions' signals, its exit or signal; a culprit
with none — it was stuck — is a ``hang``.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from flightlog.diagnose.classify import rank_process
from flightlog.diagnose.findings import LEAD
from flightlog.diagnose.ranks import RankError, RankFacts, waiting_in_collective, where_in_stacks
from flightlog.diagnose.signals import (
    RANK_VANISHED,
    Signal,
    combine,
    exit_signals,
    signal_name,
    traceback_signals,
    weigh_memory_at_the_kill,
)
from flightlog.diagnose.structure import read_failure
from flightlog.launchenv import ranks_text

__all__ = ["Verdict", "judge", "CollectiveView", "read_collectives"]

_SIGTERM = 15


@dataclass
class CollectiveView:
    """One process group's collectives as the ranks' Flight Recorders show them."""

    pg: str
    last: dict[int, int]  # rank → the last collective number it entered
    entries: dict[int, dict[int, dict[str, Any]]]  # rank → number → entry

    def entry(self, rank: int, seq: int) -> dict[str, Any] | None:
        return self.entries.get(rank, {}).get(seq)

    def op_at(self, seq: int) -> str | None:
        for by_seq in self.entries.values():
            if seq in by_seq:
                return str(by_seq[seq].get("op"))
        return None

    def in_flight(self, rank: int) -> dict[str, Any] | None:
        """The entry the rank waits in: its last one when not retired."""
        e = self.entry(rank, self.last[rank])
        return e if e is not None and e.get("retired") is not True else None


def read_collectives(ranks: dict[int, RankFacts]) -> CollectiveView | None:
    """The process group most ranks' recorders show (the default one when in doubt), or None
    when fewer than two ranks have a recorder to read."""
    dumps = {r: f.latest_flight for r, f in ranks.items() if f.latest_flight is not None}
    if len(dumps) < 2:
        return None
    per_pg: dict[str, dict[int, dict[int, dict[str, Any]]]] = {}
    for rank, dump in dumps.items():
        assert dump is not None
        for e in dump.get("entries") or []:
            if not isinstance(e, dict) or e.get("p2p") or not isinstance(e.get("seq"), int):
                continue
            per_pg.setdefault(str(e.get("pg")), {}).setdefault(rank, {})[e["seq"]] = e
    if not per_pg:
        return None

    def weight(item: tuple[str, dict[int, dict[int, dict[str, Any]]]]) -> tuple[int, bool, int]:
        pg, by_rank = item
        return (len(by_rank), pg in ("default_pg", "0"), sum(len(v) for v in by_rank.values()))

    pg, by_rank = max(per_pg.items(), key=weight)
    if len(by_rank) < 2:
        return None
    return CollectiveView(pg, {r: max(seqs) for r, seqs in by_rank.items()}, by_rank)


@dataclass
class Verdict:
    """The distributed reading of a run (see the module docstring)."""

    category: str
    culprit: int | None
    rule: str  # flight_recorder | mismatch | error | alike | exit | left_early | torn_down | stacks | unseen
    signals: list[Signal] = field(default_factory=list)
    collective: dict[str, Any] | None = None  # {"op", "seq", "pg"}
    where: dict[str, Any] | None = None
    victims: list[dict[str, Any]] = field(default_factory=list)
    cause: str | None = None  # the culprit's own error or end, in words
    stuck_for: float | None = None  # seconds the culprit had made no progress (a hang)
    details: list[str] = field(default_factory=list)  # the rest of the story, for the summary
    alike: list[int] = field(default_factory=list)  # ranks that failed alike (rule "alike": no culprit)
    read_from: int | None = None  # of ranks that failed alike, the one whose end is read

    @property
    def subject(self) -> int | None:
        """The rank whose end the verdict reads: the culprit, else one of the ranks that failed alike."""
        return self.culprit if self.culprit is not None else self.read_from

    @property
    def confidence(self) -> float:
        scores = [s for s in combine(self.signals) if s.category == self.category]
        return scores[0].confidence if scores else 0.0


@dataclass(frozen=True)
class MemoryAtTheEnd:
    """What the run as a whole says of memory when it ended: the runner recorded an OOM kill of
    its process tree, and the highest share of the memory limit in the last samples (None: no
    limit or no samples), with the words that quote it."""

    oom_killed: bool = False
    share: float | None = None
    detail: str = ""


def judge(
    ranks: dict[int, RankFacts], *, live: bool, now: float, memory: MemoryAtTheEnd | None = None
) -> Verdict | None:
    """The verdict on ``ranks`` (None when nothing points at a rank). ``memory``: the run's memory
    at its end, which says what killed a culprit that got SIGKILL (as for a process of its own)."""
    view = read_collectives(ranks)
    verdict = None
    if view is not None:
        verdict = _behind(view, ranks) or _mismatch(view, ranks)
    verdict = (
        verdict
        or _own_error(ranks)
        or _silent_exit(ranks)
        or _left_early(ranks)
        or _torn_down(ranks)
        or _stuck_outside(ranks)
        or _never_seen(ranks)
    )
    if verdict is None:
        return None
    subject = verdict.subject
    _cause_of(verdict, ranks.get(subject) if subject is not None else None, ranks, live, now, memory)
    _victims(verdict, ranks, view, live, now)
    return verdict


# ── rule 1: the Flight Recorder ────────────────────────────────────────────────────────────────


def _behind(view: CollectiveView, ranks: dict[int, RankFacts]) -> Verdict | None:
    lowest, highest = min(view.last.values()), max(view.last.values())
    if lowest == highest:
        return None
    behind = sorted(r for r, seq in view.last.items() if seq == lowest)
    seq = lowest + 1
    op = view.op_at(seq) or "collective"
    culprit = behind[0]
    detail = f"{ranks_text(behind)} never entered {op} #{seq} (process group {view.pg}); " + ", ".join(
        f"rank {r} entered it" for r in sorted(view.last) if view.last[r] >= seq
    )
    signal = Signal("hang", 0.8, "culprit_by_the_flight_recorder", "evidence", detail)
    verdict = Verdict("hang", culprit, "flight_recorder", [signal], {"op": op, "seq": seq, "pg": view.pg})
    if len(behind) > 1:
        verdict.details.append(f"{ranks_text(behind[1:])} also never entered it")
    return verdict


def _mismatch(view: CollectiveView, ranks: dict[int, RankFacts]) -> Verdict | None:
    seq = min(view.last.values())
    calls = {r: view.entry(r, seq) for r in view.last}
    shapes = {r: (str(e.get("op")), _sizes(e)) for r, e in calls.items() if e is not None}
    if len(set(shapes.values())) < 2:
        return None
    groups = Counter(shapes.values())
    smallest = min(groups.values())
    odd = [call for call, n in groups.items() if n == smallest]
    if len(odd) == 1 and smallest < max(groups.values()):
        culprits = sorted(r for r, call in shapes.items() if call == odd[0])
    else:  # no minority (two ranks): the rank whose call differs from its own before
        culprits = [r for r in sorted(shapes) if _unusual(view, r, seq, shapes[r])] or [max(shapes)]
    culprit = culprits[0]
    described = "; ".join(f"rank {r} called {shapes[r][0]} #{seq} with sizes {shapes[r][1]}" for r in sorted(shapes))
    signal = Signal("collective_mismatch", 0.85, "collectives_differ_across_ranks", "evidence", described)
    return Verdict(
        "collective_mismatch",
        culprit,
        "mismatch",
        [signal],
        {"op": shapes[culprit][0], "seq": seq, "pg": view.pg},
        details=[described],
    )


def _sizes(entry: dict[str, Any]) -> str:
    sizes = entry.get("sizes")
    return str(sizes) if sizes is not None else "?"


def _unusual(view: CollectiveView, rank: int, seq: int, call: tuple[str, str]) -> bool:
    """Whether ``call`` differs from the calls ``rank`` made before #seq (its usual one)."""
    before = [(str(e.get("op")), _sizes(e)) for s, e in view.entries.get(rank, {}).items() if s < seq]
    if not before:
        return False
    usual = Counter(before).most_common(1)[0][0]
    return call != usual


# ── rules 2–4: errors, exits, stacks ───────────────────────────────────────────────────────────


def _own_error(ranks: dict[int, RankFacts]) -> Verdict | None:
    own = [(f.own_error, r) for r, f in ranks.items() if f.own_error is not None]
    if not own:
        return None
    own.sort(key=lambda x: (x[0].time if x[0] is not None else 0.0, x[1]))
    error, culprit = own[0]
    assert error is not None
    if len(own) >= 2 and all(e is not None and _alike(error, culprit, e, r) for e, r in own[1:]):
        return _failed_alike(ranks, error, sorted(r for _, r in own))
    others = [r for r, f in ranks.items() if r != culprit and (f.victim_error is not None or f.ended or f.stalled)]
    weight = 0.55 if others else 0.35
    detail = f"rank {culprit} failed with its own error first: {error.headline}"
    if others:
        detail += f"; {ranks_text(sorted(others))} only reported waiting for it or were stopped"
    return Verdict("code_error", culprit, "error", [Signal("code_error", weight, "culprit_by_errors", "log", detail)])


def _failed_alike(ranks: dict[int, RankFacts], error: RankError, alike: list[int]) -> Verdict:
    """Every rank with an error of its own failed with the same one: no rank caused it, the cause
    is one they share (a data path none can open, a configuration value every rank reads, a package
    missing on the image). Naming the earliest the culprit and the others its victims would send
    the reader to one rank's logs for a cause that is not that rank's (issue 28)."""
    others = [r for r, f in ranks.items() if r not in alike and (f.victim_error is not None or f.ended or f.stalled)]
    detail = f"{ranks_text(alike)} failed alike, each with its own error: {error.headline}"
    if others:
        detail += f"; {ranks_text(sorted(others))} only reported waiting or were stopped"
    verdict = Verdict("code_error", None, "alike", [Signal("code_error", 0.55, "ranks_failed_alike", "log", detail)])
    verdict.alike = alike
    # read from a rank that ended by itself: the others were often stopped by the launcher
    # (SIGTERM) while they still printed the same error
    verdict.read_from = next((r for r in alike if not _ended_by_sigterm(ranks[r])), alike[0])
    return verdict


def _alike(first: RankError, first_rank: int, other: RankError, other_rank: int) -> bool:
    """Whether two ranks' own errors are one failure: the same exception with the same message
    but for its numbers (a shard's index, a rank, a size), or the same exception raised at the
    same line of the workload's own code (a message that names each rank's own input)."""
    a, b = first.headline, other.headline
    if _exception_name(a) != _exception_name(b) or not _exception_name(a):
        return False
    if _NUMBERS.sub("#", a) == _NUMBERS.sub("#", b):
        return True
    here, there = _raised_at(first, first_rank), _raised_at(other, other_rank)
    return here is not None and here == there


_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")


def _exception_name(headline: str) -> str:
    name = headline.split(":", 1)[0].strip()
    return name if name and " " not in name else ""


def _raised_at(error: RankError, rank: int) -> tuple[str, int | None] | None:
    return _raised_at_text(error.text, rank)


@functools.lru_cache(maxsize=64)
def _raised_at_text(text: str, rank: int) -> tuple[str, int | None] | None:
    """Where the workload's own code raised the error in ``text``. Remembered: every other rank's
    error is compared with the first rank's, whose traceback would be read again each time."""
    read = read_failure([text], rank=rank)
    own = read.links[-1].innermost_own_frame() if read.links else None
    return (own.file, own.line) if own is not None else None


def _silent_exit(ranks: dict[int, RankFacts]) -> Verdict | None:
    """A rank that ended with no error of its own while the others failed waiting. A rank its
    launcher tore down (SIGTERM) is no silent exit, however its end is written: torchrun stops
    the survivors as soon as one rank exits, often before they could print that they waited."""
    waited = [r for r, f in ranks.items() if f.victim_error is not None]
    silent = [
        r
        for r, f in ranks.items()
        if f.own_error is None
        and f.victim_error is None
        and not _ended_by_sigterm(f)
        and ((f.exit_code not in (None, 0)) or f.signal is not None or f.lost)
    ]
    if not silent or not (waited or len(silent) < len(ranks)):
        return None
    silent.sort(key=lambda r: (ranks[r].exited_at or float("inf"), not ranks[r].launcher_root_cause, r))
    culprit = silent[0]
    f = ranks[culprit]
    how = _exit_text(f)
    detail = f"rank {culprit} {how} without an error of its own"
    if waited:
        detail += f", and {ranks_text(sorted(waited))} failed waiting for it"
    return Verdict("code_error", culprit, "exit", [Signal("code_error", 0.5, "culprit_by_its_exit", "exit", detail)])


def _left_early(ranks: dict[int, RankFacts]) -> Verdict | None:
    """A rank that finished (exit 0, no error) while the others still waited for it in a
    collective: it left the job before a collective they entered — a shard one batch shorter, an
    early ``return`` or ``break`` on one rank — and they failed waiting ("Connection closed by
    peer" on gloo) or were stopped. Read as a success, the job had no culprit at all and the
    victims' "Connection closed by peer" led as a service that refused (issue 28)."""
    if any(f.own_error is not None for f in ranks.values()):
        return None
    waited = sorted(r for r, f in ranks.items() if f.victim_error is not None or f.stalled)
    left = [r for r, f in ranks.items() if f.succeeded and f.victim_error is None and not f.stalled]
    if not waited or not left:
        return None
    left.sort(key=lambda r: (ranks[r].exited_at or float("inf"), r))
    culprit = left[0]
    detail = (
        f"rank {culprit} finished (exit 0) while {ranks_text(waited)} still waited for it in a collective: "
        "it left the job before a collective they entered"
    )
    verdict = Verdict(
        "code_error", culprit, "left_early", [Signal("code_error", 0.6, "culprit_left_early", "exit", detail)]
    )
    others = [r for r in left if r != culprit]
    if others:
        verdict.details.append(f"{ranks_text(others)} finished early too")
    return verdict


def _torn_down(ranks: dict[int, RankFacts]) -> Verdict | None:
    """Ranks the launcher stopped (SIGTERM) with no error of their own, while every other rank
    that failed only waited: the stopped one was stuck before the collective the others waited
    in. Several such ranks: the one whose stacks are not inside torch.distributed, else the lowest."""
    if any(f.own_error is not None for f in ranks.values()):
        return None
    waited = sorted(r for r, f in ranks.items() if f.victim_error is not None)
    stopped = sorted(r for r in ranks if _stopped_by_launcher(ranks, r))
    if not waited or not stopped:
        return None
    outside = [r for r in stopped if ranks[r].current_stacks and not waiting_in_collective(ranks[r].current_stacks)]
    culprit = (outside or stopped)[0]
    weight = 0.6 if len(stopped) == 1 or len(outside) == 1 else 0.35
    detail = (
        f"rank {culprit} reported no error of its own and was stopped by its launcher (SIGTERM) after "
        f"{ranks_text(waited)} failed waiting for it: it never reached the collective they waited in"
    )
    verdict = Verdict(
        "hang", culprit, "torn_down", [Signal("hang", weight, "culprit_stopped_while_others_waited", "exit", detail)]
    )
    others = [r for r in stopped if r != culprit]
    if others:
        verdict.details.append(f"{ranks_text(others)} {'was' if len(others) == 1 else 'were'} stopped the same way")
    return verdict


def _stopped_by_launcher(ranks: dict[int, RankFacts], rank: int) -> bool:
    """``rank`` ended by SIGTERM with no error of its own while another rank failed waiting: its
    launcher tore the job down (torchrun: "Sending process … closing signal SIGTERM")."""
    f = ranks[rank]
    return (
        _ended_by_sigterm(f)
        and f.own_error is None
        and f.victim_error is None
        and any(o.victim_error is not None for r, o in ranks.items() if r != rank)
    )


def _ended_by_sigterm(f: RankFacts) -> bool:
    """Whether ``f`` ended by SIGTERM, whichever way its end was written: the signal itself, or
    only an exit code — a shell's 128 + 15, Python's -15. Why one place: ``flightlog run`` writes
    a rank its launcher stopped as signal 15 *and* exit code 143 (``runner/ranks.py``); read by
    its exit code alone, that rank was a silent exit of its own, and with every rank "silent" no
    culprit was named (issue 28: rank 0 stopped before it printed its gloo error)."""
    if f.signal is not None:
        return f.signal == _SIGTERM
    return f.exit_code in (128 + _SIGTERM, -_SIGTERM)


def _stuck_outside(ranks: dict[int, RankFacts]) -> Verdict | None:
    """Without a recorder: among stalled ranks, those not waiting inside torch.distributed."""
    stalled = {r: f for r, f in ranks.items() if f.stalled and f.current_stacks is not None}
    if len(stalled) < 1 or len(ranks) < 2:
        return None
    waiting = [r for r, f in stalled.items() if waiting_in_collective(f.current_stacks)]
    outside = [r for r in stalled if r not in waiting]
    if not outside or not waiting:
        return None
    culprit = sorted(outside)[0]
    detail = (
        f"rank {culprit} stalled outside any collective while {ranks_text(sorted(waiting))} waited inside "
        "torch.distributed (no Flight Recorder to read)"
    )
    return Verdict("hang", culprit, "stacks", [Signal("hang", 0.6, "culprit_by_its_stacks", "evidence", detail)])


def _never_seen(ranks: dict[int, RankFacts]) -> Verdict | None:
    """Every rank the run heard from only waited or was stopped, and a rank of the job's world
    left no record at all: it is the likeliest culprit, named as a hint (it never called
    ``flightlog.init()``, or it died before its first records were shipped)."""
    world = max((f.world_size or 0 for f in ranks.values()), default=0)
    missing = sorted(set(range(world)) - set(ranks))
    if not missing or not ranks:
        return None
    waited = all(f.victim_error is not None or _ended_by_sigterm(f) or f.stalled for f in ranks.values())
    if not waited:
        return None
    culprit = missing[0]
    detail = (
        f"rank {culprit} of {world} left no record while {ranks_text(sorted(ranks))} only waited or were stopped "
        "(it did not call flightlog.init(), or it ended before its first records were shipped)"
    )
    verdict = Verdict(
        "code_error", culprit, "unseen", [Signal("code_error", 0.25, "a_rank_never_seen", "evidence", detail)]
    )
    verdict.cause = "left no record"
    return verdict


# ── the culprit's own cause, and its victims ───────────────────────────────────────────────────


def _job_end(culprit: RankFacts, ranks: dict[int, RankFacts]) -> float | None:
    """When the others gave up on a culprit that never ended by itself: their last failure."""
    ends = [f.failed_at for r, f in ranks.items() if r != culprit.rank and f.failed_at is not None]
    return max(ends) if ends else None


def _cause_of(
    verdict: Verdict,
    f: RankFacts | None,
    ranks: dict[int, RankFacts],
    live: bool,
    now: float,
    memory: MemoryAtTheEnd | None = None,
) -> None:
    if f is None:
        return
    error = f.own_error
    if error is not None:
        # the rank's own failure read whole (C4): its traceback behind a launcher's prefixes, in a
        # JSON log line's field or a rich box, a worker's error re-raised by its parent
        texts = [e.text for e in sorted(f.errors, key=lambda e: e.time) if not e.victim]
        read = read_failure(texts, exit_code=f.exit_code, signal=f.signal, rank=f.rank)
        chain = read.links
        signals = traceback_signals(chain, at=error.time) if chain else []
        if not _ended_by_sigterm(f):  # a SIGTERM after its own error is the launcher's teardown, no evidence
            signals += exit_signals(exit_code=f.exit_code, signal=f.signal, timed_out=False, oom_killed=False)
        top = combine(signals)
        category = top[0].category if top else "code_error"
        ranked = rank_process(read, at=error.time) if chain else []
        if ranked and ranked[0].confidence >= LEAD and ranked[0].category != category:
            # what the rank's error *is* is decided as for a process of its own (the ranker over
            # the whole reading): a framework's configuration check raised as a ValueError is a
            # bad parameter, not the user's code, whichever rank raised it
            category = ranked[0].category
            signals += ranked[0].signals
        verdict.category = category
        verdict.signals = [_as(s, category) for s in verdict.signals] + signals
        verdict.signals.append(
            Signal(category, 0.5, "the_culprit_s_own_error", "traceback", error.headline, error.time)
        )
        verdict.cause = error.headline
        own = chain[-1].innermost_own_frame() if chain else None
        if own is not None:
            verdict.where = {"file": own.file, "line": own.line, "function": own.function, "code": own.code or None}
        return
    if verdict.rule == "left_early":  # it ended well by its own account: its end is the cause, no exit or signal
        verdict.cause = "finished (exit 0) while the others still waited for it in a collective"
        verdict.where = _where_it_ended(f)
        return
    torn = _stopped_by_launcher(ranks, f.rank)  # stopped because the others gave up on it: it was stuck
    stuck = f.stalled or (f.stalls and not f.ended) or torn
    if f.ended and not stuck:
        signals = exit_signals(exit_code=f.exit_code, signal=f.signal, timed_out=False, oom_killed=False)
        if not signals and f.lost:
            detail = f"rank {f.rank} {_exit_text(f)}: most often a SIGKILL from outside or the OOM killer"
            signals = [Signal("killed_by_signal", 0.4, RANK_VANISHED, "exit", detail)]
        # whether the run's OOM record or its memory at the limit says the rank's kill was the
        # limit's, as a process of its own would be read (the OOM killer picks the largest
        # process: the rank), is decided where every kill is: weigh_memory_at_the_kill
        at_the_end = memory or MemoryAtTheEnd()
        signals = weigh_memory_at_the_kill(
            signals, at_the_end.share, detail=at_the_end.detail, oom_killed=at_the_end.oom_killed
        )
        top = combine(signals)
        category = top[0].category if top else "code_error"
        verdict.category = category if verdict.category != "collective_mismatch" else verdict.category
        verdict.signals = [_as(s, verdict.category) for s in verdict.signals] + signals
        verdict.cause = _exit_text(f)
        verdict.where = _where_it_ended(f)
        return
    if verdict.category != "collective_mismatch":
        verdict.category = "hang"
        verdict.signals = [_as(s, "hang") for s in verdict.signals]
    stacks = f.current_stacks
    verdict.where = where_in_stacks(stacks)
    if f.stalls:
        since = _since(f)
        end = now if live and f.stalled else f.failed_at or _job_end(f, ranks) or _num(f.stalls[-1].get("time")) or now
        verdict.stuck_for = max(0.0, end - since) if since is not None else None
        if verdict.where is not None:  # its stacks: a traceback's place is no proof that it was stuck
            verdict.signals.append(
                Signal(
                    verdict.category,
                    0.5,
                    "the_culprit_s_stacks",
                    "evidence",
                    f"rank {f.rank} made no progress; its main thread was in {_where_text(verdict.where)}",
                    _num(stacks.get("time")) if stacks else None,
                )
            )
    verdict.where = verdict.where or _where_in_its_traceback(f)
    if torn and verdict.rule != "torn_down":
        verdict.details.append(f"rank {f.rank} was then stopped by its launcher (SIGTERM)")
    elif f.ended and not torn:
        verdict.details.append(f"rank {f.rank} then {_exit_text(f)}")


def _where_it_ended(f: RankFacts) -> dict[str, Any] | None:
    """Where a rank that ended was at its end: its stacks while still current (no progress after
    them: ``RankFacts.current_stacks``), else its error's traceback, else unknown. Never a stall
    that had resolved before it ended (issue 28: "rank 1 was in <module> (`import torch`)" for a
    rank that imported slowly under load, then ran on and exited)."""
    return where_in_stacks(f.current_stacks) or _where_in_its_traceback(f)


def _where_in_its_traceback(f: RankFacts) -> dict[str, Any] | None:
    """The innermost frame of the workload's own code in the rank's first traceback (an error it
    raised, a victim's timeout included: where it waited), read whole as for its own error."""
    for error in sorted(f.errors, key=lambda e: e.time):
        read = read_failure([error.text], rank=f.rank)
        own = read.links[-1].innermost_own_frame() if read.links else None
        if own is not None:
            return {"file": own.file, "line": own.line, "function": own.function, "code": own.code or None}
    return None


def _victims(
    verdict: Verdict, ranks: dict[int, RankFacts], view: CollectiveView | None, live: bool, now: float
) -> None:
    for rank in sorted(ranks):
        if rank == verdict.culprit or rank in verdict.alike:
            continue
        f = ranks[rank]
        waited = None
        if view is not None and rank in view.last:
            entry = view.in_flight(rank)
            if entry is None and verdict.collective is not None:
                entry = view.entry(rank, int(verdict.collective["seq"]))
            started = _num(entry.get("time_created")) if entry is not None else None
            if started is not None:
                end = f.failed_at or (now if live else None) or _last_seen(f) or now
                waited = max(0.0, end - started)
        if waited is None and f.stalls:
            since = _since(f)
            stop = f.failed_at or (now if live and f.stalled else _num(f.stalls[-1].get("time")))
            waited = max(0.0, stop - since) if since is not None and stop is not None else None
        error = f.victim_error or f.own_error
        text = error.headline if error is not None else (_exit_text(f) if f.ended else None)
        verdict.victims.append(
            {"rank": rank, "waited_s": round(waited, 3) if waited is not None else None, "error": text}
        )


def _since(f: RankFacts) -> float | None:
    stalled = [s for s in f.stalls if s.get("state") == "stalled"]
    return _num(stalled[-1].get("since")) if stalled else None


def _last_seen(f: RankFacts) -> float | None:
    times = [_num(d.get("time")) for d in (*f.stalls, *f.stacks, *f.flight)]
    known = [t for t in times if t is not None]
    return max(known) if known else None


def _as(signal: Signal, category: str) -> Signal:
    return Signal(category, signal.weight, signal.id, signal.source, signal.detail, signal.at)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _exit_text(f: RankFacts) -> str:
    if f.signal is not None:
        return f"was killed by {signal_name(f.signal)}"
    if f.exit_code is not None:
        return f"exited with code {f.exit_code}"
    if f.lost:
        return "vanished without recording its end (killed, os._exit, or its host lost)"
    return "ended"


def _where_text(where: dict[str, Any]) -> str:
    return f"{where.get('function')} at {where.get('file')}:{where.get('line')}"
