"""The forms a failure takes in a log, turned back into the plain text the chain reader parses.

Why: the error is often there but not where a reader looks. A launcher puts ``[rank0]: `` in
front of every line; structured logging escapes the traceback into a JSON field
(``"exc_info": "Traceback (most recent call last):\\n  File ..."``); ``rich`` draws it in a
box, with ``path:line in function`` frames and the exception's short name under the box; a
native library prints ``F0105 ... Check failed: ...`` or ``terminate called after throwing an
instance of ...`` just before SIGABRT. Each form is rewritten here as the interpreter's own
format (or as a ``Type: message`` line), so one parser reads them all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from flightlog.capture.launchers import strip_launcher_prefixes  # contract C1: torchrun, srun, mpirun, pdsh

__all__ = [
    "plain_text",
    "strip_launcher_prefixes",
    "json_texts",
    "unbox_rich",
    "native_failures",
    "unescape_traceback",
    "dict_traceback",
]

_HEADER = "Traceback (most recent call last)"
#: JSON keys that hold a logged exception's text (python-json-logger, structlog, loguru, GCP, ECS)
_EXCEPTION_KEYS = ("exc_info", "exception", "exc_text", "stack_trace", "stack", "traceback", "error", "err")
_MESSAGE_KEYS = ("message", "msg", "event", "text", "log")
_ESCAPED = re.compile(r"Traceback \(most recent call last\):(?:\\r)?\\n")


def plain_text(text: str, fields: dict[str, Any] | None = None) -> str:
    """One log event's text (and the fields its JSON line carried) in the interpreter's plain
    format: launcher prefixes stripped, JSON fields and escaped tracebacks unfolded, ``rich``
    boxes redrawn as ``File "...", line N`` frames, native check failures as exception lines."""
    text = strip_launcher_prefixes(text)
    parts = [text]
    stripped = text.lstrip()
    boxed = "─ Traceback (most recent call last) ─" in text or "- Traceback (most recent call last) -" in text
    if (stripped.startswith("{") or '{"' in text) and not boxed:
        found = json_texts(text)
        if found is not None:
            parts = found
    if fields:
        parts += [t for t in _strings_in(fields) if _looks_like_an_error(t)]
    out = []
    for part in parts:
        if "\\n" in part and _ESCAPED.search(part):
            part = unescape_traceback(part)
        if "─ Traceback (most recent call last) ─" in part or "- Traceback (most recent call last) -" in part:
            part = unbox_rich(part)
        if "Check failed" in part or "terminate called after throwing" in part or "what():" in part:
            part = native_failures(part)
        out.append(part)
    return "\n".join(out)


# ── JSON log lines ───────────────────────────────────────────────────────────
#: how long the prefix before a JSON log line's object may be (a timestamp, a level, a pod name)
_JSON_PREFIX = 80
_PREFIX_OK = re.compile(r"^[\w\s:.,/\[\]|=+-]*$")


def json_texts(text: str) -> list[str] | None:
    """The human text of the JSON objects in ``text`` (one per line, possibly after a prefix):
    each object's message, then the exception text its fields carry (unescaped by the JSON
    decoder). None when no line holds a JSON object."""
    decoder = json.JSONDecoder()
    out: list[str] = []
    found = False
    for line in text.splitlines():
        start = line.find("{")
        body = line.rstrip()
        if start < 0 or start > _JSON_PREFIX or not _PREFIX_OK.match(line[:start]):
            out.append(line)
            continue
        try:
            obj, end = decoder.raw_decode(body, start)
        except ValueError:
            out.append(line)
            continue
        if not isinstance(obj, dict) or end != len(body):  # a dict inside code or prose is not a log line
            out.append(line)
            continue
        found = True
        message = next((obj[k] for k in _MESSAGE_KEYS if isinstance(obj.get(k), str)), None)
        if message:
            out.append(message)
        for value in _strings_in(obj):
            if value != message and _looks_like_an_error(value):
                out.append(value)
    return out if found else None


def _strings_in(obj: Any, depth: int = 0) -> Iterator[str]:
    """The string values of a JSON object that may hold an exception, the exception keys first;
    loguru's ``{"type": ..., "value": ...}`` becomes ``type: value``."""
    if depth > 4:
        return
    if isinstance(obj, dict):
        if isinstance(obj.get("type"), str) and isinstance(obj.get("value"), str):
            yield f"{obj['type']}: {obj['value']}"
        keys = sorted(obj, key=lambda k: (str(k).lower() not in _EXCEPTION_KEYS, str(k)))
        for key in keys:
            value = obj[key]
            if isinstance(value, str):
                yield value
            elif isinstance(value, (dict, list)):
                yield from _strings_in(value, depth + 1)
    elif isinstance(obj, list):
        if obj and all(isinstance(item, dict) and "exc_type" in item for item in obj[:20]):
            yield dict_traceback(obj)
            return
        for item in obj[:50]:
            yield from _strings_in(item, depth + 1)


