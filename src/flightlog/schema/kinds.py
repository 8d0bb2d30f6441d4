"""Every record kind that crosses a boundary, as one typed definition (a ``msgspec.Struct``).

A record is a map ``{k, r, w, s, t, ...payload}``: ``k`` the kind (the Structs' tag), ``r``
the run id, ``w`` the writer id, ``s`` the writer's sequence number (from 1), ``t`` the time;
ingest is idempotent on (r, w, s). The field names are the wire's and the journal's, exactly:
journals written by older versions still read, and a field a record leaves out stays out
(``UNSET``: a ``run`` record updates only the fields it carries).

Each kind's ``validate()`` checks what its types cannot say (times, names, finite numbers,
JSON-only data) and raises `Bad`; `flightlog.schema.check.check_record` runs both. A feature
adds its own kind with :func:`register_kind` (the one place the union grows).
"""

from __future__ import annotations

import math
from typing import Annotated, Any, TypeVar, Union

import msgspec
from msgspec import UNSET, Meta, UnsetType

from flightlog.errors import InvalidInput
from flightlog.ids import RUN_ID_RE
from flightlog.schema.bad import I64_MAX, I64_MIN, Bad, check_plain, check_time
from flightlog.schema.paths import check_artifact_path
from flightlog.schema.values import metric_name_problem
from flightlog.statuses import STATUSES

__all__ = [
    "Record",
    "Writer",
    "WriterEnd",
    "WRITER_END_STATUSES",
    "Heartbeat",
    "WriterLost",
    "Run",
    "Timeline",
    "Params",
    "Tags",
    "Note",
    "Context",
    "Metrics",
    "Logs",
    "LogColumns",
    "Spans",
    "StageStat",
    "StageStats",
    "Resources",
    "Artifact",
    "Counters",
    "Evidence",
    "KINDS",
    "register_kind",
    "kind_struct",
    "known_kinds",
    "record_union",
]

I64 = Annotated[int, Meta(ge=I64_MIN, le=I64_MAX)]
Count = Annotated[int, Meta(ge=0, le=I64_MAX)]
Seq = Annotated[int, Meta(ge=1, le=I64_MAX)]
Short = Annotated[str, Meta(max_length=1000)]
Medium = Annotated[str, Meta(max_length=4096)]
Long = Annotated[str, Meta(max_length=10_000)]
JSONMap = dict[str, Any]
#: A number the store keeps as sent: a whole number must fit 64 bits.
Num = Union[I64, float]  # noqa: UP007


class Record(msgspec.Struct, tag_field="k", kw_only=True, omit_defaults=True):
    """What every record carries: run, writer, sequence number, time."""

    r: str
    w: Annotated[str, Meta(min_length=1, max_length=128)]
    s: Seq
    t: float

    def validate(self) -> None:
        """The envelope's checks, then the kind's (``_validate``)."""
        if not RUN_ID_RE.match(self.r):
            raise Bad("r (the run id) must be letters, digits, '_', '-' or '.', at most 64")
        check_time(self.t, "t (the time)")
        self._validate()

    def _validate(self) -> None:
        """A kind's own checks, beyond its types."""


class Writer(Record, tag="writer"):
    """A writer's header: the process that writes, and, in a distributed job, which rank it is.

    Crash detection reads it from the journal; the store keeps one row per writer
    (``run_writers``: the ranks of a run, their heartbeats, steps and ends). Everything a writer
    records belongs to its rank."""

    host: str | UnsetType = UNSET
    pid: I64 | UnsetType = UNSET
    owner: bool | UnsetType = UNSET
    attempt: I64 | UnsetType = UNSET
    forked: bool | UnsetType = UNSET
    pstart: float | UnsetType = UNSET  # the process's start, as psutil reads it (journal/liveness.py)
    boot: float | UnsetType = UNSET  # the host's boot time
    # a rank of a distributed job (flightlog.launchenv.RankIdentity)
    rank: Count | None | UnsetType = UNSET
    local_rank: Count | None | UnsetType = UNSET
    world_size: Count | None | UnsetType = UNSET
    node_rank: Count | None | UnsetType = UNSET
    local_world_size: Count | None | UnsetType = UNSET
    restart: Count | None | UnsetType = UNSET
    launcher: Short | None | UnsetType = UNSET
    job: Short | None | UnsetType = UNSET  # the launcher's job key
    peer: bool | UnsetType = UNSET  # one of the job's ranks, none of which owns the run (its end is theirs)

    def _validate(self) -> None:
        if isinstance(self.rank, int) and isinstance(self.world_size, int) and self.rank >= self.world_size > 0:
            raise Bad(f"rank {self.rank} is not below the world size {self.world_size}")


