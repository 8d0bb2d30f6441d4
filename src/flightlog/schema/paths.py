"""An artifact's path under its run: the rule every path into a store passes.

Here, at the bottom, because the schema checks it on every ``artifact`` record (server ingest,
``flightlog sync``) and the artifact stores and the server's routes check it on the paths they
are given: one rule, one message."""

from __future__ import annotations

import re

from flightlog.errors import InvalidInput

__all__ = ["check_artifact_path"]

_DRIVE = re.compile(r"^[A-Za-z]:")


def check_artifact_path(path: str) -> str:
    """An artifact's name under its run: relative, no ``..``, no empty or ``.`` parts, no control characters."""
    problem = None
    if not path or len(path) > 1024:
        problem = "must have 1 to 1024 characters"
    elif any(ord(c) < 32 or ord(c) == 127 for c in path):
        problem = "contains control characters"
    elif "\\" in path:
        problem = "contains a backslash: use '/' between directories"
    elif path.startswith("/") or _DRIVE.match(path):
        problem = "is absolute: name it relative to the run"
    elif any(part in ("", ".", "..") for part in path.split("/")):
        problem = "has an empty, '.' or '..' part: artifact paths cannot leave their run"
    if problem:
        raise InvalidInput(f"artifact path {path[:200]!r} {problem}", details={"path": path[:1024]})
    return path
