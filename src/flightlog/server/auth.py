"""Who is asking: a bearer token, or the web UI's session cookie, checked against the store.

Roles are ordered (reader < writer < admin) and a token may be limited to one project.
A missing, unknown or revoked token is 401; a valid token without the role or the project
is 403. Without ``--auth`` the server only listens on loopback and everyone is an admin.

A bearer token's row is remembered for up to ``TOKEN_CACHE_S`` (one second) per store, so that a
writer sending several batches a second costs the store one lookup a second, not one a request;
a token revoked through this server (or this process's store) is refused at once, one revoked
through another replica of a team's servers within that second. When the remembered row runs
out, the requests that arrive while it is looked up again wait for that one lookup instead of
each making its own: under a few hundred requests a second, a lookup that waits its turn for a
worker thread and a connection otherwise became dozens (bench/load.py, issue #32).

The session cookie holds a random session id, never the API token: the store keeps only its
SHA-256, with the token it was made from and when it expires (``--session-hours``, 12 by
default). Signing out deletes the session; revoking the token ends all of its sessions. The
cookie is HttpOnly (scripts in a page cannot read it) and SameSite=Strict (other sites cannot
make the browser send it); a state-changing request that carries it must also come from the
server's own origin when the browser says where it comes from (the Host header: a proxy's
X-Forwarded-Host counts only from a trusted proxy, see hosts.py).
"""

from __future__ import annotations

import asyncio
import secrets
import time
import weakref
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import anyio.to_thread
from starlette.requests import HTTPConnection

from flightlog.errors import Forbidden, Unauthorized
from flightlog.server.tokens import RANK, hash_token

__all__ = ["Principal", "OPEN", "COOKIE", "authenticate", "TOUCH_EVERY", "new_session"]

COOKIE = "flightlog_session"
TOUCH_EVERY = 60.0  # seconds between last_used updates of one token
TOKEN_CACHE_S = 1.0  # seconds a token's row is reused (see the module doc)
_CACHE_MAX = 10_000
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
_NEEDS = {"reader": "read", "writer": "write", "admin": "administer"}


@dataclass(frozen=True)
class Principal:
    role: str
    project: str | None = None
    token_id: str | None = None
    via: str = "open"  # open | token | cookie

    def require(self, role: str) -> None:
        if RANK[self.role] < RANK[role]:
            raise Forbidden(
                f"this token has the role {self.role!r}, which cannot {_NEEDS[role]} here: it needs {role!r} or above",
                details={"role": self.role, "needed": role},
            )

    def allows(self, project: str | None) -> bool:
        return self.project is None or project == self.project

    def check_project(self, project: str | None) -> None:
        if not self.allows(project):
            raise Forbidden(
                f"this token is limited to project {self.project!r}; this belongs to project {project!r}",
                details={"project": self.project},
            )

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "project": self.project, "token_id": self.token_id, "via": self.via}


OPEN = Principal("admin")


def _presented(conn: HTTPConnection) -> tuple[str | None, str]:
    header = conn.headers.get("authorization")
    if header is not None:
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized("send the token as `Authorization: Bearer TOKEN`")
        return value.strip(), "token"
    cookie = conn.cookies.get(COOKIE)
    if cookie:
        return cookie, "cookie"
    return None, "none"


