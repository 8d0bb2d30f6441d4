"""The journal's on-disk framing: a magic header, then length-prefixed, checksummed records.

    file   := MAGIC record*
    record := u32 length | u32 crc32(payload) | payload (msgpack map)

A process killed mid-write leaves a torn last record (length past the end of the file) and a
bad disk or a stray write leaves a checksum mismatch; both are detected, and every record
before the damage is kept. Records are never rewritten in place.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any

import msgspec

from flightlog.schema.values import escape_surrogates

__all__ = ["MAGIC", "encode_record", "encode_records", "read_records", "JournalDamage", "ReadResult"]

MAGIC = b"FLJOURNAL1\n"
_HEADER = struct.Struct("<II")
MAX_RECORD = 1 << 30

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder()


def encode_record(record: dict[str, Any]) -> bytes:
    """``record`` framed. Text that UTF-8 cannot hold (a lone surrogate from a file name that
    is not UTF-8: ``records.storable_text``) is escaped *in the record itself*, so what the
    journal keeps and what is shipped to the store are the same, and nothing else in the record
    is lost."""
    try:
        payload = _encoder.encode(record)
    except UnicodeEncodeError:
        escaped = escape_surrogates(record)
        record.clear()
        record.update(escaped)
        payload = _encoder.encode(record)
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def encode_records(records: list[dict[str, Any]]) -> bytes:
    return b"".join(encode_record(r) for r in records)


@dataclass(frozen=True)
class JournalDamage:
    offset: int
    reason: str

    def describe(self, path: str) -> str:
        return f"{path}: damaged record at byte {self.offset} ({self.reason}); records before it were kept, the rest skipped"


@dataclass
class ReadResult:
    records: list[tuple[int, dict[str, Any]]]  # (offset just past the record, record)
    end: int  # offset after the last good record
    damage: JournalDamage | None


def read_records(data: bytes, start: int = 0, *, header: bool = True) -> ReadResult:
    """Decode every intact record of ``data`` from ``start``.

    ``header`` says whether ``data`` begins at the start of the file (then the magic is checked
    first); pass False when ``data`` was read from a record boundary further in.
    """
    records: list[tuple[int, dict[str, Any]]] = []
    pos = start
    if pos == 0 and header:
        if not data.startswith(MAGIC):
            if not data:
                return ReadResult(records, 0, None)
            return ReadResult(records, 0, JournalDamage(0, "not a flightlog journal (bad header)"))
        pos = len(MAGIC)
    end = len(data)
    while True:
        if pos == end:
            return ReadResult(records, pos, None)
        if pos + _HEADER.size > end:
            return ReadResult(records, pos, JournalDamage(pos, "torn record header at end of file"))
        length, crc = _HEADER.unpack_from(data, pos)
        body_start = pos + _HEADER.size
        if length > MAX_RECORD or body_start + length > end:
            return ReadResult(records, pos, JournalDamage(pos, "torn record: file ends inside it"))
        payload = data[body_start : body_start + length]
        if zlib.crc32(payload) != crc:
            return ReadResult(records, pos, JournalDamage(pos, "checksum mismatch"))
        try:
            record = _decoder.decode(payload)
        except msgspec.DecodeError as exc:
            return ReadResult(records, pos, JournalDamage(pos, f"undecodable record: {exc}"))
        if not isinstance(record, dict):
            return ReadResult(records, pos, JournalDamage(pos, "record is not a map"))
        pos = body_start + length
        records.append((pos, record))
