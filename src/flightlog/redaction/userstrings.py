"""Redaction of the strings a user gives a run, in the records that store them.

Captured output and SDK log events are redacted as they are written; this module covers the
rest of what a user types or passes: params, tags, notes, the run's name and description, the
command line and environment in the run context, the workload definition in a failure summary,
and every piece of evidence (the runner's configuration, a pipeline's definition, what is sent
to ``POST /runs/{run}/evidence``). ``redact_record`` is the one function for all of
them, applied by the SDK before a record reaches the journal (``Writer.add_record``, the
context) and again by the server to every record it ingests (old clients, other writers), so a
secret is hidden whichever way it arrives. Applying it twice changes nothing.

What counts as a secret is the project's one policy: families by shape, names by
``names.is_secret_name``, the values of secret environment variables, user patterns.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from flightlog.redaction.engine import Redactor
from flightlog.redaction.kinds import USER_STRING_KINDS
from flightlog.redaction.names import is_secret_name
from flightlog.redaction.stats import count_pass

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
    """A process's context. Every run a process starts carries the same one (a sweep's thousand
    runs, a thousand times), so the redacted form is remembered per redactor: for the very dict
    it was made from (the SDK hands each run the same one while nothing in it changed,
    ``sdk/context.py``), and keyed by what can change between runs (command, working directory,
    environment, git state), the package list, passed through as it is, never part of the key."""
    data = rec.get("data")
    if not isinstance(data, Mapping):
        return
    last = _LAST.get(red)
    if last is not None and last[0] is data:
        rec["data"], found = last[1], last[2]
        red.count += found  # counted as the pass it stands for would have counted them
        return
    key = repr(tuple((k, None if k == "packages" else v) for k, v in data.items()))
    memo = _CONTEXTS.get(red)
    if memo is None:
        memo = _CONTEXTS[red] = {}
    hit = memo.get(key)
    if hit is not None:
        redacted, found = hit
        red.count += found
        rec["data"] = {k: data[k] if k == "packages" else v for k, v in redacted.items()}
    else:
        before = red.count
        rec["data"] = _workload(data, red)
        found = red.count - before
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        memo[key] = (rec["data"], found)
    _LAST[red] = (data, rec["data"], found)


_CONTEXTS: weakref.WeakKeyDictionary[Redactor, dict[str, tuple[dict[str, Any], int]]] = weakref.WeakKeyDictionary()
#: per redactor, the context it redacted last: (the dict given, its redacted form, secrets found)
_LAST: weakref.WeakKeyDictionary[Redactor, tuple[Mapping[str, Any], dict[str, Any], int]] = weakref.WeakKeyDictionary()
_MEMO_SIZE = 16


def _run(rec: dict[str, Any], red: Redactor) -> None:
    for key in ("name", "description"):
        value = rec.get(key)
        if isinstance(value, str):
            rec[key] = red.redact(value)
    failure = rec.get("failure")
    if isinstance(failure, Mapping):
        rec["failure"] = _workload(failure, red)


def _evidence(rec: dict[str, Any], red: Redactor) -> None:
    """Evidence is whatever a user or a feature attached to the run — the runner's
    configuration, a pipeline's definition (each step's command line and params), a
    validation's failing values, anything sent to ``POST /runs/{run}/evidence`` — so it is
    redacted like every other user string: command lines as command lines, params and
    environments by key, every other secret-named key hidden, every string scanned."""
    data = rec.get("data")
    if not isinstance(data, Mapping):
        return
    if rec.get("kind") == "runner":
        rec["data"] = _workload(data, red)
    elif _needs_care(data) or _has_secret_text(data, red):
        rec["data"] = _evidence_value(data, red)


def _needs_care(value: Any) -> bool:
    """Whether ``value`` holds a key that must be judged by name: a secret-named key, or a
    command line (``--token abc`` is a secret only as a command line). Evidence is decoded
    JSON or msgpack, so its containers are plain dicts and lists (tuples from the SDK)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            for key in item:
                if type(key) is str and (key in _BY_NAME or is_secret_name(key)):
                    return True
            stack.extend(v for v in item.values() if type(v) in _CONTAINERS)
        elif type(item) in _CONTAINERS:
            stack.extend(v for v in item if type(v) in _CONTAINERS)
        elif isinstance(item, Mapping):
            stack.append(dict(item))
    return False


def _has_secret_text(data: Mapping[str, Any], red: Redactor) -> bool:
    """Whether evidence needs redacting string by string. A large one is first scanned whole,
    as text: a manifest of 100,000 file names and hashes costs one pass over its JSON, not a
    redaction per string, when (as nearly always) there is nothing in it to hide."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    # small evidence is redacted string by string whatever the probe says, so a user pattern
    # anchored at the start of a string (``^cust-``) is applied as it is written
    return len(text) < _PROBE_ABOVE or red.probe(text)


def _evidence_value(value: Any, red: Redactor) -> Any:
    if isinstance(value, str):
        return red.redact(value)
    if isinstance(value, list | tuple):
        return [_evidence_value(item, red) for item in value]
    if not isinstance(value, Mapping):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "command" and isinstance(item, list | tuple):
            out[key] = red.redact_argv(item)
        elif key in ("params", "env") and isinstance(item, Mapping):
            out[key] = red.redact_mapping(item)
        elif isinstance(key, str) and is_secret_name(key):
            out[key] = red.redact_mapping({key: item})[key]
        else:
            out[key] = _evidence_value(item, red)
    return out


_BY_NAME = frozenset({"command", "params", "env"})
_CONTAINERS = (dict, list, tuple)
_PROBE_ABOVE = 65536  # characters of JSON


_HANDLERS: dict[str, Callable[[dict[str, Any], Redactor], None]] = {
    "params": _data_by_key,
    "tags": _data_by_key,
    "note": _note,
    "context": _context,
    "run": _run,
    "writer_end": _run,  # a rank's own end carries its failure, as the run record does
    "evidence": _evidence,
}
assert set(_HANDLERS) == USER_STRING_KINDS, "every user-string kind needs a handler"  # a programming error, at import


def redact_record(rec: dict[str, Any], red: Redactor) -> dict[str, Any]:
    """``rec`` (a journal record) with the user strings it holds redacted, in place; records
    of other kinds are returned untouched at the cost of one lookup."""
    kind = rec.get("k")
    handler = _HANDLERS.get(kind)  # type: ignore[arg-type]
    if handler is not None:
        handler(rec, red)
        count_pass(kind)  # type: ignore[arg-type]
    return rec
