"""The process's redactor for what the SDK records (log events, params, tags, notes, the
command line), built once.

The same rules as the runner's capture (see ``flightlog.capture``): built-in secret families,
secret-looking environment values, and user patterns from ``flightlog.redact.txt`` in the
working directory and ``FLIGHTLOG_HOME/redact.txt``.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from flightlog.config import discover_home
from flightlog.notices import notice

__all__ = ["redactor", "pattern_files", "redact_user_strings"]


def pattern_files(home: Path) -> list[Path]:
    return [Path.cwd() / "flightlog.redact.txt", home / "redact.txt"]


@lru_cache(maxsize=4)
def _build(home: str) -> Any:
    from flightlog.capture.patterns import load_patterns
    from flightlog.capture.redact import Redactor
    from flightlog.errors import FlightlogError

    try:
        patterns = load_patterns(pattern_files(Path(home)))
    except (FlightlogError, OSError) as exc:  # never raise into the workload: say so, go on
        notice(f"redaction patterns not used: {exc}")
        patterns = []
    return Redactor(extra_patterns=patterns, env=dict(os.environ))


def redactor(home: Path | None = None) -> Any:
    if home is None:
        given = os.environ.get("FLIGHTLOG_HOME", "").strip()
        home = Path(os.path.abspath(given)) if given else discover_home()
    return _build(str(home))


def redact_user_strings(record: dict[str, Any], home: Path | None = None) -> dict[str, Any]:
    """The user strings in a journal record (params, tags, notes, names, command lines)
    redacted in place with this process's redactor; other records are left alone.

    The capture package is imported on the first record that needs it, so ``import
    flightlog`` stays light."""
    from flightlog.capture.userstrings import USER_STRING_KINDS, redact_record

    if record.get("k") in USER_STRING_KINDS:
        redact_record(record, redactor(home))
    return record
