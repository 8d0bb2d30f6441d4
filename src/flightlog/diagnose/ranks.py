"""What a distributed run's evidence says about each of its ranks, gathered once.

A rank's story comes from several writers: its own SDK (log events carrying its rank, hang
evidence), the runner (the hang evidence the bootstrap handed over, each rank's exit as seen on
the process tree, the launcher's summary: ``launcher_exits``), and the capture pipeline (a
rank's traceback, its launcher prefix taken off, is one event carrying its rank). `gather_ranks`
puts them side by side per rank; the judging is `culprit.py`'s.

The evidence kinds (contract C3, docs/distributed.md): ``stall`` (a rank stopped or resumed
making progress), ``stacks``, ``flight_recorder``, ``collectives`` (entry times of the
collectives, sampled), ``rank_error`` (a rank's uncaught exception, from the bootstrap),
``rank_exit`` (a rank's process ended, seen by the runner), ``launcher_exits``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flightlog.capture.launchers import is_signal_notice, is_victim_message
from flightlog.diagnose.evidence import ERROR, RunEvidence
from flightlog.diagnose.tracebacks import is_library_file
from flightlog.resources.agent.stacks import current_stacks

__all__ = [
    "RankFacts",
    "RankError",
    "gather_ranks",
    "HANG_KINDS",
    "current_stacks",
    "where_in_stacks",
    "waiting_in_collective",
]

HANG_KINDS = ("stall", "stacks", "flight_recorder", "collectives", "rank_error", "rank_exit")
_HEADER = "Traceback (most recent call last)"
#: frames of these files are the machinery, never "where the rank was"
_MACHINERY = ("/flightlog/", "/threading.py", "/selectors.py", "/_flightlog_agent/", "/queue.py")


@dataclass
class RankError:
    time: float
    text: str
    source: str  # logs | bootstrap | launcher

    @property
    def victim(self) -> bool:
        return is_victim_message(self.text)

    @property
    def headline(self) -> str:
        for line in reversed(self.text.strip().splitlines()):
            if line.strip():
                return line.strip()[:300]
        return ""


@dataclass
class RankFacts:
    rank: int
    host: str | None = None
    pid: int | None = None
    world_size: int | None = None
    exit_code: int | None = None
    signal: int | None = None
    exited_at: float | None = None
    launcher_root_cause: bool = False
    lost: bool = False  # it vanished without recording an end (SIGKILL, os._exit, a lost host)
    succeeded: bool = False  # it ended by itself, exit 0: its own end record or its launcher's (issue 28)
    current_pid: int | None = None  # the process of its latest restart (the store's row)
    exits: dict[int, float] = field(default_factory=dict)  # pid → when the runner saw that process end
    last_step_at: float | None = None  # when it logged its last step (its row in the store)
    errors: list[RankError] = field(default_factory=list)
    stalls: list[dict[str, Any]] = field(default_factory=list)
    stacks: list[dict[str, Any]] = field(default_factory=list)
    flight: list[dict[str, Any]] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def first_error(self) -> RankError | None:
        return min(self.errors, key=lambda e: e.time) if self.errors else None

    @property
    def own_error(self) -> RankError | None:
        """The first error of this rank's own (not a message of one that only waited)."""
        own = [e for e in self.errors if not e.victim]
        return min(own, key=lambda e: e.time) if own else None

    @property
    def victim_error(self) -> RankError | None:
        waited = [e for e in self.errors if e.victim]
        return min(waited, key=lambda e: e.time) if waited else None

    @property
    def stalled(self) -> bool:
        """Its watch's last word: stalled (and never resumed since)."""
        return bool(self.stalls) and self.stalls[-1].get("state") == "stalled"

    @property
    def stalled_since(self) -> float | None:
        return _num(self.stalls[-1].get("since")) if self.stalled else None

    @property
    def current_stacks(self) -> dict[str, Any] | None:
        """Its newest stacks while they still say where it is: no sign of progress came after
        them (see :func:`current_stacks`). Its newest stacks alone may be of a stall it had left
        long before it ended (issue 28); no reader quotes those as where the rank was."""
        newest = max((t for t in (_num(s.get("time")) for s in self.stacks) if t is not None), default=None)
        return current_stacks(self.stacks, stalls=self.stalls, progress_at=self.progress_times(after=newest))

    def progress_times(self, after: float | None = None) -> list[float]:
        """When the rank is known to have moved on, besides its watch's ``resumed`` records: its
        last step, and each collective it entered (its recorder's entries, its sampled entry
        times). ``after``: only what records taken after it hold (an entry is older than the
        record that holds it), so a long run's thousands of samples are not read for every look."""
        times = [self.last_step_at] if self.last_step_at is not None else []
        for dump in _taken_after(self.flight, after):
            entries = [e for e in dump.get("entries") or [] if isinstance(e, dict)]
            times += [t for t in (_num(e.get("time_created")) for e in entries) if t is not None]
        for sample in _taken_after(self.samples, after):
            groups = sample.get("collectives")
            for group in groups.values() if isinstance(groups, dict) else []:
                entered = group.get("time") if isinstance(group, dict) else None
                times += [t for t in (_num(x) for x in entered or []) if t is not None]
        return times

    @property
    def latest_flight(self) -> dict[str, Any] | None:
        usable = [f for f in self.flight if f.get("entries")]
        return usable[-1] if usable else None

    @property
    def ended(self) -> bool:
        return self.exited_at is not None or self.exit_code is not None or self.signal is not None or self.lost

    @property
    def failed_at(self) -> float | None:
        """When it failed or ended, as far as anything says."""
        times = [t for t in (self.first_error.time if self.first_error else None, self.exited_at) if t is not None]
        return min(times) if times else None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _taken_after(records: list[dict[str, Any]], after: float | None) -> list[dict[str, Any]]:
    """The records taken after ``after`` (all of them for None); one without a time is kept."""
    if after is None:
        return records
    return [r for r in records if (_num(r.get("time")) or float("inf")) > after]