#: How a writer (a rank) ended: its own end's statuses, and ``lost`` for one that vanished.
WRITER_END_STATUSES = ("succeeded", "failed", "stopped", "killed", "crashed", "lost")


class WriterEnd(Record, tag="writer_end"):
    """The writer closed cleanly; with ``status``, how its process ended (a rank's own end:
    an exception, a signal, a normal exit), which a run of peer ranks derives its end from."""

    status: str | UnsetType = UNSET
    end_reason: Short | None | UnsetType = UNSET
    exit_code: I64 | None | UnsetType = UNSET
    signal: I64 | None | UnsetType = UNSET
    failure: JSONMap | None | UnsetType = UNSET

    def _validate(self) -> None:
        if self.status is not UNSET and self.status not in WRITER_END_STATUSES:
            raise Bad(f"status {self.status!r} is not one of {', '.join(WRITER_END_STATUSES)}")
        if self.failure:
            check_plain(self.failure, "failure")


class Heartbeat(Record, tag="heartbeat"):
    """The writer's process is alive (sent by an idle writer at least every few seconds; any
    other record of the writer says as much)."""


class WriterLost(Record, tag="writer_lost"):
    """Another writer (``writer``) of the run vanished without its end: its process is gone
    (found by a peer on its host, by ``flightlog sync`` or a Client's reconciliation)."""

    writer: Annotated[str, Meta(min_length=1, max_length=128)]
    at: float | UnsetType = UNSET  # its last sign of life
    reason: Medium | UnsetType = UNSET

    def _validate(self) -> None:
        if self.at is not UNSET:
            check_time(self.at, "at")


class Run(Record, tag="run"):
    """A change to the run's own row: only the fields present are set."""

    project: Short | UnsetType = UNSET
    name: Short | None | UnsetType = UNSET
    parent_id: Short | None | UnsetType = UNSET
    status: str | UnsetType = UNSET
    end_reason: Short | None | UnsetType = UNSET
    created: float | None | UnsetType = UNSET
    queued: float | None | UnsetType = UNSET
    started: float | None | UnsetType = UNSET
    ended: float | None | UnsetType = UNSET
    exit_code: I64 | None | UnsetType = UNSET
    signal: I64 | None | UnsetType = UNSET
    attempt: I64 | None | UnsetType = UNSET
    host: Short | None | UnsetType = UNSET
    pid: I64 | None | UnsetType = UNSET
    owner: Short | None | UnsetType = UNSET  # the owning writer's id
    failure: JSONMap | None | UnsetType = UNSET
    timeline: dict[str, float] | None | UnsetType = UNSET
    #: sent by a rank of a job whose ranks are peers: it joins the run rather than setting it
    #: (earliest start, newest attempt; a finished run reopens for a restart), see store/sql/ranks.py
    peer: bool | UnsetType = UNSET

    def _validate(self) -> None:
        if self.project == "":
            raise Bad("project must not be empty")
        if self.status is not UNSET and self.status not in STATUSES:
            raise Bad(f"status {self.status!r} is not one of {', '.join(STATUSES)}")
        for name in ("created", "queued", "started", "ended"):
            value = getattr(self, name)
            if value is not UNSET:
                check_time(value, name)
        if self.failure:
            check_plain(self.failure, "failure")
        if self.timeline:
            _check_timeline(self.timeline)


def _check_timeline(instants: dict[str, float]) -> None:
    for key, t in instants.items():
        check_time(t, f"timeline {key}")


