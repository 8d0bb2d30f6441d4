"""The ranks of ``flightlog run -- torchrun …`` as the runner sees them, for scripts that never
call ``flightlog.init()`` (docs/distributed.md, "Ranks without the SDK").

A rank that calls ``init()`` records its own identity, heartbeats, steps and end (``run_writers``,
``store/sql/ranks.py``). A plain script under ``flightlog run`` records nothing itself; the
runner still sees every process of the job, so it speaks for each rank:

* **who** — each process of the workload's tree whose environment a launcher made a rank
  (``/proc/PID/environ`` read through ``launchenv.rank_identity``: torchrun's ``RANK``,
  Slurm's, Open MPI's, PMI's), or that the hang bootstrap announced as one (Lightning's rank 0
  learns its rank only when its process group forms). A rank's own children (data-loader
  workers inherit its variables) are not ranks of their own;
* **alive** — one writer per rank, its ``writer`` record naming the rank's process (host, pid,
  start); the writer's idle heartbeats say the rank lives while its process runs, and stop when
  it is gone;
* **its end** — once the attempt ended, from the launcher's summary (torchrun's ``Failures:``:
  exit code or signal per rank; a rank it does not list exited 0), else from the attempt's
  outcome; with the process's first traceback the capture attributed to its rank (``[rank1]:``
  lines), which becomes its first error where the store had none. After a restart
  (``--max-restarts``) the summary and the outcome are the last try's: an earlier try's process
  ends by its own traceback (failed) or else as stopped by the launcher (killed), and each
  process of a rank gets its own traceback (issue 28);
* **hung** — from the bootstrap's ``stall`` evidence (the same process), as for any rank.

These writers' ids begin with ``OBSERVED_WRITER_PREFIX``: where the rank's own SDK also recorded
(``init()`` inside a script under ``flightlog run``), readers keep the rank's own row and take
from this one only what it lacks (``store/sql/rankview.py``).

Everything runs on one daemon thread per attempt, guarded: observing the ranks never changes
how the workload runs or ends.
"""

from __future__ import annotations

import signal as signals
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psutil

from flightlog.failure import parse_python_traceback
from flightlog.ids import observed_writer_id
from flightlog.launchenv import RankIdentity, rank_identity
from flightlog.notices import notice
from flightlog.resources._tree import TreeWalker
from flightlog.sdk.shipper import shipper
from flightlog.sdk.writer import RunWriter

if TYPE_CHECKING:
    import flightlog
    from flightlog.runner.hangs import HangCollector
    from flightlog.runner.launcher import RankTraceback

__all__ = ["RankObserver", "ObservedRank"]

_POLL_S = 0.5
_MAX_RANKS = 4096
_IDENTITY_KEYS = ("rank", "local_rank", "world_size", "node_rank")
#: how long after a rank's process printed its traceback the capture may stamp it (the pipe's
#: reading, a traceback's lines joined into one event): the launcher may have started the rank's
#: next process meanwhile (torchrun restarted the workers 40 ms before restart 0's traceback was
#: stamped, on a loaded machine), and that process prints no rank traceback this soon (its
#: process group is not formed yet)
_READ_LAG_S = 1.0


@dataclass(frozen=True)
class _Printed:
    """One traceback a rank's process printed: when the capture read it, and its text."""

    at: float
    text: str


@dataclass
class ObservedRank:
    """One rank process the runner speaks for."""

    pid: int
    identity: dict[str, Any]  # rank, local_rank, world_size, node_rank, local_world_size, restart, launcher
    started: float
    writer: RunWriter | None = None
    exited: float | None = None