def gather_ranks(ev: RunEvidence) -> tuple[dict[int, RankFacts], list[dict[str, Any]]]:
    """Per rank, everything the run holds about it; and the hang evidence of a process that is no
    rank (a single process's stalls and stacks, or a launcher's), in time order."""
    ranks: dict[int, RankFacts] = {}
    unranked: list[dict[str, Any]] = []

    def facts(rank: int) -> RankFacts:
        if rank not in ranks:
            ranks[rank] = RankFacts(rank)
        return ranks[rank]

    for item in ev.evidence:
        kind, data = item.get("kind"), item.get("data")
        if kind not in HANG_KINDS or not isinstance(data, dict):
            continue
        rank = data.get("rank")
        if not isinstance(rank, int) or isinstance(rank, bool):
            unranked.append({"kind": kind, "time": item.get("time"), "data": data})
            continue
        f = facts(rank)
        f.host = f.host or data.get("host")
        f.pid = f.pid or data.get("pid")
        f.world_size = f.world_size or data.get("world_size")
        if kind == "stall":
            f.stalls.append(data)
        elif kind == "stacks":
            f.stacks.append(data)
        elif kind == "flight_recorder":
            f.flight.append(data)
        elif kind == "collectives":
            f.samples.append(data)
        elif kind == "rank_error":
            text = str(data.get("traceback") or f"{data.get('type')}: {data.get('message')}")
            f.errors.append(RankError(_num(data.get("time")) or 0.0, text, "bootstrap"))
        elif kind == "rank_exit":
            at = _num(data.get("time"))
            if at is not None and (f.exited_at is None or at < f.exited_at):
                f.exited_at = at
            pid = data.get("pid")
            if at is not None and isinstance(pid, int):
                f.exits[pid] = at
    for facts_ in ranks.values():
        for items in (facts_.stalls, facts_.stacks, facts_.flight, facts_.samples):
            items.sort(key=lambda d: _num(d.get("time")) or 0.0)
    _launcher_exits(ev, facts)
    _rank_rows(ev, facts)
    _log_errors(ev, ranks, facts)
    for f in ranks.values():
        _this_restart_only(f)
    return ranks, unranked


def _this_restart_only(f: RankFacts) -> None:
    """What an earlier process of this rank left — torchrun restarted the workers
    (``--max-restarts``) — is no evidence of how the current one ended: its errors, stalls,
    stacks and recorder dumps, all recorded before the runner saw that process end. Read with
    them, a job whose last restart failed on rank 0 was judged by rank 1's error of the first
    try (issue 28). The boundary is the runner's own clock (``rank_exit``), the one its capture
    stamps lines with; a record without a time is kept."""
    if f.current_pid is None:
        return
    before = [at for pid, at in f.exits.items() if pid != f.current_pid]
    if not before:
        return
    since = max(before)

    def current(t: float | None) -> bool:
        return t is None or t == 0.0 or t > since

    f.errors = [e for e in f.errors if current(e.time)]
    for items in (f.stalls, f.stacks, f.flight, f.samples):
        items[:] = [d for d in items if current(_num(d.get("time")))]
    f.exited_at = f.exits.get(f.current_pid)
    f.pid = f.current_pid


def _launcher_exits(ev: RunEvidence, facts: Any) -> None:
    for item in ev.evidence_of("launcher_exits"):
        data = item.get("data")
        if not isinstance(data, dict):
            continue
        for entry in data.get("ranks") or []:
            rank = entry.get("rank") if isinstance(entry, dict) else None
            if not isinstance(rank, int):
                continue
            f = facts(rank)
            f.host = f.host or entry.get("host")
            f.pid = f.pid or entry.get("pid")
            if entry.get("exit_code") is not None:
                f.exit_code = entry.get("exit_code")
            if entry.get("signal") is not None:
                f.signal = entry.get("signal")
            f.launcher_root_cause = f.launcher_root_cause or rank == data.get("reported_root_cause")
            error = entry.get("error")
            if isinstance(error, str) and is_signal_notice(error):
                continue  # torchrun's "Signal 15 (SIGTERM) received by PID …": the rank's end, not its error
            if isinstance(error, str) and error and not any(error in e.text for e in f.errors):
                at = _num(entry.get("error_at")) or _num(item.get("time")) or 0.0
                f.errors.append(RankError(at, error, "launcher"))


