"""The values inside records: encoded series and log chunks, storable text, metric names, params.

Series travel pre-encoded (little-endian arrays, msgpack columns) so that the journal, the
shipper and the store never re-encode per point; the record kinds themselves are defined in
`flightlog.schema.kinds`.
"""

from __future__ import annotations

import codecs
import json
import math
import sys
from array import array
from typing import Any

import msgspec

from flightlog.logevents import LogBatch

__all__ = [
    "encode_series",
    "decode_series",
    "series_summary",
    "log_chunk_payload",
    "decode_log_chunk",
    "param_columns",
    "is_json_value",
    "escape_surrogates",
    "storable_text",
    "MAX_METRIC_NAME",
    "MAX_PARAM_DEPTH",
    "metric_name_problem",
]

_BIG_ENDIAN = sys.byteorder == "big"
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()


def _le_bytes(arr: array) -> bytes:
    if _BIG_ENDIAN:
        arr = array(arr.typecode, arr)
        arr.byteswap()
    return arr.tobytes()


def _from_le(typecode: str, data: bytes) -> array:
    arr = array(typecode)
    arr.frombytes(data)
    if _BIG_ENDIAN:
        arr.byteswap()
    return arr


def encode_series(steps: array, times: array, values: array) -> list[bytes]:
    """int64 steps, float64 times and values → three little-endian byte strings."""
    return [_le_bytes(steps), _le_bytes(times), _le_bytes(values)]


def decode_series(encoded: list[bytes]) -> tuple[array, array, array]:
    return _from_le("q", encoded[0]), _from_le("d", encoded[1]), _from_le("d", encoded[2])


def series_summary(steps: array, times: array, values: array) -> dict[str, Any]:
    """count, non-finite count, finite min/max, the value at the highest step (last seen wins)."""
    n = len(values)
    if n >= _VECTOR_FROM:
        return _series_summary_np(steps, times, values)
    isfinite = math.isfinite
    finite = [v for v in values if isfinite(v)]
    last_step = max(steps)
    # the last point carrying the highest step: scan from the end
    idx = n - 1
    while steps[idx] != last_step:
        idx -= 1
    return {
        "count": n,
        "nonfinite": n - len(finite),
        "min": min(finite) if finite else None,
        "max": max(finite) if finite else None,
        "first_step": min(steps),
        "last_step": last_step,
        "last_value": values[idx],
        "first_time": min(times),
        "last_time": max(times),
    }


_VECTOR_FROM = 512  # points from which numpy's passes beat Python's (its call costs ~10 µs)


def _series_summary_np(steps: array, times: array, values: array) -> dict[str, Any]:
    """``series_summary`` of a long chunk (a loop's flush: thousands of points per series) in
    numpy's passes; the same answers, at a few nanoseconds a point instead of a Python loop's."""
    import numpy as np  # here: `import flightlog` must not pay for numpy, nor a short chunk

    s = np.frombuffer(steps, dtype=np.int64)
    t = np.frombuffer(times, dtype=np.float64)
    v = np.frombuffer(values, dtype=np.float64)
    finite = np.isfinite(v)
    kept = int(np.count_nonzero(finite))
    last_step = int(s.max())
    idx = len(s) - 1 - int(np.argmax(s[::-1] == last_step))  # the last point carrying the highest step
    fv = v[finite] if kept < len(v) else v
    return {
        "count": len(v),
        "nonfinite": len(v) - kept,
        "min": float(fv.min()) if kept else None,
        "max": float(fv.max()) if kept else None,
        "first_step": int(s.min()),
        "last_step": last_step,
        "last_value": float(v[idx]),
        "first_time": float(t.min()),
        "last_time": float(t.max()),
    }


def log_chunk_payload(batch: LogBatch) -> dict[str, Any]:
    """The payload of a ``logs`` record: columns encoded once, plus what queries prune on."""
    attempts = sorted(set(batch.attempt))
    columns = batch.to_columns()
    try:
        data = _encoder.encode(columns)
    except UnicodeEncodeError:  # a lone surrogate in a message or a field: escaped, never lost
        data = _encoder.encode(escape_surrogates(columns))
    return {
        "n": len(batch),
        "t0": min(batch.time),
        "t1": max(batch.time),
        "maxlvl": max(batch.level),
        "attempts": ",".join(str(a) for a in attempts),
        "data": data,
    }