class RankObserver:
    """One attempt's observer (see the module docstring)."""

    def __init__(
        self,
        run: flightlog.Run,
        attempt: int,
        root_pid: int,
        *,
        collector: HangCollector | None = None,
        poll: float = _POLL_S,
    ) -> None:
        self.run = run
        self.attempt = attempt
        self.collector = collector
        self.ranks: dict[int, ObservedRank] = {}  # pid → rank
        self._walker = TreeWalker(root_pid)
        self._skipped: set[int] = set()  # pids looked at that are no ranks
        self._host = socket.gethostname()
        self._poll = poll
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._said: set[str] = set()
        self._tagged = False

    # ── its life ────────────────────────────────────────────────────────────
    def start(self) -> RankObserver:
        self._thread = threading.Thread(target=self._loop, name="flightlog-rank-observer", daemon=True)
        self._thread.start()
        return self

    def look_from(self, collector: HangCollector) -> RankObserver:
        """Look from the hang collector's thread (``HangCollector.carry``, before it starts) at
        this observer's pace, instead of a thread of its own."""
        collector.carry(self.look, self._poll)
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self._poll):
            self.look()

    def look(self, now: float | None = None) -> None:
        """One look at the tree: new ranks get their writer, ranks whose process ended stop
        beating. Never raises."""
        try:
            with self._lock:
                self._look(time.time() if now is None else now)
        except Exception as exc:  # never into the run: said once, goes on
            self._say_once("look", f"the ranks are not observed any more: {type(exc).__name__}: {exc}")

    def _look(self, now: float) -> None:
        procs = {p.pid: p for p in self._walker.processes()}
        for pid, proc in procs.items():
            if pid in self.ranks or pid in self._skipped:
                continue
            identity = self._identity_of(proc, procs)
            if identity is None:
                self._skipped.add(pid)
                continue
            self._track(pid, identity, _started(proc, now))
        for pid, agent_identity in self._agents().items():  # a rank known only to its hang watch (Lightning's rank 0)
            if pid in self.ranks or pid not in procs or not isinstance(agent_identity.get("rank"), int):
                continue
            # the tree's reading first: a rank whose watch reported before its environment was
            # read after its exec (read while it was still its launcher's fork) is a rank like
            # the others, with its launcher and sizes; the watch's own identity (Lightning's rank
            # 0, known only to torch) where the environment says nothing
            identity = self._identity_of(procs[pid], procs) or {k: agent_identity.get(k) for k in _IDENTITY_KEYS}
            self._track(pid, identity, _started(procs[pid], now))
        for pid, rank in self.ranks.items():
            if rank.exited is None and (pid not in procs or not _alive(procs[pid])):
                rank.exited = now
                self._quiet(rank)

    def _identity_of(self, proc: psutil.Process, procs: dict[int, psutil.Process]) -> dict[str, Any] | None:
        try:
            environ = proc.environ()
            parent = proc.ppid()
        except (psutil.Error, OSError):
            return None
        found = rank_identity(environ, launcher_process=f"observed:{parent}")
        if found is None or not found.distributed:
            return None
        mine = self.ranks.get(parent)
        if mine is not None and mine.identity.get("rank") == found.rank:
            return None  # the rank's own child (a data-loader worker inherits its variables)
        return _fields(found)

    def _agents(self) -> dict[int, dict[str, Any]]:
        agents = getattr(self.collector, "agents", None)
        if not agents:
            return {}
        return {pid: dict(agent.identity) for pid, agent in list(agents.items())}

    def _track(self, pid: int, identity: dict[str, Any], started: float) -> None:
        if len(self.ranks) >= _MAX_RANKS:
            return
        rank = ObservedRank(pid, identity, started)
        self.ranks[pid] = rank
        rank.writer = self._writer(rank)
        if not self._tagged:  # readers know a distributed run by it, as when its ranks call init()
            self._tagged = True
            try:
                self.run.set_tags({"distributed": str(identity.get("launcher") or "ranks")})
            except Exception:
                pass

    def _writer(self, rank: ObservedRank) -> RunWriter | None:
        try:
            writer = RunWriter(
                self.run.settings, self.run.id, attempt=self.attempt, rank=rank.identity["rank"], context=False
            )
            writer.writer_id = observed_writer_id()
            writer.rank_fields = {k: v for k, v in rank.identity.items() if v is not None}
            pstart = {}
            try:
                pstart = {"pstart": float(psutil.Process(rank.pid).create_time()), "boot": float(psutil.boot_time())}
            except (psutil.Error, OSError):
                pass
            writer.add_record(
                "writer",
                t=rank.started,
                host=self._host,
                pid=rank.pid,
                owner=False,
                attempt=self.attempt,
                **pstart,
                **writer.rank_fields,
            )
            writer.flush()  # in the store at once: the rank's first error may follow within a second
            shipper.register(writer)  # its idle heartbeats say the rank lives
            return writer
        except Exception as exc:
            self._say_once("writer", f"rank {rank.identity.get('rank')} is not recorded as a rank: {exc}")
            return None

    def _quiet(self, rank: ObservedRank) -> None:
        """The rank's process ended: no more heartbeats for it (its end comes with the attempt's)."""
        if rank.writer is not None:
            shipper.unregister(rank.writer)
            try:
                rank.writer.flush()
            except Exception:
                pass

    # ── the attempt's end ───────────────────────────────────────────────────
    def finish(
        self,
        *,
        succeeded: bool,
        launcher: dict[str, Any] | None,
        tracebacks: dict[int, RankTraceback],
        stopped_by: int | None = None,
    ) -> None:
        """End every rank's writer with how its process ended (see the module docstring):
        ``launcher`` is the ``launcher_exits`` evidence, ``tracebacks`` each rank's tracebacks
        from the captured output, ``stopped_by`` a signal the runner sent the tree (a timeout,
        Ctrl-C). Never raises."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        try:
            with self._lock:
                self._look(time.time())
                self._end_all(succeeded, launcher, tracebacks, stopped_by)
        except Exception as exc:
            self._say_once("finish", f"the ranks' ends were not recorded: {type(exc).__name__}: {exc}")

    def _end_all(
        self,
        succeeded: bool,
        launcher: dict[str, Any] | None,
        tracebacks: dict[int, RankTraceback],
        stopped_by: int | None,
    ) -> None:
        exits = {e["rank"]: e for e in (launcher or {}).get("ranks") or [] if isinstance(e.get("rank"), int)}
        summary = bool(launcher and launcher.get("launcher"))
        now = time.time()
        last = _last_try(self.ranks.values())
        seen = {r.identity.get("rank") for r in last}
        for rank_no, entry in exits.items():  # a rank the launcher named but the tree never showed (it died at once)
            if rank_no not in seen and isinstance(entry.get("pid"), int) and len(self.ranks) < _MAX_RANKS:
                identity = self._job_fields(launcher)
                identity.update(rank=rank_no, local_rank=entry.get("local_rank"))
                rank = ObservedRank(int(entry["pid"]), identity, now, exited=now)
                self.ranks[rank.pid] = rank
                rank.writer = self._writer(rank)
                self._quiet(rank)
                last.append(rank)
        own = _own_tracebacks(self.ranks.values(), tracebacks)
        for rank in self.ranks.values():
            if rank.writer is None:
                continue
            number = rank.identity.get("rank")
            tb = own.get(rank.pid)
            if any(rank is r for r in last):  # the launcher's summary and the attempt's end describe this try
                entry = exits.get(number)
                end = _end_of(entry, succeeded=succeeded, summary=summary, stopped_by=stopped_by)
            else:  # an earlier try's process, ended when the launcher restarted the workers
                entry = None
                end = _restarted_end(tb)
            failure = _failure_of(entry, tb, rank.pid)
            if failure is not None and end["status"] != "succeeded":
                end["failure"] = failure
            end["t"] = rank.exited or now
            shipper.unregister(rank.writer)
            rank.writer.close(remove_journal_if_shipped=True, end=end)

    def _job_fields(self, launcher: dict[str, Any] | None) -> dict[str, Any]:
        """What every rank of this node shares (the job's size, launcher, node, restart), for a
        rank known only from the launcher's summary: taken from a rank the tree showed, else the
        summary's launcher, so such a rank lists like its siblings."""
        shared = ("world_size", "node_rank", "local_world_size", "restart", "launcher")
        fields: dict[str, Any] = dict.fromkeys(shared)
        for rank in sorted(self.ranks.values(), key=lambda r: r.started, reverse=True):  # the last try's first
            for key in shared:
                if fields[key] is None and rank.identity.get(key) is not None:
                    fields[key] = rank.identity[key]
        if fields["launcher"] is None and launcher:
            fields["launcher"] = launcher.get("launcher")
        return fields

    def _say_once(self, key: str, message: str) -> None:
        if key not in self._said:
            self._said.add(key)
            notice(message)


def _fields(identity: RankIdentity) -> dict[str, Any]:
    return {
        "rank": identity.rank,
        "local_rank": identity.local_rank,
        "world_size": identity.world_size,
        "node_rank": identity.node_rank,
        "local_world_size": identity.local_world_size,
        "restart": identity.restart_count,
        "launcher": identity.launcher,
    }


def _started(proc: psutil.Process, now: float) -> float:
    try:
        return min(now, float(proc.create_time()))
    except (psutil.Error, OSError):
        return now


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, OSError):
        return False


