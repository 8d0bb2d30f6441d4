"""Reading the corpus files and the rule that split them (recorded in each file's header).

The split rule (issue 29): an entry is held out when its thread's GitHub repository
(``owner/name`` of ``source``, lower-cased) hashes into the held-out share —
``int(sha256(repository)[:8], 16) % 100 < 35``. Whole repositories are on one side: near-twins
of one project's threads never measure memory, and a repository never moves from one side to
the other as the corpus grows.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import yaml

__all__ = ["HERE", "SETS", "load_set", "held_out", "repository", "all_failures", "all_benign", "HELD_OUT_PERCENT"]

HERE = Path(__file__).parent
SETS = ("dev", "heldout")
#: share of repositories held out, in percent (the split rule of the files' header)
HELD_OUT_PERCENT = 35
_REPOSITORY = re.compile(r"^https://github\.com/(?P<owner>[\w.-]+)/(?P<name>[\w.-]+)(?:/|$)")


def load_set(name: str) -> dict[str, list[dict[str, Any]]]:
    """``{"failures": [...], "benign": [...]}`` of ``dev`` or ``heldout``."""
    data: dict[str, list[dict[str, Any]]] = yaml.safe_load((HERE / f"{name}.yaml").read_text())
    return data


def repository(source: str) -> str | None:
    """``owner/name`` (lower-cased) of a GitHub thread's URL; None for anything else."""
    m = _REPOSITORY.match(source or "")
    return f"{m['owner']}/{m['name']}".lower() if m else None


def held_out(entry: dict[str, Any]) -> bool:
    """The split rule: a deterministic hash of the entry's repository, so a repository is never
    on both sides and a new entry lands in its set without anyone choosing it."""
    repo = repository(entry.get("source", "")) or entry.get("source", "")
    return int(hashlib.sha256(repo.encode()).hexdigest()[:8], 16) % 100 < HELD_OUT_PERCENT


def all_failures() -> list[dict[str, Any]]:
    return [e for name in SETS for e in load_set(name)["failures"]]


def all_benign() -> list[dict[str, Any]]:
    return [e for name in SETS for e in load_set(name)["benign"]]
