"""``flightlog server``: the REST API, live streams, auth and metrics over one store.

    app = create_app(ServerConfig.for_home("/srv/flightlog", auth=True))   # an ASGI app

Modules: ``app`` builds the application; ``routes/`` holds one module per resource, each
declaring its operations (handler, role, OpenAPI text); ``auth`` and ``tokens`` decide who may
do what; ``blobs`` streams artifacts; ``prometheus`` counts; ``serve`` runs uvicorn; ``cli`` is
the command line; ``testing`` runs a real server in a thread for tests.
"""

from flightlog.server.app import FlightlogApp, create_app
from flightlog.server.config import ServerConfig

__all__ = ["FlightlogApp", "ServerConfig", "create_app"]
