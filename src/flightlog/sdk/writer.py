"""One process's writer of one run: in-memory buffers → journal → store.

The training loop only appends to buffers (a deque append per ``log`` call). A flush — on the
shipper thread every ``FLIGHTLOG_FLUSH_INTERVAL``, or in the caller on ``finish()`` — turns the
buffers into journal records, appends them to this writer's journal file, then ships them to
the store. Failures never reach the caller: a journal that cannot be written (disk full, no
home) still lets records reach the store; a store that is down leaves them in the journal
for the next flush or ``flightlog sync``; what reaches neither is dropped, counted and reported.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable
from itertools import chain
from operator import itemgetter
from typing import Any, Protocol

from flightlog.config import Settings, rank_identity
from flightlog.forksafe import no_fork
from flightlog.ids import new_writer_id
from flightlog.journal import JournalWriter, encode_record, encode_records
from flightlog.journal.format import MAGIC, read_records
from flightlog.logevents import LogBatch
from flightlog.notices import notice
from flightlog.redaction import redact_user_strings
from flightlog.schema import record
from flightlog.schema.values import encode_series, log_chunk_payload
from flightlog.sdk.context import process_context
from flightlog.sdk.sink import Sink, open_sink
from flightlog.sdk.stages import StageAggregator

__all__ = ["Writer", "RunWriter", "NullWriter"]

#: Seconds an idle writer waits before it sends a `heartbeat` record (any record it ships says
#: as much): well inside the 5 s a rank's liveness must be known by (docs/distributed.md).
HEARTBEAT_S = 2.0
MAX_PENDING_RECORDS = 20_000
SPILL_BATCH_BYTES = 4 << 20  # journal bytes read back and shipped at a time when catching up
LOG_CHUNK_EVENTS = 50_000  # events per stored log chunk: big enough to be cheap, small enough to skip  # unshipped records kept in memory (the journal keeps the rest)


class Writer(Protocol):
    """What a run needs of its writer: `RunWriter`, or `NullWriter` for a disabled run."""

    settings: Settings
    run_id: str
    on_records: Callable[[list[dict[str, Any]]], None] | None
    rank: int | None
    attempt: int
    metrics: deque[tuple[int, float, dict[str, float]]]
    records: deque[dict[str, Any]]
    resources: deque[dict[str, Any]]
    stages: StageAggregator
    stats: dict[str, int]

    def add_record(self, kind: str, /, **payload: Any) -> None: ...
    def add_logs(self, batch: LogBatch) -> None: ...
    def add_log(self, **event: Any) -> None: ...
    def count(self, name: str, value: float = 1) -> None: ...
    def pending_log_events(self) -> int: ...
    def flush(self, *, final: bool = False) -> None: ...
    def persist(self) -> None: ...
    def close(self, *, remove_journal_if_shipped: bool, end: dict[str, Any] | None = None) -> None: ...
    def _warn_once(self, key: str, message: str) -> None: ...


def warn(message: str) -> None:
    """flightlog's own message on stderr, past the console capture (see flightlog.notices)."""
    notice(message)