def dict_traceback(stacks: list[dict[str, Any]]) -> str:
    """structlog's ``dict_tracebacks`` (rich's traceback as data: the raised exception first, then
    each cause, ``is_cause`` on the one whose relation is "direct cause") in the interpreter's
    format, innermost first with its frames: before, its ``exc_type`` and ``exc_value`` were two
    strings that named no exception, and the chain it logged was not read at all."""
    parts: list[str] = []
    inner: dict[str, Any] | None = None  # the exception printed just before (the one this one wraps)
    for stack in reversed(stacks[:20]):
        if inner is not None:
            parts.append(_CAUSE if inner.get("is_cause") else _CONTEXT)
        inner = stack
        lines = ["Traceback (most recent call last):"]
        for frame in (stack.get("frames") or [])[-100:]:
            if isinstance(frame, dict):
                lines.append(f'  File "{frame.get("filename")}", line {frame.get("lineno")}, in {frame.get("name")}')
        value = str(stack.get("exc_value") or "")
        lines.append(f"{stack.get('exc_type')}: {value}" if value else str(stack.get("exc_type")))
        parts.append("\n".join(lines))
    return "\n".join(parts)


_CAUSE = "\nThe above exception was the direct cause of the following exception:\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n"


def _looks_like_an_error(value: str) -> bool:
    return _HEADER in value or bool(re.search(r"\b[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b\S*:", value[:2000]))


def unescape_traceback(text: str) -> str:
    """A traceback escaped inside a quoted string (``'Traceback (most recent call last):\\n  File
    \\"x.py\\"...'``) with its newlines and quotes restored."""
    return (
        text.replace("\\r\\n", "\n").replace("\\n", "\n").replace('\\"', '"').replace("\\'", "'").replace("\\\\", "\\")
    )


# ── rich's boxes ─────────────────────────────────────────────────────────────
_BOX_TOP = re.compile(r"^\s*[╭+][─-]+ Traceback \(most recent call last\) [─-]+[╮+]\s*$")
_BOX_BOTTOM = re.compile(r"^\s*[╰+][─-]+[╯+]\s*$")
_BOX_LINE = re.compile(r"^\s*[│|] ?(?P<inner>.*?)\s*[│|]?\s*$")
#: ``/path/file.py:346 in loads`` (a file it could read) or ``in f:10`` (one it could not)
_RICH_FRAME = re.compile(r"^(?P<file>\S.*?\.pyx?|<[^>]+>):(?P<line>\d+) in (?P<function>\S+)$")
_RICH_SHORT_FRAME = re.compile(r"^in (?P<function>\S+?):(?P<line>\d+)$")
_RICH_CODE = re.compile(r"^(?:❱|>)\s*(?P<line>\d+)\s*[│|]\s?(?P<code>.*)$")
#: a compiled (Cython) function's name, dotted from its package: ``pandas._libs.index.IndexEngine.get_loc``
#: (a Python function's name is never dotted)
_COMPILED_FUNCTION = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")


def _compiled_source(function: str) -> str:
    """The Cython source a compiled function's dotted name comes from, as Cython records it in
    a frame (``pandas._libs.index.IndexEngine.get_loc`` → ``pandas/_libs/index.pyx``: the
    module is the name up to its first class, or all but the function): rich names no file for
    such a frame (there is none on disk), and without one the frame read as the workload's own."""
    parts = function.split(".")
    module = next((parts[:i] for i in range(1, len(parts)) if parts[i][:1].isupper()), parts[:-1])
    return "/".join(module) + ".pyx"


