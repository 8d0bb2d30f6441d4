"""Identifiers: runs and journal writers.

Run ids are random (not time-ordered) so that the first few characters are enough to
address a run, as with git commits.
"""

from __future__ import annotations

import re
import secrets

__all__ = ["new_run_id", "new_writer_id", "RUN_ID_RE"]

RUN_ID_RE = re.compile(r"^[0-9a-zA-Z][0-9a-zA-Z_.-]{0,63}$")


def new_run_id() -> str:
    return secrets.token_hex(16)


def new_writer_id() -> str:
    return secrets.token_hex(8)