def _last_try(ranks: Iterable[ObservedRank]) -> list[ObservedRank]:
    """The processes of the launcher's last try: those of the highest restart count
    (``TORCHELASTIC_RESTART_COUNT``); all of them where the launcher does not count restarts.
    The launcher's summary describes only these (torchrun's ``Failures:`` lists the last try's
    exits): an earlier try's rank 1 read "killed SIGTERM" from it (issue 28)."""
    ranks = list(ranks)
    restarts = [r.identity.get("restart") for r in ranks]
    counted = [n for n in restarts if isinstance(n, int)]
    if not counted:
        return ranks
    newest = max(counted)
    return [r for r, n in zip(ranks, restarts, strict=True) if n == newest or not isinstance(n, int)]


def _own_tracebacks(ranks: Iterable[ObservedRank], tracebacks: dict[int, RankTraceback]) -> dict[int, _Printed]:
    """Each process's first traceback (by pid). One rank number is several processes when the
    launcher restarted the workers: a traceback is that number's newest process's that had
    started ``_READ_LAG_S`` before it was read, else its first process's; never the first
    traceback of the number for every try (issue 28)."""
    by_number: dict[int, list[ObservedRank]] = {}
    for rank in ranks:
        number = rank.identity.get("rank")
        if isinstance(number, int) and number in tracebacks:
            by_number.setdefault(number, []).append(rank)
    own: dict[int, _Printed] = {}
    for number, procs in by_number.items():
        procs.sort(key=lambda r: r.started)
        tb = tracebacks[number]
        for at, text in tb.each or [(tb.first_at, tb.first)]:
            begun = [r for r in procs if r.started <= at - _READ_LAG_S]
            owner = begun[-1] if begun else procs[0]
            if owner.pid not in own:
                own[owner.pid] = _Printed(at, text)
    return own