class RunWriter:
    def __init__(
        self, settings: Settings, run_id: str, *, attempt: int, rank: int | None, context: bool = True
    ) -> None:
        """``context=False``: a writer that speaks for another process (``flightlog run``'s
        account of a rank, runner/ranks.py) sends no `context` record: this process's context
        would describe the wrong one."""
        self.settings = settings
        self.run_id = run_id
        self.attempt = attempt
        self.rank = rank
        self.writer_id = new_writer_id()
        self.online = settings.mode == "online"
        self.metrics: deque[tuple[int, float, dict[str, float]]] = deque()
        self.records: deque[dict[str, Any]] = deque()
        self.resources: deque[dict[str, Any]] = deque()
        self.stages = StageAggregator(attempt)
        self._logs = LogBatch()
        self._logs_lock = threading.Lock()
        self._counters: dict[str, float] = {}
        self._flush_lock = threading.RLock()
        self._seq = 0
        self._pending: list[dict[str, Any]] = []
        self._pending_end: int | None = None
        self._spilled = False  # more unshipped records than MAX_PENDING_RECORDS: ship from the journal
        self._context_sent = not context
        self.closed = False
        self.stats = {"records": 0, "points": 0, "dropped": 0, "journal_errors": 0, "ship_errors": 0}
        self._warned: set[str] = set()
        self._sink: Sink | None = None
        # records written only together with records of this writer's own (see `_collect`)
        self._preamble: list[dict[str, Any]] = []
        self.journal: JournalWriter | None = None
        self._journal_due = True  # opened on the first append: a writer that records nothing leaves no file
        #: the journal bytes of a final flush that is also the writer's first, held back while the
        #: store takes them (`_prepare`): written to the journal only if the store does not
        self._held: bytes | None = None
        self._forked_from: int | None = None  # the parent's pid, in a forked child
        #: the records a feature asked for go here after they are journaled (sdk/runhooks.py)
        self.on_records: Callable[[list[dict[str, Any]]], None] | None = None
        #: the rank this writer's process is in a distributed job (`writer` record fields), also
        #: in the header of a forked child's writer: what it records belongs to the same rank
        self.rank_fields: dict[str, Any] = {}
        self._last_sent = time.time()  # the last flush that shipped something: idle → heartbeat

    def _open_journal(self) -> None:
        self._journal_due = False
        try:
            self.journal = JournalWriter(self.settings.home, self.run_id, self.writer_id)
        except OSError as exc:
            self._warn_once(
                "journal",
                f"cannot write the journal under {self.settings.home} ({exc}); "
                "records go straight to the store when it can be reached, else they are dropped and counted",
            )

    # ── buffers (any thread) ─────────────────────────────────────────────────
    def add_record(self, kind: str, /, **payload: Any) -> None:
        payload.setdefault("t", time.time())
        self.records.append(record(kind, **payload))

    def add_logs(self, batch: LogBatch) -> None:
        with self._logs_lock:
            self._logs.extend(batch)

    def add_log(self, **event: Any) -> None:
        with self._logs_lock:
            self._logs.append(**event)

    def count(self, name: str, value: float = 1) -> None:
        self._counters[name] = self._counters.get(name, 0) + value

    def pending_log_events(self) -> int:
        return len(self._logs)

    # ── flush (shipper thread, or the caller on finish) ──────────────────────
    def _collect(self, final: bool) -> list[dict[str, Any]]:
        now = time.time()
        out: list[dict[str, Any]] = []
        closing: list[dict[str, Any]] = []
        while self.records:
            rec = self.records.popleft()
            (closing if _closes(rec) else out).append(rec)
        n = len(self.metrics)
        if n:
            out.append(self._metrics_record(n, now))
        with self._logs_lock:
            logs, self._logs = self._logs, LogBatch()
        for chunk in logs.split(LOG_CHUNK_EVENTS):
            out.append(record("logs", t=now, **log_chunk_payload(chunk)))
        spans, stage_stats = self.stages.drain(final)
        if spans:
            out.append(record("spans", t=now, spans=spans))
        if stage_stats:
            out.append(record("stage_stats", t=now, stats=stage_stats))
        if self.resources:
            samples = [self.resources.popleft() for _ in range(len(self.resources))]
            out.append(record("resources", t=now, samples=samples))
        if self._counters:
            counters, self._counters = self._counters, {}
            out.append(record("counters", t=now, data=counters))
        # a run's end (and the writer's) after the points and logs collected with it: a reader that
        # sees the run ended has seen its last data (a store commits a large batch in parts, and the
        # server's alert evaluation ends a run's alerts, and stops reading its data, at its end)
        out.extend(closing)
        if not self.rank_fields and "LOCAL_RANK" in os.environ and self._forked_from is None:
            self._adopt_rank(out, now)
        if out:
            self._last_sent = now
        elif now - self._last_sent >= HEARTBEAT_S and self._context_sent and self._forked_from is None:
            # idle: a sign of life (any record is one), never on `run.log`'s path (docs/distributed.md)
            self._last_sent = now
            out.append(record("heartbeat", t=now))
        if out and (self._preamble or not self._context_sent):
            # the writer's header and its process's context go with its first records, never
            # alone: a process forked only to exec another program writes nothing at all
            first, self._preamble = self._preamble, []
            if not self._context_sent:
                self._context_sent = True
                first.append(record("context", t=now, data=self._context()))
            out[:0] = first
        return out

    def _adopt_rank(self, out: list[dict[str, Any]], now: float) -> None:
        """This process became a rank after its run began (Lightning's rank 0: its launcher sets
        ``LOCAL_RANK``, ``WORLD_SIZE`` when training starts): its writer says so, once, in a second
        `writer` record, and what it records from now on belongs to that rank."""
        identity = rank_identity()
        if identity is None or not identity.distributed:
            return
        self.rank = identity.rank
        self.rank_fields = {
            "rank": identity.rank,
            "local_rank": identity.local_rank,
            "world_size": identity.world_size,
            "node_rank": identity.node_rank,
            "local_world_size": identity.local_world_size,
            "restart": identity.restart_count,
            "launcher": identity.launcher,
            "job": identity.job_key[:1000] if identity.job_key else None,
        }
        out.insert(0, record("writer", t=now, host=socket.gethostname(), pid=os.getpid(), **self.rank_fields))

    def _context(self) -> dict[str, Any]:
        if self._forked_from is not None:
            # a forked child shares its parent's packages, code and host (the parent's writer
            # records them); computing them here could deadlock on a lock or an import that a
            # parent thread held at the fork
            return {"forked_from": self._forked_from, "pid": os.getpid(), "command": list(sys.argv), "cwd": os.getcwd()}
        try:
            return process_context(self.settings.env_allow, home=self.settings.home)
        except Exception as exc:  # context is evidence, never a reason to fail
            return {"error": repr(exc)}

    def _metrics_record(self, n: int, now: float) -> dict[str, Any]:
        popleft = self.metrics.popleft
        entries = [popleft() for _ in range(n)]
        series: dict[str, tuple[array, array, array]] = {}
        refused = _columns(entries, series) if n else 0  # every call logged the same names, as a loop does
        start = 0 if refused is None else n
        refused = refused or 0
        while start < n:  # else runs of calls that logged the same names, each turned into columns at once
            end = _same_names(entries, start)
            done = _columns(entries[start:end], series) if end > start else None
            if done is None:
                refused += _one_by_one(entries[start], series)
                start += 1
            else:
                refused += done
                start = end
        points = sum(len(cols[0]) for cols in series.values())
        self.stats["points"] += points
        if refused:
            self.stats["dropped"] += refused
            self.count("dropped_bad_points", refused)
            self._warn_once(
                "bad-point",
                f"run {self.run_id[:12]}: {refused} metric point(s) with a step or value "
                "that does not fit 64 bits were dropped",
            )
        return record(
            "metrics",
            t=now,
            attempt=self.attempt,
            series={str(name): encode_series(*cols) for name, cols in series.items()},
        )

    def flush(self, *, final: bool = False) -> None:
        with self._flush_lock:
            if self.closed:
                return
            with no_fork():  # local work whose first use imports code (context, redaction): see forksafe
                self._prepare(final)
            if self.online and (self._pending or self._spilled):
                self._ship()
            self._trim_pending()

    def persist(self) -> None:
        """Journal what is buffered now, and leave the shipping to the shipper: for records that
        must outlive a SIGKILL of this process a moment later (a pipeline controller's step states),
        at the cost of a journal append, not of a round trip to the store."""
        with self._flush_lock:
            if not self.closed:
                with no_fork():
                    self._prepare(final=False)

    def _prepare(self, final: bool) -> None:
        """The records collected since the last flush, redacted, numbered and journaled."""
        records = self._collect(final)
        if not records:
            return
        for rec in records:
            redact_user_strings(rec, self.settings.home)  # params, tags, notes, commands
            self._seq += 1
            rec["r"] = self.run_id
            rec["w"] = self.writer_id
            rec["s"] = self._seq
        self.stats["records"] += len(records)
        self._journal_append(records, hold=final and self._journal_due and self._may_hold())
        if self.on_records is not None:  # a feature asked for some kinds (sdk/runhooks.py)
            self.on_records(records)
        if not (self._spilled and self.journal is not None):
            self._pending.extend(records)

    def _encode(self, records: list[dict[str, Any]]) -> bytes:
        """The records framed for the journal; one that cannot be encoded is dropped alone
        (removed from ``records``, counted, reported), never the batch around it."""
        try:
            return encode_records(records)
        except (TypeError, ValueError, OverflowError):
            pass
        parts, kept = [], []
        for rec in records:
            try:
                parts.append(encode_record(rec))
            except (TypeError, ValueError, OverflowError) as exc:
                self.stats["dropped"] += 1
                self._warn_once(
                    f"encode:{rec.get('k')}",
                    f"run {self.run_id[:12]}: a {rec.get('k')} record could not be encoded and was dropped ({exc})",
                )
            else:
                kept.append(rec)
        records[:] = kept
        return b"".join(parts)

    def _may_hold(self) -> bool:
        """Whether a writer whose whole life fits in one flush (a short run: init, a few calls,
        finish) may ship before it journals: the records then reach the store, committed, before
        ``finish()`` returns, and a journal file created, written and removed around that one
        transaction would have bought nothing (they were only in memory until this flush, as any
        record is between two flushes). Should the store not take them, they are journaled
        before ``finish()`` returns, as always. Never offline (the journal is the destination)
        nor with ``FLIGHTLOG_KEEP_JOURNAL``."""
        return self.online and not self.settings.keep_journal and not self._spilled

    def _journal_append(self, records: list[dict[str, Any]], *, hold: bool = False) -> None:
        data = self._encode(records)  # also what drops a record that cannot be encoded
        if hold:
            self._held = data
            return
        if self._journal_due:
            self._open_journal()
        if self.journal is None:
            return
        try:
            self._pending_end = self.journal.append(data)
        except OSError as exc:
            self.stats["journal_errors"] += 1
            self._warn_once("journal-write", f"cannot append to the journal {self.journal.path} ({exc})")
            self.journal.close()
            self.journal = None

    def _ship(self) -> None:
        if self._spilled:
            self._ship_spilled()
            return
        try:
            if self._sink is None:
                self._sink = open_sink(self.settings)
            result = self._sink.ingest(self._pending)
        except Exception as exc:  # the store is down, locked, full, unreachable...
            self.stats["ship_errors"] += 1
            self._journal_held()
            if self._journal_only():
                return
            where = (
                "the journal keeps them for the next try and `flightlog sync`"
                if self.journal
                else "they are kept in memory for the next try"
            )
            self._warn_once("ship", f"cannot ship records to the store ({exc}); {where}")
            return
        for reason in result.skipped:
            self._warn_once(f"skip:{reason[:40]}", f"the store skipped a record: {reason}")
        self._pending = []
        self._held = None  # in the store: never journaled, nothing to remove
        if self.journal is not None and self._pending_end is not None:
            try:
                self.journal.mark_shipped(self._pending_end)
            except OSError:
                pass

    def _journal_held(self) -> None:
        """The store did not take a held-back flush (`_may_hold`): journal it now."""
        data, self._held = self._held, None
        if data is None:
            return
        self._open_journal()
        if self.journal is None:
            return
        try:
            self._pending_end = self.journal.append(data)
        except OSError as exc:
            self.stats["journal_errors"] += 1
            self._warn_once("journal-write", f"cannot append to the journal {self.journal.path} ({exc})")
            self.journal.close()
            self.journal = None

    def _ship_spilled(self) -> None:
        """Catch up from the journal (the memory buffer overflowed while the store was away):
        every record once, in sequence order, in bounded batches, the shipped mark kept as it goes."""
        journal = self.journal
        if journal is None:
            self._spilled = False
            return
        try:
            if self._sink is None:
                self._sink = open_sink(self.settings)
            start = max(journal.file.shipped_offset(), len(MAGIC))
            with open(journal.path, "rb") as f:
                while start < journal.size:
                    f.seek(start)
                    data = f.read(min(SPILL_BATCH_BYTES, journal.size - start))
                    found = read_records(data, header=False).records
                    if not found and len(data) >= 8:  # one record bigger than a batch: read all of it
                        data += f.read(8 + int.from_bytes(data[:4], "little") - len(data))
                        found = read_records(data, header=False).records
                    if not found:
                        self._warn_once(
                            "spill-read",
                            f"cannot read the journal {journal.path} back at byte {start}; "
                            "`flightlog sync` will ship the rest",
                        )
                        return
                    result = self._sink.ingest([rec for _, rec in found])
                    for reason in result.skipped:
                        self._warn_once(f"skip:{reason[:40]}", f"the store skipped a record: {reason}")
                    start += found[-1][0]
                    journal.mark_shipped(start)
        except Exception as exc:  # the store is still away: the journal keeps everything
            self.stats["ship_errors"] += 1
            if self._journal_only():
                return
            self._warn_once(
                "ship", f"cannot ship records to the store ({exc}); the journal keeps them for the next try"
            )
            return
        self._spilled = False
        self._pending = []

    def _journal_only(self) -> bool:
        """A sink that gave up on the server for this process (transport.sink) says why once per
        process, not once per run or per failed try; a process under `flightlog run` leaves it to
        the runner, whose own sink met the same server first."""
        if not getattr(self._sink, "journal_only", False):
            return False
        notice = self._sink.take_notice()  # type: ignore[union-attr]
        if notice and not self.settings.captured:
            warn(notice)
        return True

    def _trim_pending(self) -> None:
        excess = len(self._pending) - MAX_PENDING_RECORDS
        if excess <= 0:
            return
        if self.online and self.journal is not None:
            # keep none in memory from now on: the journal has them all, in order, and the next
            # ships read it back (dropping the oldest here would let newer records overtake them,
            # and the store's high-water mark would then refuse them for good)
            self._spilled = True
            self._pending = []
            return
        dropped, self._pending = self._pending[:excess], self._pending[excess:]
        if self.journal is None:  # nowhere else holds them
            self.stats["dropped"] += sum(_weight(r) for r in dropped)
            self._warn_once("drop", "records are being dropped: neither the journal nor the store can take them")
        elif not self.online:
            pass  # offline: the journal is the destination

    def close(self, *, remove_journal_if_shipped: bool, end: dict[str, Any] | None = None) -> None:
        """Final flush; the journal is removed when everything reached the store (and not asked to keep).

        ``end``: how this writer's process ended (status, end_reason, exit_code, signal, failure),
        kept on its `writer_end` record: a rank's own end."""
        self.add_record("writer_end", **(end or {}))
        try:
            self.flush(final=True)
            self._drain()
            clean = True
        except Exception as exc:  # an internal error: keep the journal, `flightlog sync` retries it
            clean = False
            warn(
                f"run {self.run_id[:12]}: internal error while saving the last records ({exc!r}); "
                "the journal is kept for `flightlog sync`"
            )
        with self._flush_lock:
            self.closed = True
            self._journal_held()  # a held-back flush that did not reach the store (an internal error)
            if self._pending and self.journal is None:  # in no journal and in no store: lost
                self.stats["dropped"] += sum(_weight(r) for r in self._pending)
                self._pending = []
            if self.stats["dropped"]:
                warn(
                    f"run {self.run_id[:12]}: {self.stats['dropped']} records could not be saved (see the warnings above)"
                )
            if self.journal is not None:
                shipped = self.online and not self._pending and not self._spilled
                self.journal.close(
                    remove=clean and shipped and remove_journal_if_shipped and not self.settings.keep_journal
                )
                if not shipped and self.online and not getattr(self._sink, "journal_only", False):  # said once already
                    warn(
                        f"run {self.run_id[:12]}: some records are only in the journal; run `flightlog sync` to ship them"
                    )

    def _drain(self) -> None:
        """A sink that can wait (a remote server) gets a bounded time to take the last records."""
        wait = getattr(self._sink, "wait", None)
        if not self.online or wait is None:
            return
        with self._flush_lock:
            if not (self._pending or self._spilled):
                return
            if getattr(self._sink, "journal_only", False):  # never reached: one last try, no waiting
                while (self._pending or self._spilled) and wait(time.monotonic()):
                    self._ship()
                return
            if not getattr(self._sink, "away", False):
                return
            patience = float(getattr(self._sink, "patience", 0.0))
            warn(f"run {self.run_id[:12]}: the server is not taking records; waiting up to {patience:.0f}s for it")
            deadline = time.monotonic() + patience
            while (self._pending or self._spilled) and wait(deadline):
                self._ship()

    def reset_after_fork(self) -> None:
        """A forked child must not reuse its parent's writer id, sequence numbers, buffers or file.

        Nothing is written here: this also runs in a child that ``subprocess`` forks only to
        exec another program (``preexec_fn``, as ``flightlog run`` does). The child's journal is
        opened, and its header written, with the first records the child makes itself.
        """
        self.writer_id = new_writer_id()
        self._seq = 0
        self._pending = []
        self._pending_end = None
        self._spilled = False
        self.metrics.clear()
        self.records.clear()
        self.resources.clear()
        self.stages = StageAggregator(self.attempt)
        self._counters = {}
        self.stats = dict.fromkeys(self.stats, 0)
        self._logs = LogBatch()
        self._logs_lock = threading.Lock()
        self._flush_lock = threading.RLock()
        self._sink = None
        self._context_sent = False
        self.journal = None  # the parent's descriptor stays the parent's
        self._journal_due = True
        self._held = None
        self._forked_from = os.getppid()
        self.on_records = None  # the run's life belongs to the parent
        self._preamble = [
            record(
                "writer",
                t=time.time(),
                host=socket.gethostname(),
                pid=os.getpid(),
                owner=False,
                attempt=self.attempt,
                forked=True,
                **self.rank_fields,
            )
        ]
        self._last_sent = time.time()

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            warn(message)


