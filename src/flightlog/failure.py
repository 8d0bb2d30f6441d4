"""Failure summaries: the exception type, its message and the innermost frames, from a live
exception (SDK) or from traceback text captured in a workload's output (runner)."""

from __future__ import annotations

import re
import traceback
from typing import Any

__all__ = ["failure_from_exception", "parse_python_traceback", "MAX_FRAMES"]

MAX_FRAMES = 10
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>.+)$')
_EXC_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning|Fault|[A-Z]\w*))(?::\s?(?P<message>.*))?$")


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
    return {
        "exception": exc_type,
        "message": message[:4000],
        "frames": frames[-MAX_FRAMES:],
        "traceback": text[-20000:],
    }