class Timeline(Record, tag="timeline"):
    """Named instants of the run (first_*, last_* merge as min and max)."""

    data: dict[str, float]

    def _validate(self) -> None:
        _check_timeline(self.data)


class _Data(Record):
    data: JSONMap

    def _validate(self) -> None:
        check_plain(self.data, "data")


class Params(_Data, tag="params"):
    """Params set (a key set again replaces its value)."""


class Tags(_Data, tag="tags"):
    """Tags set; a tag set to null is removed."""


class Context(_Data, tag="context"):
    """The writing process's context (packages, git, host, command)."""


class Note(Record, tag="note"):
    """A note on the run, with its author."""

    text: Annotated[str, Meta(max_length=1_000_000)]
    author: Short | None = None


class Metrics(Record, tag="metrics"):
    """Points of one flush: per metric name, three little-endian columns (int64 steps, float64
    times, float64 values; `flightlog.schema.values.encode_series`)."""

    series: dict[str, tuple[bytes, bytes, bytes]]
    attempt: I64 = 1

    def _validate(self) -> None:
        for name, enc in self.series.items():
            problem = metric_name_problem(name)
            if problem is not None:  # as the SDK refuses it at the call
                raise Bad(f"metric name {name[:80]!r} {problem}")
            if len(enc[0]) % 8 or not len(enc[0]) == len(enc[1]) == len(enc[2]):
                raise Bad(f"series {name!r}: the three columns must hold the same number of 8-byte values")


class LogColumns(msgspec.Struct):
    """The columns of a log chunk (``logevents.LogBatch``), msgpack-encoded inside ``Logs.data``."""

    time: list[float]
    stream: list[str]
    level: list[I64]
    component: list[str | None]
    message: list[str]
    fields: list[JSONMap | None]
    rank: list[I64 | None]
    attempt: list[I64]
    stage: list[str | None]


_LOG_COLUMNS = LogColumns.__struct_fields__
_log_decoder = msgspec.msgpack.Decoder(LogColumns)


class Logs(Record, tag="logs"):
    """One chunk of captured log events, encoded once (``values.log_chunk_payload``), with what
    queries prune on."""

    n: Count
    t0: float
    t1: float
    maxlvl: I64
    attempts: Long  # the attempts in the chunk, comma-separated
    data: bytes

    def _validate(self) -> None:
        check_time(self.t0, "t0")
        check_time(self.t1, "t1")
        try:
            cols = _log_decoder.decode(self.data)
        except msgspec.ValidationError as exc:
            raise Bad(f"the log chunk {_explain_columns(exc)}") from None
        except (msgspec.DecodeError, RecursionError) as exc:
            raise Bad(f"the log chunk does not decode: {exc}") from None
        if len({len(getattr(cols, k)) for k in _LOG_COLUMNS}) != 1:
            raise Bad(f"the log chunk needs the columns {', '.join(_LOG_COLUMNS)}, all of one length")
        for t in cols.time:
            check_time(t, "log time")
        for value in cols.fields:
            if value:
                check_plain(value, "log fields")


def _explain_columns(exc: msgspec.ValidationError) -> str:
    text = str(exc)
    if text.startswith("Object missing required field"):
        return f"needs the columns {', '.join(_LOG_COLUMNS)}, all of one length ({text.lower()})"
    return f"has a bad column: {text}"


#: A span on the wire: [name, start, end, attempt, sampled, attrs].
Span = tuple[Short, float, float, I64, Union[bool, int], Union[JSONMap, None]]  # noqa: UP007


class Spans(Record, tag="spans"):
    """Sampled stage spans."""

    spans: list[Span]

    def _validate(self) -> None:
        for span in self.spans:
            check_time(span[1], "span start")
            check_time(span[2], "span end")
            if span[5]:
                check_plain(span[5], "span attrs")


class StageStat(msgspec.Struct):
    """One stage's cumulative totals in one writer."""

    count: Count
    total: Num
    min: Num
    max: Num
    hist: list[I64]
    first_start: float | None = None
    last_end: float | None = None


