"""``flightlog server``: the REST API, live streams, auth and metrics over one store.

    app = create_app(ServerConfig.for_home("/srv/flightlog", auth=True))   # an ASGI app

Modules: ``app`` builds the application; ``routes/`` holds one module per resource, each
declaring its operations (handler, role, OpenAPI text); ``auth`` and ``tokens`` decide who may
do what; ``blobs`` streams artifacts; ``prometheus`` counts; ``serve`` runs uvicorn; ``cli`` is
the command line; ``testing`` runs a real server in a thread for tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flightlog.server.app import FlightlogApp, create_app
    from flightlog.server.config import ServerConfig

__all__ = ["FlightlogApp", "ServerConfig", "create_app"]


def __getattr__(name: str) -> Any:
    # Loaded on first use: every `flightlog` command imports flightlog.server.cli, and only
    # `flightlog server` needs the application (Starlette, the routes, the alert engine).
    if name in ("FlightlogApp", "create_app"):
        from flightlog.server import app

        return getattr(app, name)
    if name == "ServerConfig":
        from flightlog.server.config import ServerConfig

        return ServerConfig
    raise AttributeError(f"module 'flightlog.server' has no attribute {name!r}")