def _restarted_end(tb: _Printed | None) -> dict[str, Any]:
    """How an earlier try's process ended: the launcher's summary is the last try's, and the
    process was not the runner's child (its exit code is not known). One that printed a
    traceback failed by itself; another was stopped by the launcher to restart the workers."""
    if tb is not None:
        return {"status": "failed", "end_reason": "exception", "exit_code": None, "signal": None}
    return {
        "status": "killed",
        "end_reason": "stopped by the launcher to restart the workers",
        "exit_code": None,
        "signal": None,
    }


def _end_of(entry: dict[str, Any] | None, *, succeeded: bool, summary: bool, stopped_by: int | None) -> dict[str, Any]:
    """How one rank ended: the launcher's word for it, else what the attempt's end implies."""
    if entry is not None and (entry.get("signal") is not None or entry.get("exit_code") is not None):
        sig: Any = entry.get("signal")
        code: Any = entry.get("exit_code")
        if sig is not None:
            status = "stopped" if sig == signals.SIGINT else "killed"
            return {"status": status, "end_reason": "signal", "exit_code": 128 + int(sig), "signal": int(sig)}
        if code == 0:
            return {"status": "succeeded", "end_reason": "exit", "exit_code": 0, "signal": None}
        return {"status": "failed", "end_reason": "exit", "exit_code": int(code), "signal": None}
    if succeeded or summary:  # torchrun lists every rank that failed: one it does not list exited 0
        return {"status": "succeeded", "end_reason": "exit", "exit_code": 0, "signal": None}
    if stopped_by is not None:
        status = "stopped" if stopped_by == signals.SIGINT else "killed"
        return {"status": status, "end_reason": "signal", "exit_code": 128 + stopped_by, "signal": stopped_by}
    # the launcher said nothing about it (mpirun, srun): its exit is unknown
    return {
        "status": "lost",
        "end_reason": "unknown exit (the launcher did not say)",
        "exit_code": None,
        "signal": None,
    }


def _failure_of(entry: dict[str, Any] | None, tb: _Printed | None, pid: int) -> dict[str, Any] | None:
    """The process's own failure summary: its first traceback in the captured output (parsed),
    else the launcher's headline for it; with ``first_error`` for the store's ranks table."""
    failure: dict[str, Any] | None = None
    if tb is not None:
        failure = parse_python_traceback(tb.text) or {"message": _last_line(tb.text)}
        failure["first_error"] = {"message": _last_line(tb.text), "time": tb.at or None}
    elif entry is not None and isinstance(entry.get("error"), str) and entry["error"]:
        failure = {"message": entry["error"], "first_error": {"message": entry["error"], "time": entry.get("error_at")}}
    if failure is not None:
        failure["source"] = "flightlog run"
        failure["pid"] = entry.get("pid") if entry else pid
    return failure


def _last_line(text: str) -> str:
    """A traceback's exception line (its last non-empty line), bounded."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:2000] if lines else ""
