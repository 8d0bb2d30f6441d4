"""How a corpus entry is replayed for the message-level score and for training: the message as
the last log events of a process (after one ordinary line) that ended the way the entry says
(``ending``), else with exit 1 — the way the fast classifier that ``flightlog run`` calls sees
it. A benign line is replayed as the only line of a process that exited 1.

The message is split into events by the capture of ``flightlog run`` itself (:func:`events`:
the runner's ``CapturePipeline``, then what its output pump keeps of each event): a traceback
or another multi-line block stays one event, every other line becomes an event of its own —
what the rules and the ranker see at run time, not one event holding the whole message."""

from __future__ import annotations

import re
from typing import Any

from flightlog.capture import CaptureConfig, CapturePipeline
from flightlog.diagnose.classify import classify_failure, read_process
from flightlog.diagnose.structure import FailureRead
from flightlog.runner.pump import _with_logged_exception

__all__ = ["ending_facts", "events", "replay", "replay_benign", "classify_entry", "classify_benign_line"]

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


def events(text: str) -> list[str]:
    """The log events ``flightlog run`` makes of ``text`` written to stderr: the runner's
    capture pipeline groups the lines (``flightlog.capture.grouping``), and the runner's output
    pump reads each event as ``last_lines`` gets it (a JSON line with its logged traceback)."""
    pipeline = CapturePipeline(CaptureConfig(env={}))
    data = text if text.endswith("\n") else text + "\n"
    out: list[str] = []
    for batch in (pipeline.feed("stderr", data.encode(), 0.0), pipeline.close(0.0)):
        out.extend(_with_logged_exception(m, f) for m, f in zip(batch.message, batch.fields, strict=True))
    return out


def _args(message: str, ending: str | None, lines: list[str]) -> dict[str, Any]:
    return {
        **ending_facts(ending),
        "timed_out": False,
        "oom_killed": False,
        "traceback_text": None,
        "last_lines": lines,
    }


def _lines(message: str) -> list[str]:
    return ["starting", *events(message)]


def replay(entry: dict[str, Any]) -> FailureRead:
    return read_process(**_args(entry["message"], entry.get("ending"), _lines(entry["message"])))


def replay_benign(entry: dict[str, Any]) -> FailureRead:
    return read_process(**_args(entry["message"], None, [entry["message"]]))


def classify_entry(entry: dict[str, Any]) -> tuple[str, float]:
    return classify_failure(**_args(entry["message"], entry.get("ending"), _lines(entry["message"])))


def classify_benign_line(message: str) -> tuple[str, float]:
    return classify_failure(**_args(message, None, [message]))
