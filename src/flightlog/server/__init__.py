"""``flightlog server``: the REST API, live streams, auth and metrics over one store.

    app = create_app(ServerConfig.for_home("/srv/flightlog", auth=True))   # an ASGI app

Modules: ``app`` builds the application; ``routes/`` holds one module per resource, each
declaring its operations (handler, role, OpenAPI text); ``auth`` and ``tokens`` decide who may
do what; ``blobs`` streams artifacts; ``prometheus`` counts; ``serve`` runs uvicorn; ``cli`` is
the command line; ``testing`` runs a real server in a thread for tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flightlog.lazy import lazy_attributes

if TYPE_CHECKING:
    from flightlog.server.app import FlightlogApp, create_app
    from flightlog.server.config import ServerConfig

__all__ = ["FlightlogApp", "ServerConfig", "create_app"]


# loaded on first use: every `flightlog` command imports flightlog.server.cli, and only
# `flightlog server` needs the application (Starlette, the routes)
__getattr__, __dir__ = lazy_attributes(
    __name__, {"FlightlogApp": ".app", "create_app": ".app", "ServerConfig": ".config"}, eager=tuple(__all__)
)
