"""Reading the corpus files and the rule that split them (recorded in each file's header)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

__all__ = ["HERE", "SETS", "load_set", "held_out", "all_failures", "all_benign"]

HERE = Path(__file__).parent
SETS = ("dev", "heldout")
#: share of the corpus held out, in tenths (the split rule of the files' header)
HELD_OUT_TENTHS = 3


def load_set(name: str) -> dict[str, list[dict[str, Any]]]:
    """``{"failures": [...], "benign": [...]}`` of ``dev`` or ``heldout``."""
    data: dict[str, list[dict[str, Any]]] = yaml.safe_load((HERE / f"{name}.yaml").read_text())
    return data


def held_out(entry: dict[str, Any]) -> bool:
    """The split rule: a deterministic hash of the entry's thread and text, so the split never
    depends on file order and a new entry lands in a set without anyone choosing it."""
    digest = hashlib.sha256((entry.get("source", "") + "\n" + entry["message"]).encode()).hexdigest()
    return int(digest[:8], 16) % 10 < HELD_OUT_TENTHS


def all_failures() -> list[dict[str, Any]]:
    return [e for name in SETS for e in load_set(name)["failures"]]


def all_benign() -> list[dict[str, Any]]:
    return [e for name in SETS for e in load_set(name)["benign"]]
