"""Forming records: the one place a record map is built.

Writers (the SDK, the runner, importers, the pipeline, the server's routes, the store's own
edits) call :func:`record`; the journal, the shipper and the stores then carry the map as it
is, encoded by msgpack once. A map, not a Struct, on the write path: the redaction, the
writer's numbering and the store's ingest all work on it, and building a Struct there only
to turn it back into a map would cost the hot path a copy per record (see
docs/architecture.md, "Records"). What a record may hold is defined by its kind's Struct
(`flightlog.schema.kinds`) and checked where records arrive from outside (`check_record`)."""

from __future__ import annotations

from typing import Any

from flightlog.schema.kinds import kind_struct

__all__ = ["record", "envelope"]


def record(kind: str, /, **fields: Any) -> dict[str, Any]:
    """A ``kind`` record with ``fields`` (any of r, w, s, t and the kind's payload). An
    unknown kind is a programming error (the kinds are constants in our code)."""
    if kind_struct(kind) is None:
        raise ValueError(f"unknown record kind {kind!r}: define it in flightlog.schema.kinds or register_kind")
    fields["k"] = kind
    return fields


def envelope(rec: dict[str, Any], run_id: str, writer_id: str, seq: int) -> dict[str, Any]:
    """``rec`` addressed: its run, writer and sequence number set (in place; returned)."""
    rec["r"] = run_id
    rec["w"] = writer_id
    rec["s"] = seq
    return rec
