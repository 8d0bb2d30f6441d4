"""Can this token write runs of this project? Asked of the server once, before a run starts.

A token the server knows but that cannot write the project (a reader token, a writer token
limited to another project) is a configuration mistake the user must see at
``init()``, as W&B raises at ``wandb.init`` on an auth error: found only by the first
shipment, it would let the whole job run and end with records nobody can ship. The server
says who the token is (``GET /whoami``: role and project); the rules compared here are the
server's own (``server/auth.py``: ingest needs the role ``writer``, a project-limited token
writes only its project), and the server still enforces them on every batch.
"""

from __future__ import annotations

from typing import Any

from flightlog.errors import FlightlogError, Forbidden
from flightlog.transport.connection import Connection

__all__ = ["check_write_access"]

_WRITERS = ("writer", "admin")


def check_write_access(http: Connection, project: str) -> None:
    """Raise :class:`Forbidden`, with the fix, when the server knows the token and it may not
    write runs of ``project``; :class:`Unauthorized` when the server does not know the token
    (the caller keeps the run in its journal: a server restored from a backup, a token not yet
    made there); :class:`StoreUnavailable` when the server cannot be reached.

    A server too old to answer ``/whoami`` (404) is let through: its ingest still decides."""
    try:
        who: Any = http.json("GET", "/whoami", retries=0)
    except FlightlogError as exc:
        if exc.http_status == 404:
            return
        raise
    if not isinstance(who, dict):
        return
    role, scope, token_id = who.get("role"), who.get("project"), who.get("token_id")
    token = f"token {token_id}" if token_id else "this token"
    how = (
        f"use a writer token for {project!r} (`flightlog token create --role writer --project {project}`)"
        ", or set FLIGHTLOG_MODE=offline to keep the run in the local journal only"
    )
    details = {"url": http.url, "project": project, "role": role, "token_project": scope, "token_id": token_id}
    if role not in _WRITERS:
        raise Forbidden(
            f"the server at {http.url} will not take runs from {token}: its role is {role!r}, "
            f"which can only read; nothing was recorded. To record into project {project!r}, {how}",
            details=details,
        )
    if scope is not None and scope != project:
        raise Forbidden(
            f"the server at {http.url} will not take runs of project {project!r} from {token}: "
            f"it is a {role} token limited to project {scope!r}; nothing was recorded. "
            f"Record into {scope!r}, or {how}",
            details=details,
        )
