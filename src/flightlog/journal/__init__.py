"""The per-run, append-only local journal: every record lands here before anything else."""

from flightlog.journal.files import JournalFile, JournalWriter, journal_root, list_journals
from flightlog.journal.format import (
    MAGIC,
    JournalDamage,
    ReadResult,
    encode_record,
    encode_records,
    read_records,
)

__all__ = [
    "MAGIC",
    "JournalDamage",
    "JournalFile",
    "JournalWriter",
    "ReadResult",
    "encode_record",
    "encode_records",
    "journal_root",
    "list_journals",
    "read_records",
]