def _rank_rows(ev: RunEvidence, facts: Any) -> None:
    """Each rank's own account in the store (contract C2, ``Client.ranks``): its end (exit code,
    signal, ``lost`` for a rank that vanished without a word) and its first error. Readers
    without it (an older server) leave this out."""
    read = getattr(ev.client, "ranks", None)
    if read is None:
        return
    try:
        rows = read(ev.info)
    except Exception:
        return
    for row in rows or []:
        rank = getattr(row, "rank", None)
        if not isinstance(rank, int):
            continue
        f = facts(rank)
        f.host = f.host or getattr(row, "host", None)
        f.pid = f.pid or getattr(row, "pid", None)
        f.world_size = f.world_size or getattr(row, "world_size", None)
        pid = getattr(row, "pid", None)
        if isinstance(pid, int):
            f.current_pid = pid
        step_at = _num(getattr(row, "last_step_time", None))
        if step_at is not None and (f.last_step_at is None or step_at > f.last_step_at):
            f.last_step_at = step_at
        state = getattr(row, "state", None)
        if f.exit_code is None and getattr(row, "exit_code", None) is not None and state != "succeeded":
            f.exit_code = row.exit_code
        if f.signal is None and getattr(row, "signal", None) is not None:
            f.signal = row.signal
        if state == "lost" and f.exited_at is None:
            f.lost = True
        if state == "succeeded" and f.exit_code is None and f.signal is None:
            # kept apart from ``exit_code``: a rank that finished is no exit of its own, except
            # while the others still waited for it in a collective (``culprit._left_early``)
            f.succeeded = True
        error = getattr(row, "first_error", None)
        if isinstance(error, dict) and error.get("message") and not any(error["message"] in e.text for e in f.errors):
            f.errors.append(RankError(_num(error.get("time")) or 0.0, str(error["message"]), "ranks"))


def _log_errors(ev: RunEvidence, ranks: dict[int, RankFacts], facts: Any) -> None:
    """Each rank's error events: tracebacks and error lines it printed (its launcher prefix taken
    off by the capture) or its SDK recorded. A rank known only from its log events joins too, in
    a run that has ranks at all."""
    events = [e for e in ev.errors if e.rank is not None and e.level >= ERROR and e.component != "flightlog"]
    for e in events:
        f = facts(e.rank)
        text = e.message
        if any(text.strip() and text.strip() in known.text for known in f.errors):
            continue  # the bootstrap's copy of the same traceback
        f.errors.append(RankError(e.time, text, "logs"))
    for f in ranks.values():
        # one traceback may be in both the bootstrap's record and the captured output: keep the earliest
        f.errors.sort(key=lambda e: (e.time, _HEADER not in e.text))


def where_in_stacks(stacks: dict[str, Any] | None) -> dict[str, Any] | None:
    """Where a rank was, from its stacks: the innermost frame of its main thread (else of its first
    thread) that is the workload's own code — not the standard library, a package or flightlog."""
    if not stacks:
        return None
    main = _main_thread(stacks)
    if main is None:
        return None
    frames = [f for f in main.get("frames") or [] if isinstance(f, dict)]
    for frame in reversed(frames):
        path = str(frame.get("file") or "")
        if is_library_file(path) or any(m in path for m in _MACHINERY):
            continue
        return {
            "file": path,
            "line": frame.get("line"),
            "function": frame.get("function"),
            "code": frame.get("code") or None,
        }
    return None


def waiting_in_collective(stacks: dict[str, Any] | None) -> bool:
    """Whether a rank's main thread is inside ``torch.distributed`` (waiting for the others)."""
    main = _main_thread(stacks)
    if main is None:
        return False
    frames = [f for f in main.get("frames") or [] if isinstance(f, dict)]
    return any("torch/distributed/" in str(f.get("file") or "") for f in frames[-4:])


def _main_thread(stacks: dict[str, Any] | None) -> dict[str, Any] | None:
    """The main thread of a stacks record: named so (``sys._current_frames``), else the one that
    runs the program's ``<module>`` (faulthandler names threads by id only), else the first."""
    if not stacks:
        return None
    threads = [t for t in stacks.get("threads") or [] if isinstance(t, dict)]
    if not threads:
        return None
    named = next((t for t in threads if t.get("name") == "MainThread"), None)
    if named is not None:
        return named
    for t in threads:
        frames = t.get("frames") or []
        if frames and isinstance(frames[0], dict) and frames[0].get("function") == "<module>":
            return t
    return next((t for t in threads if t.get("name") == "current"), threads[0])
