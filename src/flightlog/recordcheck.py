"""Checking journal records before a store sees them: the server's ingest and `flightlog sync`.

The SDK writes well-formed records; a server also meets old clients, broken scripts and
fuzzers, and ``sync`` meets journals written by older versions or damaged on disk. Each record is checked against its kind's shape here — types, ranges, that encoded
series and log chunks decode — and a bad one is refused alone, with the reason, so that it
neither fails the batch nor lands in the store where it would break every later read.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import msgspec

from flightlog.errors import InvalidInput
from flightlog.ids import RUN_ID_RE
from flightlog.models import STATUSES
from flightlog.records import KINDS, metric_name_problem
from flightlog.store.artifacts import check_artifact_path
from flightlog.timefmt import is_epoch

__all__ = ["check_record", "Bad"]

_I64 = 2**63
_LOG_COLUMNS = ("time", "stream", "level", "component", "message", "fields", "rank", "attempt", "stage")
_decoder = msgspec.msgpack.Decoder()


class Bad(ValueError):
    """A record that cannot be stored; the message says why."""


def _num(value: Any, what: str, *, none: bool = False) -> None:
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Bad(f"{what} must be a number")
    if isinstance(value, int) and not -_I64 <= value < _I64:
        raise Bad(f"{what} is out of range")


def _time(value: Any, what: str, *, none: bool = False) -> None:
    """Epoch seconds that every reader can compare and show (finite, years 1 to 9999)."""
    _num(value, what, none=none)
    if value is not None and not is_epoch(value):
        raise Bad(f"{what} {value!r} is not a time: use epoch seconds between the years 1 and 9999")


def _int(value: Any, what: str, *, none: bool = False, low: int = -_I64) -> None:
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value < _I64:
        raise Bad(f"{what} must be a whole number" + (f" ≥ {low}" if low > -_I64 else ""))


def _str(value: Any, what: str, *, none: bool = False, max_len: int = 10_000) -> None:
    if value is None and none:
        return
    if not isinstance(value, str) or len(value) > max_len:
        raise Bad(f"{what} must be a string of at most {max_len} characters")


def _map(value: Any, what: str, *, none: bool = False) -> dict[str, Any]:
    if value is None and none:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise Bad(f"{what} must be a map with string keys")
    return value


def _plain(value: Any, what: str, depth: int = 0) -> None:
    """JSON-like data only (no bytes, no huge integers), so the store can keep it as JSON."""
    if value is None or isinstance(value, (str, bool, float)):
        return
    if isinstance(value, int):
        _int(value, what)
        return
    if depth > 32:
        raise Bad(f"{what} is nested too deeply")
    if isinstance(value, list):
        for item in value:
            _plain(item, what, depth + 1)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise Bad(f"{what} has a key that is not a string")
            _plain(item, what, depth + 1)
        return
    raise Bad(f"{what} holds a {type(value).__name__}, which cannot be stored")


def _run(rec: dict[str, Any]) -> None:
    for name in ("project", "name", "parent_id", "end_reason", "host", "owner"):
        if name in rec:
            _str(rec[name], name, none=name != "project", max_len=1000)
    if "project" in rec and not rec["project"]:
        raise Bad("project must not be empty")
    if "status" in rec and rec["status"] not in STATUSES:
        raise Bad(f"status {rec['status']!r} is not one of {', '.join(STATUSES)}")
    for name in ("created", "queued", "started", "ended"):
        if name in rec:
            _time(rec[name], name, none=True)
    for name in ("exit_code", "signal", "attempt", "pid"):
        if name in rec:
            _int(rec[name], name, none=True)
    if "failure" in rec and rec["failure"] is not None:
        _plain(_map(rec["failure"], "failure"), "failure")
    if rec.get("timeline") is not None:
        _timeline(rec["timeline"])


def _timeline(value: Any) -> None:
    for key, t in _map(value, "timeline").items():
        _time(t, f"timeline {key}")


def _data(rec: dict[str, Any]) -> None:
    _plain(_map(rec.get("data"), "data"), "data")


def _note(rec: dict[str, Any]) -> None:
    _str(rec.get("text"), "text", max_len=1_000_000)
    _str(rec.get("author"), "author", none=True, max_len=1000)


def _metrics(rec: dict[str, Any]) -> None:
    _int(rec.get("attempt", 1), "attempt")
    for name, enc in _map(rec.get("series"), "series").items():
        problem = metric_name_problem(name)
        if problem is not None:  # as the SDK refuses it at the call
            raise Bad(f"metric name {name[:80]!r} {problem}")
        if not isinstance(enc, list) or len(enc) != 3 or not all(isinstance(b, bytes) for b in enc):
            raise Bad(f"series {name!r} must be three byte strings (steps, times, values)")
        if len(enc[0]) % 8 or not len(enc[0]) == len(enc[1]) == len(enc[2]):
            raise Bad(f"series {name!r}: the three columns must hold the same number of 8-byte values")


def _logs(rec: dict[str, Any]) -> None:
    _int(rec.get("n"), "n", low=0)
    _time(rec.get("t0"), "t0")
    _time(rec.get("t1"), "t1")
    _int(rec.get("maxlvl"), "maxlvl")
    _str(rec.get("attempts"), "attempts", max_len=10_000)
    data = rec.get("data")
    if not isinstance(data, bytes):
        raise Bad("data must be the encoded log chunk (bytes)")
    try:
        cols = _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise Bad(f"the log chunk does not decode: {exc}") from None
    if not isinstance(cols, dict):
        raise Bad("the log chunk must be a map of columns")
    if any(not isinstance(cols.get(k), list) for k in _LOG_COLUMNS) or len({len(cols[k]) for k in _LOG_COLUMNS}) != 1:
        raise Bad(f"the log chunk needs the columns {', '.join(_LOG_COLUMNS)}, all of one length")
    for t in cols["time"]:
        _time(t, "log time")
    for name in ("level", "attempt"):
        for value in cols[name]:
            _int(value, f"log {name}")
    for value in cols["rank"]:
        _int(value, "log rank", none=True)
    for name in ("message", "stream"):
        if not all(isinstance(v, str) for v in cols[name]):
            raise Bad(f"log {name}s must be strings")
    for name in ("component", "stage"):
        if not all(v is None or isinstance(v, str) for v in cols[name]):
            raise Bad(f"log {name}s must be strings or null")
    for value in cols["fields"]:
        if value is not None:
            _plain(_map(value, "log fields"), "log fields")


def _spans(rec: dict[str, Any]) -> None:
    spans = rec.get("spans")
    if not isinstance(spans, list):
        raise Bad("spans must be a list")
    for span in spans:
        if not isinstance(span, list) or len(span) != 6:
            raise Bad("a span is [name, start, end, attempt, sampled, attrs]")
        _str(span[0], "span name", max_len=1000)
        _time(span[1], "span start")
        _time(span[2], "span end")
        _int(span[3], "span attempt")
        if not isinstance(span[4], (bool, int)):
            raise Bad("span sampled must be a boolean")
        if span[5] is not None:
            _plain(_map(span[5], "span attrs"), "span attrs")


def _stage_stats(rec: dict[str, Any]) -> None:
    for name, st in _map(rec.get("stats"), "stats").items():
        st = _map(st, f"stats of {name!r}")
        _int(st.get("count"), "count", low=0)
        for key in ("total", "min", "max"):
            _num(st.get(key), key)
        for key in ("first_start", "last_end"):
            _time(st.get(key), key, none=True)
        hist = st.get("hist")
        if not isinstance(hist, list):
            raise Bad("hist must be a list of counts")
        for h in hist:
            _int(h, "hist count")


def _resources(rec: dict[str, Any]) -> None:
    samples = rec.get("samples")
    if not isinstance(samples, list):
        raise Bad("samples must be a list")
    for sample in samples:
        _plain(_map(sample, "sample"), "sample")
        if "time" in sample:
            _time(sample["time"], "sample time")


def _artifact(rec: dict[str, Any]) -> None:
    if rec.get("role") not in ("input", "output"):
        raise Bad("role must be input or output")
    path = rec.get("path")
    _str(path, "path", max_len=1024)
    try:
        check_artifact_path(path)  # type: ignore[arg-type]
    except InvalidInput as exc:
        raise Bad(exc.message) from None
    for name in ("kind", "source", "sha256", "uri"):
        _str(rec.get(name), name, none=True, max_len=4096)
    for name in ("size", "step"):
        _int(rec.get(name), name, none=True)
    _int(rec.get("attempt", 1), "attempt")
    if rec.get("meta") is not None:
        _plain(_map(rec["meta"], "meta"), "meta")


def _counters(rec: dict[str, Any]) -> None:
    for name, value in _map(rec.get("data"), "data").items():
        _num(value, f"counter {name!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise Bad(f"counter {name!r} must be finite")


def _evidence(rec: dict[str, Any]) -> None:
    _str(rec.get("kind"), "kind", max_len=1000)
    _str(rec.get("name"), "name", max_len=1000)
    _plain(rec.get("data"), "data")


def _writer(rec: dict[str, Any]) -> None:
    for value in rec.values():
        if isinstance(value, int) and not isinstance(value, bool):
            _int(value, "a field")


def _timeline_record(rec: dict[str, Any]) -> None:
    _timeline(rec.get("data"))


_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "writer": _writer,
    "writer_end": _writer,
    "run": _run,
    "timeline": _timeline_record,
    "params": _data,
    "tags": _data,
    "note": _note,
    "context": _data,
    "metrics": _metrics,
    "logs": _logs,
    "spans": _spans,
    "stage_stats": _stage_stats,
    "resources": _resources,
    "artifact": _artifact,
    "counters": _counters,
    "evidence": _evidence,
}
assert set(_CHECKS) == KINDS, "every record kind needs a check"  # a programming error, at import


def check_record(rec: Any) -> None:
    """Raise :class:`Bad` (with the reason) unless ``rec`` is a record the store can take."""
    if not isinstance(rec, dict):
        raise Bad("a record must be a map")
    kind = rec.get("k")
    if kind not in _CHECKS:
        raise Bad(f"unknown record kind {kind!r}")
    run, writer, seq = rec.get("r"), rec.get("w"), rec.get("s")
    if not isinstance(run, str) or not RUN_ID_RE.match(run):
        raise Bad("r (the run id) must be letters, digits, '_', '-' or '.', at most 64")
    if not isinstance(writer, str) or not 0 < len(writer) <= 128:
        raise Bad("w (the writer id) must be a string of 1 to 128 characters")
    _int(seq, "s (the sequence number)", low=1)
    _time(rec.get("t"), "t (the time)")
    _CHECKS[kind](rec)
