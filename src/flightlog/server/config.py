"""The server's settings, declared once, with the defaults `flightlog server` documents."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from flightlog.config import discover_home
from flightlog.errors import InvalidInput
from flightlog.store.budget import DEFAULT_QUERY_TIMEOUT

__all__ = ["ServerConfig", "LOOPBACK"]


LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True)
class ServerConfig:
    home: Path
    """Where the store (``flightlog.db``) and the artifact blobs (``artifacts/``) live."""
    store_uri: str
    """The store the server serves; default ``sqlite:///HOME/flightlog.db``."""
    auth: bool = False
    """Every request needs a token (``Authorization: Bearer`` or the session cookie)."""
    max_body: int = 32 << 20
    """Largest request body (ingest batches are measured compressed)."""
    max_inflated: int | None = None
    """Largest ingest batch after decompression; None: ``max_body`` (a compressed body may not
    hold more than an uncompressed one could)."""
    max_upload: int = 64 << 30
    """Largest artifact upload (uploads are streamed to disk, never held in memory)."""
    stream_poll: float = 0.25
    """Seconds between store reads of a live stream (SSE)."""
    stream_keepalive: float = 15.0
    """Seconds between keep-alive comments on an idle live stream."""
    stream_max_age: float = 1800.0
    """Seconds one live-stream connection lasts before the server asks its client to reconnect.

    Clients resume with ``Last-Event-ID`` without a gap, so this costs nothing; it bounds how
    long one connection pins a worker and lets a load balancer spread long-lived viewers again.
    """
    stream_recheck: float = 5.0
    """Seconds between checks, on an open live stream, that its token or session still holds:
    a revoked token or a signed-out session ends its streams within this long, not at
    ``stream_max_age``."""
    session_hours: float = 12.0
    """How long a web UI session lasts (its cookie holds a session id, never the token)."""
    bind: str = "127.0.0.1"
    """The address the server listens on (without auth, a default allowed Host name)."""
    allowed_hosts: tuple[str, ...] | None = None
    """Host names the server answers for (``*.domain``, ``*``); None: FLIGHTLOG_ALLOWED_HOSTS
    (read by :meth:`for_home`), else :func:`flightlog.server.hosts.default_allowed_hosts`
    (any with auth; loopback names and ``bind`` without)."""
    trusted_proxies: tuple[str, ...] = ()
    """Peers (addresses, networks, ``*``) whose X-Forwarded-For/-Proto/-Host are believed."""
    query_timeout: float | None = DEFAULT_QUERY_TIMEOUT
    """Seconds one search (runs by filter, logs by grep) may take before it is stopped with a
    422 ``query_timeout``; None: no limit. Bounds how long one request holds the store."""
    alerts: str | None = None
    """Alert rules evaluated in the background (else ./flightlog.alerts.yaml, else HOME/alerts.yaml)."""
    artifacts: str | None = None
    """Where artifact blobs live: ``s3://BUCKET/PREFIX`` (FLIGHTLOG_ARTIFACTS), else HOME/artifacts."""
    export_run_metrics: bool = False
    """Add per-run gauges (the last value of each metric of every running run) to ``/metrics``."""

    @classmethod
    def for_home(cls, home: str | os.PathLike[str] | None = None, **overrides: object) -> ServerConfig:
        """Settings for serving ``home`` (default FLIGHTLOG_HOME, else the store that
        ``config.discover_home`` finds from the working directory, as every command does).

        FLIGHTLOG_STORE may name another store; FLIGHTLOG_URL is ignored — a server serves a
        store, never another server.
        """
        given = home or os.environ.get("FLIGHTLOG_HOME", "").strip()
        base = Path(os.path.abspath(given)) if given else discover_home()
        store = str(overrides.pop("store_uri", "") or os.environ.get("FLIGHTLOG_STORE", "").strip())
        if store.startswith(("http://", "https://")):
            raise InvalidInput(
                f"FLIGHTLOG_STORE={store!r} names a server: a server serves a store directly "
                "(sqlite:///PATH, or unset it to use HOME/flightlog.db)"
            )
        if "artifacts" not in overrides:
            overrides["artifacts"] = os.environ.get("FLIGHTLOG_ARTIFACTS", "").strip() or None
        if overrides.get("allowed_hosts") is None:
            from flightlog.server.hosts import env_allowed_hosts

            overrides["allowed_hosts"] = env_allowed_hosts()
        return cls(home=base, store_uri=store or f"sqlite:///{base / 'flightlog.db'}", **overrides)  # type: ignore[arg-type]
