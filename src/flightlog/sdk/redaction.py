"""The process's redactor for what the SDK records (log events, evidence), built once.

The same rules as the runner's capture (see ``flightlog.capture``): built-in secret families,
secret-looking environment values, and user patterns from ``flightlog.redact.txt`` in the
working directory and ``FLIGHTLOG_HOME/redact.txt``.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["redactor", "pattern_files"]


def pattern_files(home: Path) -> list[Path]:
    return [Path.cwd() / "flightlog.redact.txt", home / "redact.txt"]


@lru_cache(maxsize=4)
def _build(home: str) -> Any:
    from flightlog.capture import Redactor, load_patterns

    return Redactor(extra_patterns=load_patterns(pattern_files(Path(home))), env=dict(os.environ))


def redactor(home: Path | None = None) -> Any:
    if home is None:
        home = Path(os.path.abspath(os.environ.get("FLIGHTLOG_HOME") or ".flightlog"))
    return _build(str(home))