async def authenticate(conn: HTTPConnection, store: Any, *, enabled: bool) -> Principal:
    if not enabled:
        return OPEN
    token, via = _presented(conn)
    if token is None:
        raise Unauthorized(
            "this server needs a token: send `Authorization: Bearer TOKEN` "
            "(FLIGHTLOG_TOKEN for the SDK and CLI; `flightlog token create` makes one)",
            details={"reason": "no_token"},  # a protocol's own words for it (MLflow's: MLFLOW_TRACKING_TOKEN)
        )
    if len(token) > 512:
        raise Unauthorized("the token is not valid")
    now = time.time()
    if via == "cookie":
        row = await anyio.to_thread.run_sync(store.session_by_hash, hash_token(token))
        if row is None or row["expires"] < now:
            raise Unauthorized("the session has ended (signed out, expired, or from before an upgrade): sign in again")
    else:
        row = await _token_row(store, hash_token(token), now)
    if row is None:
        raise Unauthorized("the token is not valid (unknown, mistyped, or from another server)")
    if row["revoked"] is not None:
        raise Unauthorized(f"the token {row['id']} was revoked: ask an admin for a new one")
    if via == "cookie" and conn.scope.get("method", "GET") not in _SAFE:
        _same_origin(conn)
    if row["last_used"] is None or now - row["last_used"] > TOUCH_EVERY:
        row["last_used"] = now  # (the cached row too: one touch per TOUCH_EVERY)
        try:
            await anyio.to_thread.run_sync(store.touch_token, row["id"], now)
        except Exception:  # noqa: BLE001 - bookkeeping must never refuse a request
            pass
    return Principal(row["role"], row["project"], row["id"], via)


_cache: weakref.WeakKeyDictionary[Any, dict[str, tuple[dict[str, Any], float, int]]] = weakref.WeakKeyDictionary()
#: per store: the lookup of a token's row now under way (its loop, the store's auth_changes when
#: it began, and the task), which the requests arriving meanwhile await instead of looking again
_lookups: weakref.WeakKeyDictionary[Any, dict[str, tuple[Any, int, asyncio.Task[Any]]]] = weakref.WeakKeyDictionary()


async def _token_row(store: Any, digest: str, now: float) -> dict[str, Any] | None:
    """The token's row, from the store at most once a ``TOKEN_CACHE_S`` (see the module doc);
    a store that says its tokens changed (``auth_changes``, bumped by a revocation) is asked again."""
    changes = getattr(store, "auth_changes", 0)
    try:
        entries = _cache.setdefault(store, {})
    except TypeError:  # a store that cannot be weakly referenced: no caching
        return await anyio.to_thread.run_sync(store.token_by_hash, digest)
    hit = entries.get(digest)
    if hit is not None and hit[2] == changes and 0 <= now - hit[1] < TOKEN_CACHE_S:
        return hit[0]
    loop = asyncio.get_running_loop()
    lookups = _lookups.setdefault(store, {})
    pending = lookups.get(digest)
    if pending is None or pending[0] is not loop or pending[1] != changes or pending[2].done():
        task = loop.create_task(_look_up(store, digest, now, changes, entries))
        lookups[digest] = pending = (loop, changes, task)
        task.add_done_callback(lambda done: _forget(lookups, digest, done))
    return await asyncio.shield(pending[2])  # a waiter that gives up does not cancel the others' lookup


async def _look_up(
    store: Any, digest: str, now: float, changes: int, entries: dict[str, tuple[dict[str, Any], float, int]]
) -> dict[str, Any] | None:
    row = await anyio.to_thread.run_sync(store.token_by_hash, digest)
    if row is not None:
        if len(entries) >= _CACHE_MAX:
            entries.clear()
        entries[digest] = (row, now, changes)
    return row


def _forget(lookups: dict[str, tuple[Any, int, asyncio.Task[Any]]], digest: str, done: asyncio.Task[Any]) -> None:
    if digest in lookups and lookups[digest][2] is done:
        del lookups[digest]
    if not done.cancelled():
        done.exception()  # retrieved: a failed lookup is each waiter's error, never "never retrieved"


def new_session() -> tuple[str, str]:
    """A fresh session id for the cookie, and the SHA-256 the store keeps of it."""
    session = f"fls_{secrets.token_urlsafe(32)}"
    return session, hash_token(session)


def _same_origin(conn: HTTPConnection) -> None:
    origin = conn.headers.get("origin")
    if origin is None or origin == "null":
        if origin == "null":
            raise Forbidden("a request from an opaque origin cannot use the session cookie")
        return
    host = conn.headers.get("host") or ""  # a trusted proxy's X-Forwarded-Host is already here (hosts.py)
    if urlparse(origin).netloc.lower() != host.lower():
        raise Forbidden(f"a request from {origin} cannot use this server's session cookie")
