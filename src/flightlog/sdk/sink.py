"""Where the shipper sends journal records: the embedded store, or a server over HTTP.

One sink per destination per process, shared by every run of the process: opening and
closing a SQLite connection per run costs milliseconds (closing the last connection
checkpoints the WAL), which a process creating thousands of runs would feel.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast

from flightlog.config import Settings
from flightlog.forksafe import no_fork
from flightlog.store.base import IngestResult

__all__ = ["Sink", "open_sink", "close_sinks", "load_sink_code", "check_server", "journal_only"]


class Sink(Protocol):
    def ingest(self, records: Sequence[dict[str, Any]]) -> IngestResult: ...
    def close(self) -> None: ...


_sinks: dict[tuple[str, str | None], Sink] = {}
_inherited: list[Sink] = []  # in a forked child: its parent's sinks, never used, never closed
_lock = threading.Lock()


def open_sink(settings: Settings) -> Sink:
    key = (settings.url or settings.store_uri, settings.token)
    with _lock:
        sink = _sinks.get(key)
        if sink is None:
            sink = _sinks[key] = _build(settings)
        return sink


def check_server(settings: Settings, project: str) -> str | None:
    """Before a new run starts against a server: raise :class:`~flightlog.errors.Forbidden` when
    the token cannot write ``project`` (the caller's mistake, to see at once, not after the job);
    when the server cannot be reached or does not know the token, the sink is journal-only from
    now on and the warning to print is returned. Only a remote sink asks."""
    sink = open_sink(settings)
    check = getattr(sink, "check_write", None)
    if check is None or not check(project):
        return None
    take = getattr(sink, "take_notice", None)
    return take() if take is not None else None


def journal_only(settings: Settings) -> bool:
    """Whether this process's sink for ``settings`` keeps to the journal (see transport.sink)."""
    with _lock:
        sink = _sinks.get((settings.url or settings.store_uri, settings.token))
    return bool(getattr(sink, "journal_only", False))


def close_sinks() -> None:
    """Close every sink of this process (at exit, once the runs' last records are shipped)."""
    with _lock:
        sinks = list(_sinks.values())
        _sinks.clear()
    for sink in sinks:
        try:
            sink.close()
        except Exception:
            pass


def _build(settings: Settings) -> Sink:
    with no_fork():  # the shipper thread loads this code while the workload may be forking
        open_with = load_sink_code(settings)
    return open_with(settings)


def load_sink_code(settings: Settings) -> Callable[[Settings], Sink]:
    """The code that opens the sink for ``settings``, imported in full (its driver or HTTP client,
    and the codec ``getaddrinfo`` imports on its first host name); nothing connects yet."""
    import encodings.idna  # noqa: F401

    if settings.url:
        from flightlog.transport import open_remote_sink  # type: ignore[import-not-found,unused-ignore]

        def open_remote(s: Settings) -> Sink:
            with no_fork():  # local work, it connects later: its SSL context holds OpenSSL's locks while it loads
                return cast(Sink, open_remote_sink(s))

        return open_remote
    from flightlog.store.registry import load_opener

    open_store = load_opener(settings.store_uri, fork_safe=True)  # the shipper's thread uses it
    return lambda s: open_store(s.store_uri)


def _forget_after_fork() -> None:
    global _lock
    _lock = threading.Lock()
    # a child must not share its parent's connections, nor close them: closing one takes locks
    # (an HTTP pool's, SQLite's) that the parent's shipper may have held at the fork
    _inherited.extend(_sinks.values())
    _sinks.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
