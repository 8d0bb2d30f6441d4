"""The process's redactor for a store's home, built once: the built-in families, the values of
this process's secret-looking environment variables, and the user's patterns from
``flightlog.redact.txt`` in the working directory and ``HOME/redact.txt``.

Building one compiles the user's patterns and scans the environment, so it is cached per home
(a process writes to one store, a server serves one). The home is the caller's to find
(``flightlog.config``): this layer reads no configuration.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flightlog.errors import FlightlogError
from flightlog.notices import notice
from flightlog.redaction.kinds import USER_STRING_KINDS
from flightlog.redaction.patterns import load_patterns

if TYPE_CHECKING:
    from flightlog.redaction.engine import Redactor

__all__ = ["redactor", "pattern_files", "redact_user_strings", "redact_personal_data", "personal_data_redacted"]

_personal = False  # the personal family (personal.py) in this process's redactors: a serving process turns it on


def redact_personal_data(on: bool = True) -> None:
    """Turn the personal family on (or off) for every redactor this process builds from now on
    (``flightlog.serving.attach`` turns it on: a model server's log lines name its users)."""
    global _personal
    if _personal != on:
        _personal = on
        _build.cache_clear()


def personal_data_redacted() -> bool:
    """Whether this process's redactors hide personal data too."""
    return _personal


def pattern_files(home: Path) -> list[Path]:
    """Where the user's redaction patterns are read from, in order (missing files are fine)."""
    return [Path.cwd() / "flightlog.redact.txt", Path(home) / "redact.txt"]


@lru_cache(maxsize=4)
def _build(home: str) -> Redactor:
    # cost: compiles every family's regexes (~10 ms), on first use
    from flightlog.redaction.engine import Redactor

    try:
        patterns = load_patterns(pattern_files(Path(home)))
    except (FlightlogError, OSError) as exc:  # never raise into the workload: say so, go on
        notice(f"redaction patterns not used: {exc}")
        patterns = []
    return Redactor(extra_patterns=patterns, env=dict(os.environ), personal=_personal)


def redactor(home: str | os.PathLike[str]) -> Redactor:
    """The redactor of this process for the store at ``home`` (built on first use)."""
    return _build(os.fspath(home))


def redact_user_strings(record: dict[str, Any], home: str | os.PathLike[str]) -> dict[str, Any]:
    """The user strings in a journal record (params, tags, notes, names, command lines,
    evidence) redacted in place with this process's redactor; other records are left alone
    at the cost of one set lookup, and without importing the rules.

    The rules are imported on the first record that needs them, so ``import flightlog``
    stays light."""
    if record.get("k") in USER_STRING_KINDS:
        # cost: the rules' regexes (~10 ms), on the first user-string record
        from flightlog.redaction.userstrings import redact_record

        redact_record(record, redactor(home))
    return record
