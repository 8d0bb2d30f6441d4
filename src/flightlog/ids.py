"""Identifiers: runs and journal writers.

Run ids are random (not time-ordered) so that the first few characters are enough to
address a run, as with git commits.
"""

from __future__ import annotations

import re
import secrets

__all__ = [
    "new_run_id",
    "new_writer_id",
    "observed_writer_id",
    "is_observed_writer",
    "OBSERVED_WRITER_PREFIX",
    "RUN_ID_RE",
]

#: the writer ids of ``flightlog run``'s account of a rank that has no SDK of its own
#: (runner/ranks.py): readers prefer the rank's own writer where both recorded it
OBSERVED_WRITER_PREFIX = "observed-"

RUN_ID_RE = re.compile(r"^[0-9a-zA-Z][0-9a-zA-Z_.-]{0,63}$")


def new_run_id() -> str:
    return secrets.token_hex(16)


def new_writer_id() -> str:
    return secrets.token_hex(8)


def observed_writer_id() -> str:
    return OBSERVED_WRITER_PREFIX + secrets.token_hex(8)


def is_observed_writer(writer: str | None) -> bool:
    return bool(writer) and str(writer).startswith(OBSERVED_WRITER_PREFIX)
