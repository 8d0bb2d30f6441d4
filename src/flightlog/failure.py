"""Failure summaries: the exception type, its message and the innermost frames, from a live
exception (SDK) or from traceback text captured in a workload's output (runner); and the
order a reader sees them in (:func:`frames_for_display`): the user's own innermost frame first.

A traceback of an ML job ends in the framework (four torch frames around a shape mismatch);
the line the user can change is further up. A frame is the user's when its file is not under
``site-packages`` or ``dist-packages``, not in the standard library (``lib/pythonX.Y``), not a
frozen module (``<frozen …>``), not a compiled library's Cython source (``pyarrow/error.pxi``)
and not flightlog's own package.
"""

from __future__ import annotations

import os
import re
import signal
import sysconfig
import traceback
from typing import Any

__all__ = [
    "failure_from_exception",
    "parse_python_traceback",
    "is_user_frame",
    "frames_for_display",
    "failure_headline",
    "signal_name",
    "untangle_doubled_type",
    "MAX_FRAMES",
    "CYTHON_SOURCE",
]

MAX_FRAMES = 10
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
#: a compiled library's Cython source as Cython records it in its frames: a path relative to the
#: package's root (``pandas/_libs/index.pyx``, ``pyarrow\\table.pxi``, ray's ``python/ray/_raylet.pyx``),
#: never the absolute path of a file of the workload's. ``pkg`` is the package it belongs to
CYTHON_SOURCE = re.compile(r"^(?:python[/\\])?(?P<pkg>[A-Za-z_]\w*)[/\\][\w./\\-]*\.(?:pyx|pxi|pxd)$")
_NOT_USERS = re.compile(r"[/\\](?:site|dist)-packages[/\\]|[/\\]lib[/\\]python\d+(?:\.\d+)?t?[/\\]|^<frozen ")
_LIBRARY_DIRS = tuple(
    os.path.join(os.path.realpath(p), "")
    for p in {
        sysconfig.get_paths().get("stdlib"),
        sysconfig.get_paths().get("platstdlib"),
        os.path.dirname(os.path.abspath(__file__)),
    }
    if p
)
_EXC_LINE = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Fault|[A-Z]\w*))(?::\s?(?P<message>.*))?$"
)


def failure_from_exception(exc: BaseException) -> dict[str, Any]:
    tb = traceback.TracebackException.from_exception(exc, limit=200)
    frames = [
        {"file": f.filename, "line": f.lineno, "function": f.name, "code": (f.line or "").strip()}
        for f in tb.stack[-MAX_FRAMES:]
    ]
    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ in ("builtins", "__main__") else f"{cls.__module__}.{cls.__qualname__}"
    text = "".join(tb.format())
    return {
        "exception": name,
        "message": str(exc)[:4000],
        "frames": frames,
        "traceback": text[-20000:],
    }


def parse_python_traceback(text: str) -> dict[str, Any] | None:
    """The last exception of a Python traceback block (chained ones included), or None."""
    if "Traceback (most recent call last)" not in text:
        return None
    block = text[text.rindex("Traceback (most recent call last)") :]
    frames: list[dict[str, Any]] = []
    lines = block.splitlines()
    exc_type, message = None, ""
    for i, line in enumerate(lines):
        m = _FRAME.match(line)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) and not _FRAME.match(lines[i + 1]) else ""
            frames.append({"file": m["file"], "line": int(m["line"]), "function": m["function"].strip(), "code": code})
            continue
        if line and not line[0].isspace():
            m2 = _EXC_LINE.match(line.strip())
            if m2 and not line.startswith("Traceback"):
                exc_type, message = m2["type"], (m2["message"] or "")
                # a multi-line message continues until the end of the block
                rest = [ln for ln in lines[i + 1 :] if ln.strip()]
                if rest and not any(_FRAME.match(r) for r in rest):
                    message = "\n".join([message, *rest]).strip()
                break
    if exc_type is None:
        return None
    exc_type, message = untangle_doubled_type(exc_type, message)
    return {
        "exception": exc_type,
        "message": message[:4000],
        "frames": frames[-MAX_FRAMES:],
        "traceback": text[-20000:],
    }


