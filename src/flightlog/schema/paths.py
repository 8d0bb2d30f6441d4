"""An artifact's path under its run: the rule every path into a store passes.

Here, at the bottom, because the schema checks it on every ``artifact`` record (server ingest,
``flightlog sync``) and the artifact stores and the server's routes check it on the paths they
are given: one rule, one message."""

from __future__ import annotations

import re

from flightlog.errors import InvalidInput
from flightlog.names import control_character

__all__ = ["check_artifact_path"]

_DRIVE = re.compile(r"^[A-Za-z]:")


def check_artifact_path(path: str) -> str:
    """An artifact's name under its run: relative, no ``..``, no empty or ``.`` parts, no backslash
    or drive, none of the characters no name may hold (`flightlog.names`: control characters, C1
    and DEL among them, bidi controls)."""
    problem = None
    if not path or len(path) > 1024:
        problem = "must have 1 to 1024 characters"
    elif (bad := control_character(path)) is not None:
        problem = f"contains control characters: {bad[0]} at position {bad[1]} (no escape codes, no bidi controls)"
    elif "\\" in path:
        problem = "contains a backslash: use '/' between directories"
    elif path.startswith("/") or _DRIVE.match(path):
        problem = "is absolute: name it relative to the run"
    elif any(part in ("", ".", "..") for part in path.split("/")):
        problem = "has an empty, '.' or '..' part: artifact paths cannot leave their run"
    elif any(_DRIVE.match(part) for part in path.split("/")):
        problem = "has a part that starts with a drive (C:): on Windows it names another place"
    if problem:
        raise InvalidInput(f"artifact path {path[:200]!r} {problem}", details={"path": path[:1024]})
    return path
