"""Cross-site request forgery: a write from another origin is refused on every route.

A page on another origin (another site, or another port of this machine) can make the browser
send a "simple" request — a POST with a ``text/plain``, form or multipart body, or none — with
no preflight, and the browser does not ask the server first. On a server without ``--auth``
that request needs no credential at all, so it would delete an experiment or plant a model
(issue 31, item 3). Two rules close it, on every route that changes something:

* the body of a JSON route must say ``Content-Type: application/json``, which no simple request
  can (the browser preflights it, and this server answers no preflight): 415 otherwise
  (`flightlog.server.context.Ctx.json`, and the MLflow routes' own reader);
* a request that says where it comes from (``Origin``, which browsers send on every POST, PUT,
  PATCH and DELETE, or ``Sec-Fetch-Site: cross-site``) must come from this server's own origin,
  the ``Host`` it was sent to (a trusted proxy's ``X-Forwarded-Host`` is that Host already,
  hosts.py): 403 ``cross_origin`` otherwise. Clients that are not browsers send neither header.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from flightlog.errors import Forbidden

__all__ = ["CrossOrigin", "SAFE_METHODS", "check_same_origin"]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class CrossOrigin(Forbidden):
    code = "cross_origin"


def check_same_origin(conn: HTTPConnection) -> None:
    """Refuse a write that a browser sent from another origin (module doc); reads pass."""
    if conn.scope.get("method", "GET") in SAFE_METHODS:
        return
    host = (conn.headers.get("host") or "").strip().lower()
    origin = conn.headers.get("origin")
    site = (conn.headers.get("sec-fetch-site") or "").strip().lower()
    if origin is not None:
        origin = origin.strip()
        netloc = "" if origin.lower() == "null" else urlsplit(origin).netloc.lower()
        if not netloc or netloc != host:
            raise CrossOrigin(
                f"a request from {origin[:200]!r} cannot change anything on this server: writes are taken "
                f"from this server's own pages ({host or 'its address'}) and from clients that are not browsers",
                details={"origin": origin[:200], "host": host},
            )
    if site == "cross-site":
        raise CrossOrigin(
            "a request another site made the browser send cannot change anything on this server",
            details={"sec_fetch_site": site},
        )
