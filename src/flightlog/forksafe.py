"""Work that a fork must not split in two.

A thread importing a module holds that module's import lock. ``os.fork()`` copies the lock into
the child as it is (taken) but not the thread that took it, so the child's first import of that
module waits forever. The SDK's background threads load code after ``init()`` has returned (the
shipper loads its store driver or HTTP client on its first flush), which is exactly when training
code forks its data-loader workers: a child forked then, that records on the run, hung. C
libraries keep such locks too: SQLite's process-wide mutexes and its record of the locks this
process holds on a file, OpenSSL's while an SSL context loads its certificates.

Work done under :func:`no_fork` makes an ``os.fork()`` in another thread wait until it is over:
imports, the journal's appends, the shipper's SQLite transactions (``store/sqlite/connection.py``)
and the making of its HTTP client. Never a wait for another process or the network: a fork waits
for this process's own work, not for a server that is down or another process's write lock.
"""

from __future__ import annotations

import logging  # noqa: F401 - before the hook below: see _before_fork
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["no_fork"]

_lock = threading.RLock()  # reentrant: a thread that forks while loading (an import that forks) does not wait on itself


@contextmanager
def no_fork() -> Iterator[None]:
    with _lock:
        yield


def _before_fork() -> None:
    # Hooks run newest first, so this runs before logging's, which takes the logging lock: a
    # guarded import that creates a logger (psycopg's do) finishes before the fork takes that lock.
    _lock.acquire()


def _after_fork_in_parent() -> None:
    _lock.release()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.RLock()  # the parent's is held by the forking thread's copy; start free


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)
