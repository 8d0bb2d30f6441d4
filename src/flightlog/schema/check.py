"""Checking records before a store sees them: the server's ingest and ``flightlog sync``.

The SDK writes well-formed records; a server also meets old clients, broken scripts and
fuzzers, and ``sync`` meets journals written by older versions or damaged on disk. A record is
checked by the schema: converted to its kind's Struct (`flightlog.schema.kinds`: the types,
ranges and lengths) and then validated (what types cannot say). A bad one is refused alone,
with the reason, so that it neither fails the batch nor lands in the store where it would
break every later read.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from flightlog.schema.bad import Bad
from flightlog.schema.kinds import Record, kind_struct

__all__ = ["check_record", "Bad"]

#: What the envelope's fields must be, said as users read it (msgspec's own words otherwise).
_ENVELOPE = {
    "r": "r (the run id) must be letters, digits, '_', '-' or '.', at most 64",
    "w": "w (the writer id) must be a string of 1 to 128 characters",
    "s": "s (the sequence number) must be a whole number ≥ 1",
    "t": "t (the time) must be a number",
}
_AT = re.compile(r"^(?P<what>.*?) - at `\$\.?(?P<where>[^`]*)`$", re.S)


def explain(exc: msgspec.ValidationError) -> str:
    """msgspec's ``Expected `int`, got `str` - at `$.spans[0][3]` `` → ``spans[0][3]: expected `int`, got `str` ``."""
    text = str(exc)
    match = _AT.match(text)
    if match is None:
        missing = re.match(r"Object missing required field `([^`]*)`", text)
        if missing and missing.group(1) in _ENVELOPE:
            return _ENVELOPE[missing.group(1)]
        return text[:1].lower() + text[1:]
    where, what = match["where"], match["what"]
    if where in _ENVELOPE:
        return _ENVELOPE[where]
    return f"{where}: {what[:1].lower() + what[1:]}"


def check_record(rec: Any) -> Record:
    """The record ``rec`` (a decoded map) as its kind's Struct; :class:`Bad` (with the reason)
    unless it is a record the store can take. Unknown fields are ignored, as every reader does."""
    if not isinstance(rec, dict):
        raise Bad("a record must be a map")
    cls = kind_struct(rec.get("k"))
    if cls is None:
        raise Bad(f"unknown record kind {rec.get('k')!r}")
    try:
        record = msgspec.convert(rec, cls)
    except msgspec.ValidationError as exc:
        raise Bad(explain(exc)) from None
    except RecursionError:
        raise Bad("the record is nested too deeply") from None
    record.validate()
    return record
