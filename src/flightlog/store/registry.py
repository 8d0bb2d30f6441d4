"""Stores chosen by URI scheme: ``sqlite:///path/flightlog.db``, ``http(s)://server`` (a flightlog
server's API), ``postgresql://user:password@host:5432/db`` (a shared PostgreSQL database).

No ``if backend == ...`` anywhere else: callers ask :func:`open_store` and get a :class:`Store`.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlparse

from flightlog.errors import InvalidInput
from flightlog.store.base import Store

__all__ = ["register", "open_store", "schemes"]

_BUILDERS: dict[str, Callable[[str], Store]] = {}


def register(scheme: str, builder: Callable[[str], Store]) -> None:
    _BUILDERS[scheme] = builder


def schemes() -> list[str]:
    return sorted(_BUILDERS)


def open_store(uri: str) -> Store:
    scheme = urlparse(uri).scheme
    builder = _BUILDERS.get(scheme)
    if builder is None:
        raise InvalidInput(
            f"unsupported store URI {uri!r}: the scheme must be one of {', '.join(schemes())}",
            details={"uri": uri},
        )
    return builder(uri)


def _sqlite(uri: str) -> Store:
    from flightlog.store.sqlite.store import SqliteStore

    path = uri[len("sqlite:///") :] if uri.startswith("sqlite:///") else ""
    if not path:
        raise InvalidInput(
            f"store URI {uri!r} names no file: write sqlite:/// then the path, "
            "e.g. sqlite:////srv/flightlog/flightlog.db for an absolute path"
        )
    return SqliteStore(path)


register("sqlite", _sqlite)


def _http(uri: str) -> Store:
    try:
        from flightlog.transport.http_store import HttpStore
    except ImportError as exc:
        raise InvalidInput(
            f"talking to a flightlog server needs httpx ({exc}): pip install 'flightlog[server]'"
        ) from None
    return HttpStore(uri)


register("http", _http)
register("https", _http)


def _postgres(uri: str) -> Store:
    try:
        from flightlog.store.postgres.store import PostgresStore
    except ImportError as exc:
        raise InvalidInput(
            f"a PostgreSQL store needs psycopg 3 and psycopg-pool ({exc}): pip install 'flightlog[postgres]'"
        ) from None
    return PostgresStore(uri)


register("postgresql", _postgres)
register("postgres", _postgres)
