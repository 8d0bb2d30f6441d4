"""The hang watch: one daemon thread per process that notices when the process stops making
progress, and then records where it is.

Signs of progress are counters the thread reads (never pushed to it, so the training loop pays
nothing): the SDK's step counter and its count of finished stages and heartbeats, and torch's
sequence number of the collectives the rank issued. When none of them moved for longer than
the threshold (`HangSettings.threshold`: a multiple of the usual time between moves, between a
floor and a ceiling), the process is stalled: the thread hands over a ``stall`` record, the
stacks of every thread and the Flight Recorder's entries; again every ``repeat`` seconds while
it stays stuck (at most ``dumps`` times); and a ``stall`` record with state ``resumed`` when a
counter moves again. Asked from outside (`request`, or a request file under the runner), it
records the same evidence at once.

It also samples, every ``sample_every`` seconds at the same wall-clock instants on every rank,
when each collective was entered (the Flight Recorder's creation times): a straggler is the rank
that enters the collectives late (docs/distributed.md).

Never raises into the process: every step is guarded, a failure is counted and said once.
Standard library only (see ``agent/__init__.py``).
"""

from __future__ import annotations

import _thread
import os
import sys
import time
from _collections import deque  # collections.deque itself, without the collections package (its start-up cost)

from .bare import BareThread
from .groups import GroupTimeouts
from .nearby import start_beside
from .settings import GROUP_TIMEOUT_SHARE, TEARDOWN_SHARE, HangSettings, hostname, rank_env, say
from .stacks import (
    collective_progress,
    flight_recorder_evidence,
    flight_recorder_raw,
    normalize_flight_recorder,
    stacks_evidence,
)

__all__ = ["RankWatch", "current_watch", "process_identity", "stalled_text"]

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing into a workload at start-up
if TYPE_CHECKING:  # only for the checker: no subscripted ABC at run time on a workload's older Python
    import threading
    from collections.abc import Callable
    from typing import Any

    #: (kind, name, data, raw text to keep as an artifact or None) → None
    Deliver = Callable[[str, str, dict[str, Any], str | None], None]
_GAPS = 32  # gaps between signs of progress kept to judge the usual one
_SAMPLE_ENTRIES = 256  # collective entry times kept per sample

_THREAD_NAME = "flightlog-hang-watch"
_current: RankWatch | None = None
_current_lock = _thread.allocate_lock()


def _median(values: Any) -> float:
    import statistics  # here: the bootstrap imports this module at a workload's start-up, and statistics is heavy

    return statistics.median(values)


def current_watch() -> RankWatch | None:
    """The watch running in this process (started by the SDK or the runner's bootstrap), if any."""
    return _current if _current is not None and _current.alive else None


def process_identity() -> dict[str, Any]:
    """This process as a rank: torch's own answer once the process group exists, else the launcher's environment."""
    ident: dict[str, Any] = dict(rank_env())
    ident["pid"] = os.getpid()
    ident["host"] = hostname()
    dist = sys.modules.get("torch.distributed")
    if dist is not None:
        try:
            if dist.is_available() and dist.is_initialized():
                ident["rank"] = int(dist.get_rank())
                ident["world_size"] = int(dist.get_world_size())
        except Exception:
            pass
    return ident


