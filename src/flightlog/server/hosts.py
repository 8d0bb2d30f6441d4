"""Which ``Host`` a request may name, and whose ``X-Forwarded-*`` headers are believed.

DNS rebinding: a web page on ``evil.example`` can make its own name resolve to 127.0.0.1, and
the browser then lets the page read a server on this machine as if it were its own origin. The
one thing that gives it away is the ``Host`` header, which still says ``evil.example``. So a
server without tokens (``flightlog ui``, ``flightlog server`` without ``--auth``) answers only
requests that name it by a loopback name (or a name it was told with ``--allowed-hosts``). With
``--auth`` a rebinding page has no token (the session cookie belongs to the real origin, so the
browser never sends it to the attacker's), and any Host is accepted unless ``--allowed-hosts``
says otherwise.

Proxies: ``X-Forwarded-For``, ``-Proto`` and ``-Host`` are believed only from a peer listed in
``--trusted-proxies`` (the connection's own address, never a header); from anyone else they are
dropped before the app sees them, so no client can claim another origin or a secure scheme.

A browser on this machine connects from 127.0.0.1 too, which is where a local proxy sits: a
rebinding page can add ``X-Forwarded-Host: localhost`` to its requests (fetch() may set it).
So the Host guard checks the ``Host`` the connection itself sent as well as the one a trusted
proxy forwarded: both must be names this server answers for. A real proxy sends its upstream's
name (``proxy_set_header Host $host`` of a name in ``--allowed-hosts``, or the loopback address
it connects to); a rebinding page cannot, its Host is its own name.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flightlog.errors import InvalidInput

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

# Host lists are parsed by ServerConfig, which the store-side commands (`flightlog token`) use on
# a plain install: only the ASGI middlewares below need the server extra (starlette), at run time.

__all__ = [
    "LOOPBACK_HOSTS",
    "HostPolicy",
    "TrustedProxies",
    "ForwardedHeaders",
    "HostGuard",
    "default_allowed_hosts",
    "parse_list",
]

LOOPBACK_HOSTS = ("localhost", "*.localhost", "127.0.0.1", "::1")
_FORWARDED = (b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host")
PEER_HOST = "flightlog.peer_host"  # scope key: the Host the connection sent, before a proxy's X-Forwarded-Host
_WILDCARD_BINDS = ("0.0.0.0", "::", "")


class HostNotAllowed(InvalidInput):
    code = "host_not_allowed"


def parse_list(raw: str | Iterable[str] | None, *, what: str) -> tuple[str, ...]:
    """Comma-separated (or repeated) values, trimmed, lowercased, empty ones dropped."""
    if raw is None:
        return ()
    items = raw.split(",") if isinstance(raw, str) else [p for item in raw for p in item.split(",")]
    values = tuple(v.strip().lower() for v in items if v.strip())
    for v in values:
        if any(c.isspace() or c in "/\\@" for c in v) and not _is_network(v):
            raise InvalidInput(f"{what}: {v!r} is not a host name, an address or a network")
    return values


def _is_network(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
        return True
    except ValueError:
        return False


def default_allowed_hosts(*, auth: bool, bind: str) -> tuple[str, ...]:
    """The Host names accepted when ``--allowed-hosts`` is not given.

    With ``--auth``: any (tokens are what protect the server). Without: loopback names, plus
    the address the server listens on, or this machine's names when it listens on every
    address (``--insecure --host 0.0.0.0``).
    """
    if auth:
        return ("*",)
    extra: list[str] = []
    if bind.strip("[]") in _WILDCARD_BINDS:
        extra += [socket.gethostname(), socket.getfqdn()]
    else:
        extra.append(bind.strip("[]"))
    return tuple(dict.fromkeys([*LOOPBACK_HOSTS, *(e.lower() for e in extra if e)]))


def env_allowed_hosts() -> tuple[str, ...] | None:
    """FLIGHTLOG_ALLOWED_HOSTS, when it names any host."""
    return parse_list(os.environ.get("FLIGHTLOG_ALLOWED_HOSTS", ""), what="FLIGHTLOG_ALLOWED_HOSTS") or None


@dataclass(frozen=True)
class HostPolicy:
    patterns: tuple[str, ...]
    """Exact names or addresses, ``*.domain`` for its subdomains, or ``*`` for any."""

    def allows(self, host: str) -> bool:
        name = _hostname(host)
        if not name:
            return False
        for pattern in self.patterns:
            if pattern == "*" or pattern == name:
                return True
            if pattern.startswith("*.") and name.endswith(pattern[1:]):
                return True
        return False


def _hostname(host: str) -> str:
    """``Host`` header → the name without its port (``[::1]:8765`` → ``::1``), lowercased."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else ""
    if host.count(":") == 1:
        host = host.split(":", 1)[0]
    return host.rstrip(".")