#: a type printed twice over itself: two processes (ranks, workers) wrote the same exception
#: line to one stream at once — ``KeyErrorKeyError: : 'input_ids_j'``
_DOUBLED_TYPE = re.compile(
    r"^(?P<name>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Timeout|Failure))(?P=name)$"
)


def untangle_doubled_type(type_name: str, message: str) -> tuple[str, str]:
    """``(type, message)`` of an exception line that two writers interleaved
    (``KeyErrorKeyError`` and ``: 'input_ids_j'``): the type once, the second colon dropped."""
    m = _DOUBLED_TYPE.match(type_name)
    if m is None:
        return type_name, message
    return m["name"], re.sub(r"^\s*:\s*", "", message)


def is_user_frame(file: str | None) -> bool:
    """Whether a frame's file is the user's own code (see the module's text for the rule)."""
    if not file:
        return False
    if _NOT_USERS.search(file) or CYTHON_SOURCE.match(file):
        # a compiled library's frame (``pyarrow/error.pxi``) is no file of the workload's,
        # though its path is relative like a script's (issue 29: "your code" on pyarrow's frames)
        return False
    return not (os.path.isabs(file) and os.path.join(os.path.realpath(file), "").startswith(_LIBRARY_DIRS))


def frames_for_display(frames: list[dict[str, Any]] | None, limit: int = 5) -> list[dict[str, Any]]:
    """The frames a failure card and ``runs show`` list, each with ``user`` set: the user's
    innermost frame first, then the others innermost first (where the error surfaced), at
    most ``limit``. Without a frame of the user's, simply the innermost first."""
    ordered = [{**f, "user": is_user_frame(str(f.get("file") or ""))} for f in reversed(frames or [])]
    mine = next((i for i, f in enumerate(ordered) if f["user"]), None)
    if mine is not None:
        ordered.insert(0, ordered.pop(mine))
    return ordered[:limit]


def failure_headline(
    failure: dict[str, Any], exit_code: int | None, signal_number: int | None, end_reason: str | None
) -> str:
    """One line that says what ended a failed run: its exception and message; or, for a run that
    raised none (an argparse usage error's exit 2, a kill, an OOM kill), how the process ended
    and the last line it printed (``killed by SIGHUP (signal 1); last line: download: 36%|…``).
    Why: ``runs show`` printed ``failure :`` — nothing — for every run that ended without a
    Python exception, though the record holds the ending and the line that says the cause
    (issue 29)."""
    exception = str(failure.get("exception") or "")
    message = str(failure.get("message") or "")
    if exception:
        return f"{exception}: {message}" if message else exception
    oom = failure.get("oom")
    if end_reason == "oom_killed" or (isinstance(oom, dict) and oom.get("oom_kills")):
        ending = "killed at its memory limit (OOM)"
    elif end_reason == "timeout":
        ending = "stopped at its time limit"
    elif signal_number is not None:
        ending = f"killed by {signal_name(signal_number)} (signal {signal_number})"
    elif exit_code is not None:
        ending = f"exit code {exit_code}"
    else:
        ending = "ended without an exception"
    last = _last_line(failure.get("last_lines"))
    return f"{ending}; last line: {last}" if last else ending


def signal_name(number: int) -> str:
    """``SIGHUP`` for 1; ``signal 99`` for a number no signal has (the closing line, the failure
    card and the diagnosis name the signal that ended a run, not "signal")."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_line(lines: Any) -> str:
    """The last non-blank line of a failure's ``last_lines`` (an entry may hold several lines)."""
    for entry in reversed(lines if isinstance(lines, list) else []):
        for line in reversed(str(entry).splitlines()):
            if line.strip():
                return line.strip()
    return ""
