"""Stores chosen by URI scheme: ``sqlite:///path/flightlog.db`` (``?mode=ro``: read-only, never
created nor migrated), ``postgresql://user:password@host:5432/db`` (a shared PostgreSQL
database), and ``http(s)://server`` (a flightlog server's API), which the transport registers
itself when it is imported (`flightlog.transport`; ``flightlog.Client`` imports it): the store,
below the transport, never names it.

No ``if backend == ...`` anywhere else: callers ask :func:`open_store` and get a :class:`Store`.
Each scheme registers a *loader*: it imports the backend's code (its driver included) and returns
the function that opens a store from a URI. Loading and opening are two steps so that a caller
can load with nothing on the network yet, e.g. where a fork must not split an import
(:mod:`flightlog.forksafe`).

``fork_safe``: the store will be used from a background thread of a process that may fork (the
SDK's shipper). The embedded store then keeps its SQLite calls out of a fork's way (see
``store/sqlite/connection.py``); the network stores have nothing to keep: a thread of theirs
waits on a socket, and a fork must not wait for the network.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qsl, urlparse

from flightlog.errors import InvalidInput
from flightlog.store.base import Store

__all__ = ["Loader", "Opener", "register", "open_store", "load_opener", "schemes"]

Opener = Callable[[str], Store]

Loader = Callable[[bool], Opener]  # fork_safe → the opener

_LOADERS: dict[str, Loader] = {}


def register(scheme: str, load: Loader) -> None:
    _LOADERS[scheme] = load


def schemes() -> list[str]:
    return sorted(_LOADERS)


def load_opener(uri: str, *, fork_safe: bool = False) -> Opener:
    """The function that opens ``uri``'s store, its backend's code imported; nothing connects yet."""
    load = _LOADERS.get(urlparse(uri).scheme)
    if load is None:
        raise InvalidInput(
            f"unsupported store URI {uri!r}: the scheme must be one of {', '.join(schemes())}",
            details={"uri": uri},
        )
    return load(fork_safe)


def open_store(uri: str) -> Store:
    return load_opener(uri)(uri)


def _sqlite(fork_safe: bool) -> Opener:
    from flightlog.store.sqlite.store import SqliteStore

    def open_sqlite(uri: str) -> Store:
        path = uri[len("sqlite:///") :] if uri.startswith("sqlite:///") else ""
        path, _, query = path.partition("?")
        options = dict(parse_qsl(query, keep_blank_values=True))
        mode = options.pop("mode", "rw")
        if options or mode not in ("rw", "ro"):
            raise InvalidInput(
                f"store URI {uri!r}: the only option is mode=ro (open the file read-only), got {query!r}"
            )
        if not path:
            raise InvalidInput(
                f"store URI {uri!r} names no file: write sqlite:/// then the path, "
                "e.g. sqlite:////srv/flightlog/flightlog.db for an absolute path"
            )
        return SqliteStore(path, fork_safe=fork_safe, read_only=mode == "ro")

    return open_sqlite


register("sqlite", _sqlite)


def _postgres(fork_safe: bool) -> Opener:
    try:
        import psycopg  # noqa: F401 - the driver is part of the code a load brings (the store imports it when it connects)
        import psycopg_pool  # noqa: F401

        from flightlog.store.postgres.store import PostgresStore
    except ImportError as exc:
        raise InvalidInput(
            f"a PostgreSQL store needs psycopg 3 and psycopg-pool ({exc}): pip install 'flightlog[postgres]'"
        ) from None
    return PostgresStore


register("postgresql", _postgres)
register("postgres", _postgres)
