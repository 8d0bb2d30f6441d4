"""Owner-only files and directories for what flightlog keeps on disk.

A store holds what a credential store holds: params and command lines (redacted, but not every
secret has a pattern), logs, artifacts, API token hashes and session ids. So everything it makes
is owner-only, whatever the umask (022 would make it world-readable): directories 0700, files
0600. Directories and files that already exist keep their mode: the user chose it (a team's
shared FLIGHTLOG_HOME, say). SQLite's -wal and -shm files take the mode of their database, so
the database is created here, owner-only, before SQLite opens it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "private_dirs", "create_private"]

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_dirs(path: str | os.PathLike[str]) -> Path:
    """``path`` and its missing parents, each one made here 0700; returns ``path``."""
    target = Path(path)
    missing = []
    at = target
    while not at.exists() and at != at.parent:
        missing.append(at)
        at = at.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR)
        except FileExistsError:  # made meanwhile by another process: its mode stands
            pass
    if not target.is_dir():
        raise NotADirectoryError(f"{target} is not a directory")
    return target


def create_private(path: str | os.PathLike[str]) -> bool:
    """Create ``path`` as an empty 0600 file unless it exists; True when made here."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return False
    os.close(fd)
    return True