class TrustedProxies:
    """Peers (addresses, networks, or ``*``) whose forwarding headers are believed."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.any = False
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for entry in entries:
            if entry == "*":
                self.any = True
                continue
            try:
                self.networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise InvalidInput(
                    f"trusted proxy {entry!r} is not an address or a network (e.g. 10.0.0.5, 10.0.0.0/24, or *)"
                ) from None

    def __contains__(self, peer: str | None) -> bool:
        if peer is None:
            return False
        if self.any:
            return True
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in net for net in self.networks)


class ForwardedHeaders:
    """Apply ``X-Forwarded-*`` from a trusted proxy (client address, scheme, Host); drop them otherwise."""

    def __init__(self, app: ASGIApp, trusted: TrustedProxies) -> None:
        self.app = app
        self.trusted = trusted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):  # in place: outer layers read what inner ones note in scope
            client = scope.get("client")
            found = {name.decode(): value.decode("latin-1") for name, value in scope["headers"] if name in _FORWARDED}
            headers = [(n, v) for n, v in scope["headers"] if n not in _FORWARDED]
            if found and client and client[0] in self.trusted:
                proto = _last(found.get("x-forwarded-proto"))
                if proto in ("http", "https"):
                    scope["scheme"] = proto
                origin = self._client(found.get("x-forwarded-for"))
                if origin:
                    scope["client"] = (origin, 0)
                host = _last(found.get("x-forwarded-host"))
                if host:
                    scope[PEER_HOST] = next((v.decode("latin-1") for n, v in headers if n == b"host"), "")
                    headers = [(n, v) for n, v in headers if n != b"host"] + [(b"host", host.encode("latin-1"))]
            scope["headers"] = headers
        await self.app(scope, receive, send)

    def _client(self, chain: str | None) -> str | None:
        """The first address from the right that is not a trusted proxy (the real client)."""
        hops = [h.strip() for h in (chain or "").split(",") if h.strip()]
        for hop in reversed(hops):
            if hop not in self.trusted:
                return hop
        return hops[0] if hops else None


def _last(value: str | None) -> str:
    return value.split(",")[-1].strip().lower() if value else ""


class HostGuard:
    """Refuse (421, the JSON error shape) a request whose Host this server does not answer for."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and "*" not in self.policy.patterns:
            host = next((v.decode("latin-1") for n, v in scope["headers"] if n == b"host"), "")
            peer = scope.get(PEER_HOST)  # what the connection sent, when a trusted proxy's header replaced it
            if peer is not None and not self.policy.allows(peer):
                host = peer
            if not self.policy.allows(host):
                name = _hostname(host) or "(none)"
                err = HostNotAllowed(
                    f"this server does not answer for the host {name!r} (a protection against DNS rebinding): "
                    "open it by a loopback address (http://127.0.0.1:PORT), or start it with "
                    f"--allowed-hosts {name} (FLIGHTLOG_ALLOWED_HOSTS) if that name is really this server",
                    details={"host": name, "allowed": list(self.policy.patterns)},
                )
                if scope["type"] == "http":
                    from flightlog.server.responses import error_response  # the server extra

                    await error_response(err)(scope, receive, send)
                return
        await self.app(scope, receive, send)