Entry = tuple[int, float, dict[str, float]]


def _same_names(entries: list[Entry], start: int) -> int:
    """The end of the run of calls from ``start`` that logged the same names (as a set: each
    name's values are taken by name), or ``start`` when that call logged none."""
    first = entries[start][2].keys()
    if not first:
        return start
    end = start + 1
    n = len(entries)
    while end < n and entries[end][2].keys() == first:
        end += 1
    return end


def _columns(run: list[Entry], series: dict[str, tuple[array, array, array]]) -> int | None:
    """Calls that logged the same names, turned into columns by C loops (``itemgetter``,
    ``chain``, strided ``array`` slices) rather than a Python loop per point: the shipper shares
    the GIL with the training loop, so its time per point is the loop's too. None when the calls
    did not all log the same names (the caller splits them); a value ``array`` refuses (from
    another caller of the buffer than ``Run.log``) sends the calls one by one instead. Returns
    the points dropped."""
    names = list(run[0][2])
    k = len(names)
    rows = list(map(_third, run))
    try:
        flat = array("d", chain.from_iterable(map(itemgetter(*names), rows))) if k > 1 else None
        if flat is None:
            only = names[0]
            value_cols = [array("d", [row[only] for row in rows])]
        else:
            value_cols = [flat[j::k] for j in range(k)]
        if sum(map(len, rows)) != k * len(rows):
            return None  # some call logged a name more (each has all of ``names``: itemgetter said so)
        step_col = array("q", map(_first, run))
        time_col = array("d", map(_second, run))
    except KeyError:  # some call lacks one of the names
        return None
    except (OverflowError, TypeError):
        return sum(_one_by_one(entry, series) for entry in run)
    for name, values in zip(names, value_cols, strict=True):
        cols = series.get(name)
        if cols is None:
            series[name] = (array("q", step_col), array("d", time_col), values)
        else:
            cols[0].extend(step_col)
            cols[1].extend(time_col)
            cols[2].extend(values)
    return 0