# --- text that UTF-8 can hold ---------------------------------------------------------------
#
# A Python ``str`` may hold lone surrogates that no UTF-8 encoder accepts: ``os.fsdecode``,
# ``os.listdir``, ``sys.argv`` and ``argparse`` turn each byte of a file name that is not UTF-8
# into one (``caf\xe9`` → ``"caf\udce9"``), and JSON's ``"\ud800"`` escape makes another. msgpack,
# JSON and SQLite all refuse such text, and a refused record used to take everything that came
# with it (all params, the run's context, a flush's metrics, the final status). Every record is
# made storable where it is encoded: a byte escaped this way is kept visibly as the four
# characters ``\xe9`` (as captured output keeps bytes that are not UTF-8), any other lone
# surrogate becomes U+FFFD. Text without surrogates is never copied.

_ERRORS = "flightlog.surrogates"


_FFFD = "\ufffd".encode()


def _replace_surrogates(exc: UnicodeError) -> tuple[bytes, int]:
    # bytes, not str: the UTF-8 encoder takes only ASCII text back from an error handler
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = []
    for ch in exc.object[exc.start : exc.end]:
        code = ord(ch)
        out.append(b"\\x%02x" % (code - 0xDC00) if 0xDC80 <= code <= 0xDCFF else _FFFD)
    return b"".join(out), exc.end


codecs.register_error(_ERRORS, _replace_surrogates)


def storable_text(text: str) -> str:
    """``text``, or its copy with every lone surrogate escaped (see above)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", _ERRORS).decode("utf-8")
    return text


def escape_surrogates(value: Any, _depth: int = 0) -> Any:
    """``value`` with every string in it (mapping keys too) made storable, recursively; lists
    and dicts are rebuilt, other values returned as they are. For the slow path only: callers
    try to encode first and come here when the encoder refuses a surrogate."""
    if isinstance(value, str):
        return storable_text(value)
    if _depth > 64:
        return value
    if isinstance(value, dict):
        return {
            (storable_text(k) if isinstance(k, str) else k): escape_surrogates(v, _depth + 1) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [escape_surrogates(item, _depth + 1) for item in value]
    return value


def decode_log_chunk(data: bytes) -> LogBatch:
    return LogBatch.from_columns(_decoder.decode(data))


#: A metric name's length, in characters: MLflow's limit for its keys, so every name MLflow
#: takes is taken here too (and any printable text besides: MLflow allows only letters, digits
#: and ``_-. /``).
MAX_METRIC_NAME = 250
#: How deep params may nest (``{"a": {"b": ...}}``): far past any real config, short of
#: Python's recursion limit (a config nested 5,000 deep used to raise RecursionError).
MAX_PARAM_DEPTH = 32
_CONTROL = frozenset(range(0, 32)) | {127} | frozenset(range(0x80, 0xA0)) | {0x2028, 0x2029}


def metric_name_problem(name: Any) -> str | None:
    """What is wrong with ``name`` as a metric name, or None. A name is a non-empty string of
    at most MAX_METRIC_NAME characters without control characters (NUL, LF, ESC: a name is
    shown in terminals, tables and charts, where those break lines or inject escapes)."""
    if not isinstance(name, str):
        return f"must be a string, not {type(name).__name__}"
    if not name:
        return "is empty"
    if len(name) > MAX_METRIC_NAME:
        return f"has {len(name)} characters; at most {MAX_METRIC_NAME} are allowed"
    if not name.isascii() or not name.isprintable():
        bad = next((c for c in name if ord(c) in _CONTROL), None)
        if bad is not None:
            return f"contains the control character {bad!r}; use printable characters"
    return None


def is_json_value(value: Any, _depth: int = 0) -> bool:
    """True when JSON (and msgpack) can hold ``value`` exactly: str, int, float, bool, None, lists, str-keyed dicts."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if _depth > 32:
        return False
    if isinstance(value, (list, tuple)):
        return all(is_json_value(v, _depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_json_value(v, _depth + 1) for k, v in value.items())
    return False


def param_columns(value: Any) -> tuple[str, float | None, str]:
    """A param value → (display text, number for comparisons, kind)."""
    if value is None:
        return "null", None, "null"
    if isinstance(value, bool):
        return ("true" if value else "false"), None, "bool"
    if isinstance(value, int):
        return str(value), float(value), "int"
    if isinstance(value, float):
        # what json.dumps writes for a finite float (float.__repr__, also for a subclass such as
        # numpy.float64), without its encoder's set-up: a run's twenty params cost twenty of these
        text = float.__repr__(value) if math.isfinite(value) else repr(value)
        return text, value, "float"
    if isinstance(value, str):
        return value, None, "str"
    return json.dumps(value, sort_keys=True), None, "json"


def param_value(text: str, kind: str) -> Any:
    """Inverse of :func:`param_columns`."""
    if kind == "str":
        return text
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "bool":
        return text == "true"
    if kind == "null":
        return None
    return json.loads(text)