class _Wake:
    """What the watch's thread sleeps on between looks: one lock, held while nobody asked, that
    ``set`` releases. Its ``wait`` returns holding it again (the next ``set`` wakes the next wait:
    nothing to clear) and a wake-up is one futex. A `threading.Event` is a condition around a
    lock: its wait allocates a lock and its set takes a second one, and the woken thread then
    waits for the setter's lock: per run of a sweep, a start and a stop of the watch each pay
    for it."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = _thread.allocate_lock()
        self._lock.acquire()

    def set(self) -> None:
        try:
            self._lock.release()
        except RuntimeError:  # set already, not waited on since
            pass

    def wait(self, timeout: float) -> bool:
        """Until ``set`` (True) or ``timeout`` seconds (False)."""
        return self._lock.acquire(timeout=timeout)


class RankWatch:
    """See the module docstring. ``deliver`` receives what the watch records; ``source`` says
    who started it (``sdk`` or ``bootstrap``) and goes into every record."""

    def __init__(
        self,
        settings: HangSettings,
        deliver: Deliver,
        *,
        source: str = "sdk",
        request_file: str | None = None,
        on_identity: Callable[[dict[str, Any]], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.deliver = deliver
        self.source = source
        self.request_file = request_file
        self.on_identity = on_identity
        self._known: tuple[Any, Any] | None = None  # (rank, world size) last told to on_identity
        self._clock = clock
        self._sources: dict[str, Callable[[], Any]] = {}
        self._stages: Callable[[], dict[str, Any]] | None = None
        self._wake = _Wake()
        self._stopped = False  # set before `_wake`, read after it: the thread ends at its next wake-up
        self._tick_lock = _thread.allocate_lock()  # the thread's ticks and a finishing run's `settle`
        self._requests: deque[str] = deque(maxlen=8)
        self._thread: threading.Thread | BareThread | None = None
        self._pid = os.getpid()
        self.errors = 0
        self.dropped = 0  # deliveries that failed
        self._said: set[str] = set()
        # progress state
        self._last: tuple[Any, ...] | None = None
        self._last_move: float | None = None
        self._gaps: deque[float] = deque(maxlen=_GAPS)
        self._longest = 0.0
        self._started = clock()
        self.stalled_since: float | None = None
        self._dumps = 0
        self._last_dump = 0.0
        self._sample_seq: dict[str, int] = {}
        self._next_sample: float | None = None
        self.stalls = 0
        self._timeouts = GroupTimeouts()  # the process groups' timeout: a stall is judged well inside it
        self._poll = settings.poll

    # ── what the process tells it ───────────────────────────────────────────
    def add_source(self, name: str, read: Callable[[], Any]) -> None:
        """A counter that moves when the process makes progress (read from the watch's thread)."""
        self._sources[name] = read

    def remove_source(self, name: str) -> None:
        self._sources.pop(name, None)

    def settle(self) -> None:
        """One last look before a source goes (a run finishing): a stall it ended is recorded as
        resumed, not left open. From the finishing thread; never raises."""
        try:
            with self._tick_lock:
                now = self._clock()
                if self._progress(now) and self.stalled_since is not None:
                    self._resumed(now)
        except Exception:
            self.errors += 1

    def set_stages(self, read: Callable[[], dict[str, Any]] | None) -> None:
        """Where the rank's time goes (its stage totals), sent with each sample of collectives."""
        self._stages = read

    def request(self, reason: str) -> None:
        """Record the stacks and the Flight Recorder now (from any thread)."""
        self._requests.append(reason)
        self._wake.set()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._pid == os.getpid()

    # ── its life ────────────────────────────────────────────────────────────
    def start(self) -> RankWatch:
        global _current
        threading_module = sys.modules.get("threading")
        if threading_module is None:  # the bootstrap's, in a workload that has not imported threading (yet): bare.py
            self._thread = BareThread(self._run, _THREAD_NAME, self._wake.set)
            self._thread.start()
        else:
            thread = threading_module.Thread(target=self._run, name=_THREAD_NAME, daemon=True)
            self._thread = thread
            start_beside(thread)  # on the starting run's CPU: no wait behind another process (nearby.py)
        with _current_lock:
            _current = self
        return self

    def stop(self, *, wait: bool = True) -> None:
        """Stop the thread. ``wait=False`` tells it to and returns once no look is in progress
        (what a look that had begun delivers is delivered by then); :meth:`join` waits for the
        thread later. A finishing run tells it first and joins it after its last records are
        stored, so the thread's exit overlaps that work rather than adding a wake-up on a busy
        machine to every ``finish()``."""
        global _current
        self._stopped = True
        self._wake.set()
        with _current_lock:
            if _current is self:
                _current = None
        if wait:
            self.join()
        elif not self._on_own_thread():
            with self._tick_lock:  # a look under way ends (its thread then sees the stop)
                pass

    def join(self, timeout: float = 2.0) -> None:
        """Wait (at most ``timeout`` seconds) for a stopped watch's thread to end."""
        thread = self._thread
        if thread is not None and not self._on_own_thread() and self._pid == os.getpid():
            thread.join(timeout=timeout)

    def _on_own_thread(self) -> bool:
        thread = self._thread
        return thread is not None and thread.ident == _thread.get_ident()

    def _run(self) -> None:
        thread = self._thread
        serve = thread.serve if isinstance(thread, BareThread) else None
        while not self._stopped:
            self._wake.wait(self._poll)
            if serve is not None:
                serve()  # threading imported by the workload meanwhile: into its books (bare.py)
            if self._stopped:
                break
            try:
                with self._tick_lock:
                    self.tick(self._clock())
            except Exception as exc:  # never into the workload: counted, said once
                self.errors += 1
                self._say_once("tick", f"the hang watch failed once and goes on: {type(exc).__name__}: {exc}")

    # ── one look (also called directly by tests with their own clock) ───────
    def tick(self, now: float) -> None:
        self._check_identity()
        self._look_for_requests()
        while self._requests:
            stalled_for = now - self.stalled_since if self.stalled_since is not None else None
            self._evidence(now, f"requested: {self._requests.popleft()}", stalled_for=stalled_for, counted=False)
        moved = self._progress(now)
        s = self.settings
        if moved and self.stalled_since is not None:
            self._resumed(now)
        if self.stalled_since is None:
            limit = self.threshold()
            if limit is not None:  # look often enough to judge a short threshold in time
                self._poll = max(0.05, min(s.poll, limit / 8))
            since = self._last_move if self._last_move is not None else self._started
            if limit is not None and now - since >= limit:
                self._stalled(now, since, limit)
        elif self._dumps < s.dumps and now - self._last_dump >= s.repeat:
            self._evidence(now, "still no progress", stalled_for=now - self.stalled_since)
        self._maybe_sample(now)

    def threshold(self) -> float | None:
        """Seconds without progress that count as stalled now (None: not judged yet)."""
        usual = _median(self._gaps) if self._gaps else None
        return self.settings.threshold(usual, self._longest, self._ranked(), self.group_timeout())

    def group_timeout(self) -> float | None:
        """The shortest timeout of this process's torch process groups (None: none known)."""
        try:
            return self._timeouts.current()
        except Exception:
            return None

    def _ranked(self) -> bool:
        """A rank of a distributed job (judged from its start), not a single process (judged from its first step)."""
        last = self._last
        return rank_env()["rank"] is not None or (last is not None and len(last) > 0 and last[-1] is not None)

    def _progress(self, now: float) -> bool:
        values: list[Any] = []
        for read in list(self._sources.values()):
            try:
                values.append(read())
            except Exception:
                values.append(None)
        values.append(collective_progress())
        current = tuple(values)
        if self._last is None:
            self._last = current
            return False
        if current == self._last:
            return False
        previous, self._last = self._last, current
        if len(previous) != len(current):
            # a run's source added or gone (its init(), its finish() — a rank's run finished by
            # the SIGTERM of a launcher tearing the job down): no progress by itself, and no
            # resumption of a stall the process never left
            return False
        if self._last_move is not None and not _appeared(previous, current):
            gap = now - self._last_move
            if self.stalled_since is None:
                self._gaps.append(gap)
            self._longest = max(self._longest, gap)
        self._last_move = now
        return True

    def _identity(self) -> dict[str, Any]:
        return process_identity()

    def _check_identity(self) -> None:
        if self.on_identity is None:
            return
        ident = self._identity()
        key = (ident.get("rank"), ident.get("world_size"))
        if key != self._known:
            self._known = key
            self.on_identity(ident)

    def _stalled(self, now: float, since: float, limit: float) -> None:
        self.stalled_since = since
        self.stalls += 1
        self._dumps = 0
        usual = _median(self._gaps) if self._gaps else None
        timeout = self.group_timeout()
        ident = self._identity()
        record = {
            **ident,
            "state": "stalled",
            "time": now,
            "since": since,
            "threshold_s": limit,
            "usual_s": usual,
            "group_timeout_s": timeout,
            "source": self.source,
            "progress": self._progress_view(),
        }
        # the stacks first: whoever sees the stall (the hang alert, a diagnosis) sees where it is
        self._evidence(now, _reason(now - since, limit, usual, timeout), stalled_for=now - since)
        self._deliver("stall", f"rank{_tag(ident)}-stall-{self.stalls}", record)

    def _resumed(self, now: float) -> None:
        since = self.stalled_since
        self.stalled_since = None
        ident = self._identity()
        record = {**ident, "state": "resumed", "time": now, "since": since, "source": self.source}
        self._deliver("stall", f"rank{_tag(ident)}-resumed-{self.stalls}", record)

    def _evidence(self, now: float, reason: str, *, stalled_for: float | None, counted: bool = True) -> None:
        if counted:
            self._dumps += 1
            self._last_dump = now
        ident = self._identity()
        rank = ident.get("rank")
        skip = {_thread.get_ident()}
        stacks = stacks_evidence(rank, reason, skip=skip, source=self.source, stalled_for=stalled_for)
        stacks["world_size"] = ident.get("world_size")
        tag = f"rank{_tag(ident)}-{int(now * 1000)}"
        self._deliver("stacks", tag, stacks)
        fr, raw = flight_recorder_evidence(rank)
        if fr is not None:
            fr["reason"] = reason
            fr["host"] = ident.get("host")
            self._deliver("flight_recorder", tag, fr, raw)

    def _maybe_sample(self, now: float) -> None:
        every = self.settings.sample_every
        if not every or not self._ranked():  # a single process has no collectives to be late for
            return
        if self._next_sample is None:
            self._next_sample = (now // every + 1) * every  # the same instants on every rank
            return
        if now < self._next_sample:
            return
        self._next_sample = (now // every + 1) * every
        raw = flight_recorder_raw()
        stages = None
        if self._stages is not None:
            try:
                stages = self._stages()
            except Exception:
                stages = None
        if raw is None and not stages:
            return
        ident = self._identity()
        data: dict[str, Any] = {**ident, "time": now, "source": self.source}
        if raw is not None:
            fr = normalize_flight_recorder(raw, ident.get("rank"), max_entries=100_000)
            data["collectives"] = self._new_entries(fr.get("entries") or [])
        if stages:
            data["stages"] = stages
        if data.get("collectives") or stages:
            self._deliver("collectives", f"rank{_tag(ident)}-{int(now)}", data)

    def _new_entries(self, entries: list[dict[str, Any]]) -> dict[str, Any]:
        """Entry times of the collectives entered since the last sample, per process group, as columns."""
        by_pg: dict[str, dict[str, list[Any]]] = {}
        for e in entries:
            if e.get("p2p") or e.get("seq") is None or e.get("time_created") is None:
                continue
            pg = str(e.get("pg"))
            if e["seq"] <= self._sample_seq.get(pg, 0):
                continue
            cols = by_pg.setdefault(pg, {"seq": [], "time": [], "op": []})
            cols["seq"].append(e["seq"])
            cols["time"].append(e["time_created"])
            cols["op"].append(e.get("op"))
        for pg, cols in by_pg.items():
            for key in cols:
                cols[key] = cols[key][-_SAMPLE_ENTRIES:]
            self._sample_seq[pg] = max(cols["seq"])
        return by_pg

    def _progress_view(self) -> dict[str, Any]:
        """The counters as last read, by source (what had stopped moving)."""
        names = [*self._sources, "collectives"]
        last = self._last or ()
        view: dict[str, Any] = {}
        for i, value in enumerate(last):  # no zip(strict=): this module also runs on older Pythons
            if i < len(names):
                view[names[i]] = list(value) if isinstance(value, tuple) else value
        return view

    def _look_for_requests(self) -> None:
        path = self.request_file
        if not path:
            return
        try:
            with open(path, encoding="utf-8") as fh:
                reason = fh.read(500).strip() or "asked by flightlog run"
            os.unlink(path)
        except OSError:
            return
        self._requests.append(reason)

    def _deliver(self, kind: str, name: str, data: dict[str, Any], raw: str | None = None) -> None:
        try:
            self.deliver(kind, name, data, raw)
        except Exception as exc:
            self.dropped += 1
            self._say_once("deliver", f"hang evidence could not be recorded ({type(exc).__name__}: {exc}); counted")

    def _say_once(self, key: str, message: str) -> None:
        if key in self._said:
            return
        self._said.add(key)
        say(message)


def _tag(ident: dict[str, Any]) -> str:
    rank = ident.get("rank")
    return str(rank) if rank is not None else f"-pid{ident.get('pid')}"


def _appeared(previous: tuple[Any, ...], current: tuple[Any, ...]) -> bool:
    """Whether a counter came into being since the last look (the process group made: its
    sequence number read for the first time). A sign of life, so the stall clock starts again,
    but the time before it was start-up (imports, a rendezvous that waits for a late rank on a
    loaded machine), not a pause of the process's rhythm: counted as one, it would raise the bar
    past the group's timeout and the stuck rank's stacks would never be taken. The watch looks
    every second or so: the first steps often arrive in the same look."""
    return any(previous[i] is None and current[i] is not None for i in range(len(current)))


def _reason(stalled: float, limit: float, usual: float | None, timeout: float | None = None) -> str:
    base = f"no progress for {stalled:.0f} s (threshold {limit:.3g} s" + _bound(limit, timeout)
    if usual is not None:
        base += f"; usually {usual:.2g} s between steps"
    return base + ")"


def stalled_text(data: dict[str, Any]) -> str:
    """A ``stall`` record in words: "no progress for 4 s (threshold 4 s: half the process group's
    8 s timeout)" — what the warning event and the line on stderr say."""
    try:
        stalled = float(data.get("time") or 0) - float(data.get("since") or data.get("time") or 0)
        limit = float(data.get("threshold_s") or 0)
        timeout = data.get("group_timeout_s")
        text = f"no progress for {stalled:.0f} s (threshold {limit:.3g} s"
        return text + _bound(limit, timeout if isinstance(timeout, (int, float)) else None) + ")"
    except (TypeError, ValueError):
        return "no progress"


def _bound(limit: float, timeout: float | None) -> str:
    """Which share of the process group's timeout set the threshold, if one did."""
    if timeout is None or timeout <= 0:
        return ""
    if abs(limit - timeout * GROUP_TIMEOUT_SHARE) < 1e-6:
        return f": half the process group's {timeout:.3g} s timeout"
    if abs(limit - timeout * TEARDOWN_SHARE) < 1e-6:
        return f": {TEARDOWN_SHARE:.0%} of the process group's {timeout:.3g} s timeout, before it tears the job down"
    return ""


def _reset_after_fork() -> None:
    """A forked child (a data-loader worker) has no watch thread: it must not think it has one."""
    global _current
    _current = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
