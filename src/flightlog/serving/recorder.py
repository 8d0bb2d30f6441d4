"""The request buffer and the background thread that turns it into evidence.

The request path (the middleware, the decorator) does one thing: ``Recorder.buffer.append`` of
a tuple, after one ``len`` check against the limit; a full buffer drops the request's evidence
and counts it (``Recorder.dropped``), never slows the request. Everything else happens here, on
one daemon thread every ``interval`` seconds:

* per version and wall-clock minute, the request count, the server errors (status ≥ 500 or an
  exception) with their exception types, the client errors (4xx) apart, a ``LatencyHistogram``
  and an ``OutputDistribution``;
* a minute is written once it is over (and whatever is open when the replica stops): metrics
  ``serving.requests``, ``serving.errors``, ``serving.client_errors``,
  ``serving.latency_ms.p50/p95/p99`` at step = the
  minute's number (epoch seconds // 60), over every version this replica served, and one log
  event per version in component ``serving.aggregate`` holding the full histogram and the output
  distribution (what readers merge across replicas);
* each sampled request becomes one log event in component ``serving.prediction``; how many are
  sampled adapts to the traffic (``sampling.AdaptiveSampler``); a request answered with a status
  outside 2xx keeps no body (its status and error type only), and an answer keeps only the fields
  of the output allow-list when there is one (``outputfields.py``);
* a heartbeat on the run's timeline every ``heartbeat`` seconds (a replica that stops beating is
  gone, ``reading.replicas``).

A minute that receives requests after it was written (a slow request, a stop then more
traffic) is written again: its metrics with the minute's new totals, its aggregate event with
only what is new, so that readers summing aggregate events never count a request twice.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flightlog.serving.clock import Clock, WallClock
from flightlog.serving.histogram import LatencyHistogram
from flightlog.serving.outputfields import split_output
from flightlog.serving.outputs import OutputDistribution
from flightlog.serving.privacy import Scrubber
from flightlog.serving.sampling import AdaptiveSampler

if TYPE_CHECKING:
    from flightlog.sdk.run import Run

__all__ = ["AGGREGATE", "PREDICTION", "LABEL", "Recorder", "Entry", "Truncated"]

AGGREGATE = "serving.aggregate"
PREDICTION = "serving.prediction"
LABEL = "serving.label"

#: (end perf_counter, latency s, status, version, request id, output, sampled inputs or None, parse,
#: the exception the request raised or None)
Entry = tuple[
    float,
    float,
    int,
    str,
    "str | None",
    Any,
    Any,
    "Callable[[Any, Any], tuple[Any, Any, str | None]] | None",
    "BaseException | None",
]

MAX_ERROR_TYPES = 20  # distinct exception types counted per version and minute; more are "other"
MAX_MESSAGE_CHARS = 500  # an exception's message as a record keeps it (redacted), at most
ANSWERED = 100_000  # request ids a replica remembers answering (about 12 MB at most)


class Truncated(int):
    """A sampled body too large to keep (the middleware kept a bounded prefix): its size in bytes.
    Recorded as ``input_bytes`` / ``output_bytes``, never parsed or counted as an output."""


_GRACE_S = 1.0  # a minute is written this long after it ends (a request ending at :59.9 is in the buffer by then)
_KEEP_MINUTES = 10  # written minutes remembered, for totals should a late request arrive


class _Aggregate:
    __slots__ = ("requests", "errors", "client_errors", "error_types", "error_messages", "latency", "outputs")

    def __init__(self) -> None:
        self.requests = 0
        self.errors = 0  # 5xx and exceptions
        self.client_errors = 0  # 4xx
        self.error_types: dict[str, int] = {}  # a 5xx's exception type (or "HTTP 503") → count
        self.error_messages: dict[str, str] = {}  # the type's last message
        self.latency = LatencyHistogram()
        self.outputs = OutputDistribution()

    def server_error(self, kind: str, message: str | None) -> None:
        self.errors += 1
        if kind not in self.error_types and len(self.error_types) >= MAX_ERROR_TYPES:
            kind = "other"
        self.error_types[kind] = self.error_types.get(kind, 0) + 1
        if message:
            self.error_messages[kind] = message

    def merge_counts(self, other: _Aggregate) -> None:
        self.requests += other.requests
        self.errors += other.errors
        self.client_errors += other.client_errors
        self.latency.merge(other.latency)


def error_kind(status: int, exc: BaseException | None) -> tuple[str, str | None]:
    """(what a server error was — its exception's type, else ``HTTP 503`` —, its message)."""
    if exc is None:
        return f"HTTP {status}", None
    text = str(exc)
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 1] + "…"
    return type(exc).__name__, text or None


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
        clock: Clock | None = None,
        sampler: AdaptiveSampler | None = None,
        outputs: frozenset[str] | None = None,
    ) -> None:
        self.run = run
        self.scrub = scrub
        self.outputs = outputs  # the output's allow-list (outputfields.py); None: the answer whole
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
        self.clock: Clock = clock or WallClock()  # perf_counter → wall clock; injectable (tests, replays)
        self.sampler = sampler or AdaptiveSampler(1.0, min_records=0)
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
                drained = self._drain()
                now = self.clock.now()
                self.sampler.observe(now, drained)
                self._write(now, everything=everything)
                if everything or now - self._last_beat >= self.heartbeat_s:
                    self.beat(now)
            except Exception as exc:  # noqa: BLE001 - evidence is optional, serving is not
                self.errors += 1
                if self.errors == 1:
                    self._warn(f"serving evidence not recorded: {type(exc).__name__}: {exc}")

    def beat(self, now: float | None = None) -> None:
        self._last_beat = now or self.clock.now()
        self.run.heartbeat(self._last_beat)

    # ── the work ───────────────────────────────────────────────────────────
    def _drain(self) -> int:
        buffer, wall_of = self.buffer, self.clock.wall
        popleft = buffer.popleft
        count = 0
        for _ in range(len(buffer)):  # what is there now; what arrives meanwhile waits for the next round
            try:
                end, latency, status, version, rid, output, inputs, parse, exc = popleft()
            except IndexError:  # emptied meanwhile by its owner (buffer.clear()): nothing more to drain
                break
            count += 1
            if rid is not None:
                self._remember(rid)
            wall = wall_of(end)
            key = (version, int(wall // 60))
            agg = self._open.get(key)
            if agg is None:
                agg = self._open[key] = _Aggregate()
            agg.requests += 1
            error: tuple[str, str | None] | None = None
            if status >= 500 or exc is not None:
                error = error_kind(status, exc)
                agg.server_error(*error)
            elif status >= 400:
                agg.client_errors += 1
            ms = latency * 1000.0
            agg.latency.add(ms)
            sampled = inputs is not None
            served = 200 <= status < 300 and exc is None
            if not served:  # privacy: a refused or failed request keeps no body, its status and error type only
                if sampled:
                    kind, message = error if error is not None else (f"HTTP {status}", None)
                    self._prediction(wall, rid, version, ms, status, None, None, kind, message)
                continue
            error_name: str | None = None
            if parse is not None and (sampled or output is not None):
                inputs, output, error_name = parse(inputs if sampled else None, output)
            output_hashes: dict[str, str] = {}
            if output is not None and not isinstance(output, Truncated):  # scrubbed before counted (privacy.py)
                output, output_hashes = split_output(output, self.outputs, self.scrub.digest)
                output = self.scrub.clean(output)
                agg.outputs.add(output)
            if sampled:
                self._prediction(wall, rid, version, ms, status, inputs, output, error_name, None, output_hashes)
        return count

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
        message: str | None = None,
        output_hashes: dict[str, str] | None = None,
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
        if output_hashes:
            fields["output_hashes"] = output_hashes
        if error is not None:
            fields["error"] = error
            if message:
                fields["error_message"] = message
        if self.label_field is not None:  # which field of a mapping output its label is compared with
            fields["label_field"] = self.label_field
        self.sampler.kept(wall, _size(fields))
        self.run.log_event(
            f"prediction {rid} {status} {ms:.1f} ms",
            level="error" if status >= 500 else "info",
            component=PREDICTION,
            fields=fields,
            time=wall,
        )

    def _write(self, now: float, *, everything: bool) -> None:
        current = int((now - _GRACE_S) // 60)
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
                    "serving.client_errors": totals.client_errors,
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
            "client_errors": agg.client_errors,
            "latency": agg.latency.to_dict(),
            "outputs": agg.outputs.to_dict(),
            "dropped": dropped,
        }
        if agg.error_types:
            fields["error_types"] = dict(agg.error_types)
            fields["error_messages"] = dict(agg.error_messages)
        p99 = p["p99"]
        self.run.log_event(
            f"version {version} minute {minute}: {agg.requests} requests, {agg.errors} errors, "
            f"{agg.client_errors} client errors" + (f", p99 {p99:.1f} ms" if p99 is not None else ""),
            component=AGGREGATE,
            fields=fields,
            time=minute * 60.0,
        )


def _size(fields: dict[str, Any]) -> int:
    """A record's size as the store will keep it, near enough (for the sampler's byte budget)."""
    try:
        return len(json.dumps(fields, default=str, separators=(",", ":")))
    except (TypeError, ValueError):
        return 1024
