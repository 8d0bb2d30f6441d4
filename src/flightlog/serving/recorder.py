"""The request buffer and the background thread that turns it into evidence.

The request path (the middleware, the decorator) does one thing: ``Recorder.buffer.append`` of
a tuple, after one ``len`` check against the limit; a full buffer drops the request's evidence
and counts it (``Recorder.dropped``), never slows the request. Everything else happens here, on
one daemon thread every ``interval`` seconds:

* per version and wall-clock minute, the request count, the error count (status ≥ 500 or an
  exception), a ``LatencyHistogram`` and an ``OutputDistribution``;
* a minute is written once it is over (and whatever is open when the replica stops): metrics
  ``serving.requests``, ``serving.errors``, ``serving.latency_ms.p50/p95/p99`` at step = the
  minute's number (epoch seconds // 60), over every version this replica served, and one log
  event per version in component ``serving.aggregate`` holding the full histogram and the output
  distribution (what readers merge across replicas);
* each sampled request becomes one log event in component ``serving.prediction``;
* a heartbeat on the run's timeline every ``heartbeat`` seconds (a replica that stops beating is
  gone, ``reading.replicas``).

A minute that receives requests after it was written (a slow request, a stop then more
traffic) is written again: its metrics with the minute's new totals, its aggregate event with
only what is new, so that readers summing aggregate events never count a request twice.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flightlog.serving.histogram import LatencyHistogram
from flightlog.serving.outputs import OutputDistribution
from flightlog.serving.privacy import Scrubber

if TYPE_CHECKING:
    from flightlog.sdk.run import Run

__all__ = ["AGGREGATE", "PREDICTION", "LABEL", "Recorder", "Entry", "Truncated"]

AGGREGATE = "serving.aggregate"
PREDICTION = "serving.prediction"
LABEL = "serving.label"

#: (end perf_counter, latency s, status, version, request id, output, sampled inputs or None, parse)
Entry = tuple[
    float, float, int, str, "str | None", Any, Any, "Callable[[Any, Any], tuple[Any, Any, str | None]] | None"
]

ANSWERED = 100_000  # request ids a replica remembers answering (about 12 MB at most)


class Truncated(int):
    """A sampled body too large to keep (the middleware kept a bounded prefix): its size in bytes.
    Recorded as ``input_bytes`` / ``output_bytes``, never parsed or counted as an output."""


_GRACE_S = 1.0  # a minute is written this long after it ends (a request ending at :59.9 is in the buffer by then)
_KEEP_MINUTES = 10  # written minutes remembered, for totals should a late request arrive


class _Aggregate:
    __slots__ = ("requests", "errors", "latency", "outputs")

    def __init__(self) -> None:
        self.requests = 0
        self.errors = 0
        self.latency = LatencyHistogram()
        self.outputs = OutputDistribution()

    def merge_counts(self, other: _Aggregate) -> None:
        self.requests += other.requests
        self.errors += other.errors
        self.latency.merge(other.latency)


class Recorder:
    """The buffer (``buffer``, ``limit``, ``dropped``) and its background writer for one run."""

    def __init__(
        self,
        run: Run,
        *,
        scrub: Scrubber,
        limit: int = 100_000,
        interval: float = 1.0,
        heartbeat: float = 10.0,
        warn: Callable[[str], None] | None = None,
        label_field: str | None = None,
    ) -> None:
        self.run = run
        self.scrub = scrub
        self.label_field = label_field
        self.buffer: deque[Entry] = deque()
        self.limit = limit
        # the ids this replica answered, the newest ANSWERED of them: a caller's id already in it
        # is not taken again (replica.request_id), a label for an id not in it is checked further
        self.answered: set[str] = set()
        self._answered_order: deque[str] = deque()
        self.dropped = 0
        self.interval = interval
        self.heartbeat_s = heartbeat
        self._warn = warn or (lambda message: None)
        self._offset = time.time() - time.perf_counter()  # perf_counter → wall clock
        self._open: dict[tuple[str, int], _Aggregate] = {}
        self._written: dict[int, _Aggregate] = {}  # minute → totals over versions, already written
        self._dropped_written = 0
        self._last_beat = 0.0
        self._lock = threading.Lock()  # one drain at a time: the thread, a flush() and close()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors = 0  # internal failures of the background work (reported once, never raised)

    # ── life ───────────────────────────────────────────────────────────────
    def start(self) -> None:
        self.beat()
        self._thread = threading.Thread(target=self._loop, name="flightlog-serving", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        every = min(self.interval, self.heartbeat_s)  # a heartbeat shorter than the flush interval still beats on time
        while not self._stop.wait(every):
            self.flush(everything=False)

    def close(self) -> None:
        """Stop the thread and write everything, the open minute included."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=max(5.0, 2 * self.interval))
        self.flush(everything=True)

    def flush(self, *, everything: bool = True) -> None:
        """Drain the buffer and write finished minutes (``everything``: the open ones too)."""
        with self._lock:
            try:
                self._drain()
                self._write(everything=everything)
                now = time.time()
                if everything or now - self._last_beat >= self.heartbeat_s:
                    self.beat(now)
            except Exception as exc:  # noqa: BLE001 - evidence is optional, serving is not
                self.errors += 1
                if self.errors == 1:
                    self._warn(f"serving evidence not recorded: {type(exc).__name__}: {exc}")

    def beat(self, now: float | None = None) -> None:
        self._last_beat = now or time.time()
        self.run.heartbeat(self._last_beat)

    # ── the work ───────────────────────────────────────────────────────────
    def _drain(self) -> None:
        buffer, offset = self.buffer, self._offset
        popleft = buffer.popleft
        for _ in range(len(buffer)):  # what is there now; what arrives meanwhile waits for the next round
            try:
                end, latency, status, version, rid, output, inputs, parse = popleft()
            except IndexError:  # emptied meanwhile by its owner (buffer.clear()): nothing more to drain
                break
            if rid is not None:
                self._remember(rid)
            wall = end + offset
            key = (version, int(wall // 60))
            agg = self._open.get(key)
            if agg is None:
                agg = self._open[key] = _Aggregate()
            agg.requests += 1
            error = status >= 500
            if error:
                agg.errors += 1
            ms = latency * 1000.0
            agg.latency.add(ms)
            sampled = inputs is not None
            error_name: str | None = None
            if parse is not None and (sampled or output is not None):
                inputs, output, error_name = parse(inputs if sampled else None, output)
            if output is not None and not isinstance(output, Truncated):  # scrubbed before counted (privacy.py)
                output = self.scrub.clean(output)
                agg.outputs.add(output)
            if sampled:
                self._prediction(wall, rid, version, ms, status, inputs, output, error_name)

    def _remember(self, rid: str) -> None:
        answered, order = self.answered, self._answered_order
        answered.add(rid)  # a caller's id is in it already (added on the request path): a set ignores that
        order.append(rid)
        while len(order) > ANSWERED:
            answered.discard(order.popleft())

    def has_answered(self, rid: str) -> bool:
        """Whether this replica answered ``rid`` (among its newest :data:`ANSWERED` requests),
        the requests still in the buffer included."""
        if rid in self.answered:
            return True
        with self._lock:
            self._drain()
        return rid in self.answered

    def _prediction(
        self,
        wall: float,
        rid: str | None,
        version: str,
        ms: float,
        status: int,
        inputs: Any,
        output: Any,
        error: str | None,
    ) -> None:
        sizes: dict[str, int] = {}
        if isinstance(inputs, Truncated):
            sizes["input_bytes"], inputs = int(inputs), None
        if isinstance(output, Truncated):
            sizes["output_bytes"], output = int(output), None
        kept, hashed = self.scrub.split_inputs(inputs)
        fields: dict[str, Any] = {
            "request_id": rid,
            "version": version,
            "latency_ms": round(ms, 3),
            "status": status,
            "inputs": kept,
            "input_hashes": hashed,
            "output": None if output is None else self.scrub.bounded(output, clean=True),
        }
        fields.update(sizes)  # a body over the bound: its size, not its content
        if error is not None:
            fields["error"] = error
        if self.label_field is not None:  # which field of a mapping output its label is compared with
            fields["label_field"] = self.label_field
        self.run.log_event(
            f"prediction {rid} {status} {ms:.1f} ms",
            level="error" if status >= 500 else "info",
            component=PREDICTION,
            fields=fields,
            time=wall,
        )

    def _write(self, *, everything: bool) -> None:
        current = int((time.time() - _GRACE_S) // 60)
        due = sorted(k for k in self._open if everything or k[1] < current)
        dropped = self.dropped
        for minute in sorted({m for _, m in due}):
            totals = self._written.get(minute)
            if totals is None:
                totals = self._written[minute] = _Aggregate()
            for key in [k for k in due if k[1] == minute]:
                agg = self._open.pop(key)
                totals.merge_counts(agg)
                self._aggregate_event(key[0], minute, agg, dropped - self._dropped_written)
                self._dropped_written = dropped
            p = totals.latency.percentiles()
            self.run.log(
                {
                    "serving.requests": totals.requests,
                    "serving.errors": totals.errors,
                    **{f"serving.latency_ms.{k}": v for k, v in p.items() if v is not None},
                    "serving.dropped": dropped,
                },
                step=minute,
            )
        for minute in [m for m in self._written if m < current - _KEEP_MINUTES]:
            del self._written[minute]

    def _aggregate_event(self, version: str, minute: int, agg: _Aggregate, dropped: int) -> None:
        p = agg.latency.percentiles()
        fields = {
            "version": version,
            "minute": minute,
            "requests": agg.requests,
            "errors": agg.errors,
            "latency": agg.latency.to_dict(),
            "outputs": agg.outputs.to_dict(),
            "dropped": dropped,
        }
        p99 = p["p99"]
        self.run.log_event(
            f"version {version} minute {minute}: {agg.requests} requests, {agg.errors} errors"
            + (f", p99 {p99:.1f} ms" if p99 is not None else ""),
            component=AGGREGATE,
            fields=fields,
            time=minute * 60.0,
        )
