"""How a corpus entry is replayed for the message-level score and for training: the message as
the last log event of a process (after one ordinary line) that ended the way the entry says
(``ending``), else with exit 1 — the way the fast classifier that ``flightlog run`` calls sees
it. A benign line is replayed as the only line of a process that exited 1."""

from __future__ import annotations

import re
from typing import Any

from flightlog.diagnose.classify import classify_failure, read_process
from flightlog.diagnose.structure import FailureRead

__all__ = ["ending_facts", "replay", "replay_benign", "classify_entry", "classify_benign_line"]

_SIGNALS = {"SIGHUP": 1, "SIGINT": 2, "SIGABRT": 6, "SIGKILL": 9, "SIGSEGV": 11, "SIGALRM": 14, "SIGTERM": 15}


def ending_facts(ending: str | None) -> dict[str, Any]:
    """``exit_code``/``signal`` of an entry's ``ending`` ("exit 137", "SIGKILL", "signal 9")."""
    if not ending:
        return {"exit_code": 1, "signal": None}
    ending = ending.strip()
    m = re.match(r"^exit (-?\d+)$", ending)
    if m:
        code = int(m[1])
        if code < 0:  # subprocess's "-9": killed by that signal
            return {"exit_code": 128 - code, "signal": -code}
        return {"exit_code": code, "signal": None}
    m = re.match(r"^signal (\d+)$", ending)
    number = int(m[1]) if m else _SIGNALS.get(ending)
    if number is None:
        return {"exit_code": 1, "signal": None}
    return {"exit_code": 128 + number, "signal": number}


def _args(message: str, ending: str | None, lines: list[str]) -> dict[str, Any]:
    return {
        **ending_facts(ending),
        "timed_out": False,
        "oom_killed": False,
        "traceback_text": None,
        "last_lines": lines,
    }


def replay(entry: dict[str, Any]) -> FailureRead:
    return read_process(**_args(entry["message"], entry.get("ending"), ["starting", entry["message"]]))


def replay_benign(entry: dict[str, Any]) -> FailureRead:
    return read_process(**_args(entry["message"], None, [entry["message"]]))


def classify_entry(entry: dict[str, Any]) -> tuple[str, float]:
    return classify_failure(**_args(entry["message"], entry.get("ending"), ["starting", entry["message"]]))


def classify_benign_line(message: str) -> tuple[str, float]:
    return classify_failure(**_args(message, None, [message]))