class StageStats(Record, tag="stage_stats"):
    """Every stage's totals so far (cumulative per writer: the newest replaces the previous)."""

    stats: dict[str, StageStat]

    def _validate(self) -> None:
        for st in self.stats.values():
            check_time(st.first_start, "first_start")
            check_time(st.last_end, "last_end")


class Resources(Record, tag="resources"):
    """Resource samples (CPU, memory, GPU, I/O), each a map with its ``time``."""

    samples: list[JSONMap]

    def _validate(self) -> None:
        for sample in self.samples:
            check_plain(sample, "sample")
            if "time" in sample:
                t = sample["time"]
                if isinstance(t, bool) or not isinstance(t, (int, float)):
                    raise Bad("sample time must be a number")
                check_time(t, "sample time")


class Artifact(Record, tag="artifact"):
    """A file a run read or wrote (a checkpoint is an output artifact of kind ``checkpoint``)."""

    role: str
    path: Annotated[str, Meta(max_length=1024)]
    kind: Medium | None | UnsetType = UNSET
    source: Medium | None | UnsetType = UNSET
    sha256: Medium | None | UnsetType = UNSET
    uri: Medium | None | UnsetType = UNSET
    size: I64 | None | UnsetType = UNSET
    step: I64 | None | UnsetType = UNSET
    attempt: I64 = 1
    meta: JSONMap | None | UnsetType = UNSET

    def _validate(self) -> None:
        if self.role not in ("input", "output"):
            raise Bad("role must be input or output")
        try:
            check_artifact_path(self.path)
        except InvalidInput as exc:
            raise Bad(exc.message) from None
        if self.meta:
            check_plain(self.meta, "meta")


class Counters(Record, tag="counters"):
    """Increments of named counters since the last flush (added up by the store)."""

    data: dict[str, Num]

    def _validate(self) -> None:
        for name, value in self.data.items():
            if not math.isfinite(value):
                raise Bad(f"counter {name!r} must be finite")


class Evidence(Record, tag="evidence"):
    """A named piece of evidence (data manifest, cohorts, a pipeline's state, a summary)."""

    kind: Short
    name: Short
    data: Any = None

    def _validate(self) -> None:
        check_plain(self.data, "data")


# ── the union ────────────────────────────────────────────────────────────────────────────────

_KINDS: dict[str, type[Record]] = {}
R = TypeVar("R", bound=type[Record])


def register_kind(cls: R) -> R:
    """Make ``cls`` (a `Record` subclass with its own ``tag``) a kind every boundary takes.

    The one place the union grows: the core's kinds below, and a feature's own (models,
    serving) through the plugin table. Registering a tag twice is a programming error."""
    tag = cls.__struct_config__.tag
    if not isinstance(tag, str) or not issubclass(cls, Record):
        raise TypeError(f"{cls.__name__} must be a flightlog.schema.Record with a string tag")
    if tag in _KINDS and _KINDS[tag] is not cls:
        raise ValueError(f"record kind {tag!r} is already defined by {_KINDS[tag].__name__}")
    _KINDS[tag] = cls
    return cls


for _cls in (
    Writer,
    WriterEnd,
    Heartbeat,
    WriterLost,
    Run,
    Timeline,
    Params,
    Tags,
    Note,
    Context,
    Metrics,
    Logs,
    Spans,
    StageStats,
    Resources,
    Artifact,
    Counters,
    Evidence,
):
    register_kind(_cls)

#: The core's record kinds (a feature's own are in :func:`known_kinds`).
KINDS = frozenset(_KINDS)


def known_kinds() -> dict[str, type[Record]]:
    """Every kind known now, core and features', by tag."""
    return dict(_KINDS)


def kind_struct(kind: Any) -> type[Record] | None:
    return _KINDS.get(kind) if isinstance(kind, str) else None


def record_union() -> Any:
    """The tagged union of every kind known now (for a typed decoder, or a JSON Schema)."""
    return Union[tuple(_KINDS.values())]  # noqa: UP007