_first, _second, _third = itemgetter(0), itemgetter(1), itemgetter(2)


def _one_by_one(entry: Entry, series: dict[str, tuple[array, array, array]]) -> int:
    """One call's points, each alone: a point whose step or value does not fit is dropped, never
    the points around it. Returns how many were dropped."""
    step, t, data = entry
    refused = 0
    for name, value in data.items():
        cols = series.get(name)
        if cols is None:
            cols = series[name] = (array("q"), array("d"), array("d"))
        try:
            cols[2].append(value)
            cols[1].append(t)
            cols[0].append(step)
        except (OverflowError, TypeError):
            # `Run.log` refuses these at the call; a point that got past it (another
            # caller of the buffer) is dropped alone, never the batch around it
            del cols[2][len(cols[0]) :], cols[1][len(cols[0]) :]
            refused += 1
    return refused


def _weight(record: dict[str, Any]) -> int:
    """How many user-visible items a record holds (lines, points), for drop counts."""
    kind = record.get("k")
    if kind == "logs":
        return int(record.get("n", 1))
    if kind == "metrics":
        return sum(len(enc[0]) // 8 for enc in record["series"].values())
    return 1


class NullWriter:
    """The writer of a disabled run (``FLIGHTLOG_MODE=disabled``): accepts everything, keeps nothing."""

    def __init__(self, settings: Settings, run_id: str) -> None:
        self.settings = settings
        self.run_id = run_id
        self.rank: int | None = None
        self.attempt = settings.attempt
        self.writer_id = "disabled"
        self.on_records: Callable[[list[dict[str, Any]]], None] | None = None
        self.metrics: deque[Any] = deque(maxlen=0)
        self.records: deque[Any] = deque(maxlen=0)
        self.resources: deque[Any] = deque(maxlen=0)
        self.stages = StageAggregator()
        self.stats = {"records": 0, "points": 0, "dropped": 0, "journal_errors": 0, "ship_errors": 0}

    def add_record(self, kind: str, /, **payload: Any) -> None:
        pass

    def add_logs(self, batch: LogBatch) -> None:
        pass

    def add_log(self, **event: Any) -> None:
        pass

    def count(self, name: str, value: float = 1) -> None:
        pass

    def pending_log_events(self) -> int:
        return 0

    def flush(self, *, final: bool = False) -> None:
        pass

    def persist(self) -> None:
        pass

    def close(self, *, remove_journal_if_shipped: bool, end: dict[str, Any] | None = None) -> None:
        pass

    def _warn_once(self, key: str, message: str) -> None:
        pass


def _closes(rec: dict[str, Any]) -> bool:
    """Whether a record ends the run (its final status) or the writer."""
    kind = rec.get("k")
    return kind == "writer_end" or (kind == "run" and rec.get("ended") is not None)