def unbox_rich(text: str) -> str:
    """``rich``'s traceback boxes as the interpreter prints them: the box's top line becomes the
    header, each ``path:line in function`` a ``File`` frame with the code of its ``❱`` line;
    the exception line under the box and the chain markers between boxes are kept as they are."""
    out: list[str] = []
    inside = False
    pending: list[str] = []  # the frame being built: its File line, then its code line
    for line in text.splitlines():
        if not inside and _BOX_TOP.match(line):
            inside = True
            out.append("Traceback (most recent call last):")
            continue
        if inside:
            if _BOX_BOTTOM.match(line):
                out += pending
                pending = []
                inside = False
                continue
            m = _BOX_LINE.match(line)
            inner = (m["inner"] if m else line).strip()
            frame = _RICH_FRAME.match(inner)
            short = _RICH_SHORT_FRAME.match(inner) if frame is None else None
            if frame or short:
                out += pending
                f = frame or short
                assert f is not None
                path = f.groupdict().get("file") or (
                    _compiled_source(f["function"]) if _COMPILED_FUNCTION.match(f["function"]) else "<unknown>"
                )
                pending = [f'  File "{path}", line {f["line"]}, in {f["function"]}']
                continue
            code = _RICH_CODE.match(inner)
            if code and len(pending) == 1:
                pending.append("    " + code["code"].replace("│", " ").strip())
            continue
        out.append(line)
    out += pending
    return "\n".join(out)


# ── native failures before SIGABRT ───────────────────────────────────────────
#: glog's fatal line: ``F0105 12:34:56.789012  1234 gpu_device.cc:123] Check failed: ...``
_GLOG_FATAL = re.compile(r"^\s*F\d{4} [\d:.]+\s+\d+ (?P<file>[\w./-]+):(?P<line>\d+)\] (?P<message>.+)$")
#: a C++ exception nobody caught: ``terminate called after throwing an instance of 'c10::Error'``
_TERMINATE = re.compile(r"terminate called after throwing an instance of '(?P<type>[^']+)'")
_WHAT = re.compile(r"^\s*what\(\):\s*(?P<message>.*)$")
#: the library a native namespace or source file belongs to
NATIVE_LIBRARIES = (
    (re.compile(r"\bc10::|\bat::|\btorch::|caffe2|aten/|c10/"), "torch"),
    (re.compile(r"\btensorflow::|\btsl::|\bxla::|tensorflow/|xla/"), "tensorflow"),
    (re.compile(r"\bxgboost::|\bdmlc::|xgboost/|dmlc-core/"), "xgboost"),
    (re.compile(r"\bLightGBM::|lightgbm/"), "lightgbm"),
    (re.compile(r"\bpybind11::"), "pybind11"),
    (re.compile(r"\bnccl|nccl\w*\.cc"), "nccl"),
    (re.compile(r"\barrow::|arrow/"), "pyarrow"),
)


def native_library(text: str) -> str | None:
    for pattern, library in NATIVE_LIBRARIES:
        if pattern.search(text):
            return library
    return None


def native_failures(text: str) -> str:
    """A native library's last words as exception lines the chain reader takes: glog's
    ``F… file.cc:N] Check failed: x`` becomes ``NativeCheckFailure: file.cc:N Check failed: x``;
    ``terminate called after throwing an instance of 'c10::Error'`` with its ``what():`` becomes
    ``c10::Error: <what>``. The original lines stay (the line rules read them too)."""
    lines = text.splitlines()
    out: list[str] = []
    thrown: str | None = None
    for line in lines:
        out.append(line)
        g = _GLOG_FATAL.match(line)
        if g and ("Check failed" in g["message"] or "check failed" in g["message"].lower()):
            out.append(f"NativeCheckFailure: {g['file']}:{g['line']} {g['message'].strip()}")
            continue
        t = _TERMINATE.search(line)
        if t:
            thrown = t["type"]
            continue
        w = _WHAT.match(line)
        if w and thrown:
            out.append(f"{_native_type(thrown)}: {w['message'].strip()}")
            thrown = None
    if thrown:
        out.append(f"{_native_type(thrown)}: (no message)")
    return "\n".join(out)


def _native_type(name: str) -> str:
    """A C++ type as a dotted exception name the chain reader accepts: ``c10::Error`` →
    ``c10.Error``, ``std::runtime_error`` → ``std.RuntimeError``, ``std::bad_alloc`` →
    ``std.BadAllocError``."""
    parts = [p for p in re.split(r"::|\.", name) if p] or ["NativeError"]
    last = parts[-1]
    if "_" in last or last[:1].islower():
        last = "".join(w[:1].upper() + w[1:] for w in last.split("_") if w)
    if not re.search(r"(?:Error|Exception|Failure)$", last):
        last += "Error"
    return ".".join([*parts[:-1], last])
