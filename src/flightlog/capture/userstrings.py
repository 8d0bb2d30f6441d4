"""Redaction of the strings a user gives a run, in the records that store them.

Captured output and SDK log events are redacted as they are written; this module covers the
rest of what a user types or passes: params, tags, notes, the run's name and description, the
command line and environment in the run context, the workload definition in a failure summary
and in the runner's configuration evidence. ``redact_record`` is the one function for all of
them, applied by the SDK before a record reaches the journal (``Writer.add_record``, the
context) and again by the server to every record it ingests (old clients, other writers), so a
secret is hidden whichever way it arrives. Applying it twice changes nothing.

What counts as a secret is the project's one policy: families by shape, names by
``names.is_secret_name``, the values of secret environment variables, user patterns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flightlog.capture.redact import Redactor

__all__ = ["redact_record", "USER_STRING_KINDS"]


def _data_by_key(rec: dict[str, Any], red: Redactor) -> None:
    """params, tags: secret-named keys hide their values; every string is scanned."""
    data = rec.get("data")
    if isinstance(data, Mapping):
        rec["data"] = red.redact_mapping(data)


def _note(rec: dict[str, Any], red: Redactor) -> None:
    text = rec.get("text")
    if isinstance(text, str):
        rec["text"] = red.redact(text)


def _workload(data: Mapping[str, Any], red: Redactor) -> dict[str, Any]:
    """A process's description (context, workload, runner config): the command line as a
    command line, params and environment by key, other strings scanned; package names and
    versions are left alone (``google-auth`` names a package, not a secret)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "command" and isinstance(value, list | tuple):
            out[key] = red.redact_argv(value)
        elif key in ("params", "env") and isinstance(value, Mapping):
            out[key] = red.redact_mapping(value)
        elif key == "packages":
            out[key] = value
        elif key == "workload" and isinstance(value, Mapping):
            out[key] = _workload(value, red)
        else:
            out[key] = red.redact_strings(value)
    return out


def _context(rec: dict[str, Any], red: Redactor) -> None:
    data = rec.get("data")
    if isinstance(data, Mapping):
        rec["data"] = _workload(data, red)


def _run(rec: dict[str, Any], red: Redactor) -> None:
    for key in ("name", "description"):
        value = rec.get(key)
        if isinstance(value, str):
            rec[key] = red.redact(value)
    failure = rec.get("failure")
    if isinstance(failure, Mapping):
        rec["failure"] = _workload(failure, red)


def _evidence(rec: dict[str, Any], red: Redactor) -> None:
    """The runner's configuration holds the command line; other evidence is data, not text
    a user typed, and is left as it is."""
    data = rec.get("data")
    if rec.get("kind") == "runner" and isinstance(data, Mapping):
        rec["data"] = _workload(data, red)


_HANDLERS: dict[str, Callable[[dict[str, Any], Redactor], None]] = {
    "params": _data_by_key,
    "tags": _data_by_key,
    "note": _note,
    "context": _context,
    "run": _run,
    "evidence": _evidence,
}
#: Record kinds that may hold strings a user gave.
USER_STRING_KINDS = frozenset(_HANDLERS)


def redact_record(rec: dict[str, Any], red: Redactor) -> dict[str, Any]:
    """``rec`` (a journal record) with the user strings it holds redacted, in place; records
    of other kinds are returned untouched at the cost of one lookup."""
    handler = _HANDLERS.get(rec.get("k"))  # type: ignore[arg-type]
    if handler is not None:
        handler(rec, red)
    return rec
