"""Building the ASGI application, once: routes from the operations, the error guard outermost.

    ErrorGuard → ForwardedHeaders → HostGuard → MetricsMiddleware → Starlette (router → endpoint: auth, handler)

The app is stateless over its store: whatever a request needs is in the store or in the
request (cursors, stream positions), so replicas behind a load balancer can share one store.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from flightlog._version import __version__
from flightlog.errors import FlightlogError, NotFound
from flightlog.plugins import Features
from flightlog.plugins import features as feature_table
from flightlog.server.auth import Principal, authenticate
from flightlog.server.blobs import open_blob_store
from flightlog.server.config import ServerConfig
from flightlog.server.context import AppState, Ctx
from flightlog.server.guard import ErrorGuard, render_exception
from flightlog.server.hosts import (
    ForwardedHeaders,
    HostGuard,
    HostPolicy,
    TrustedProxies,
    default_allowed_hosts,
)
from flightlog.server.openapi import openapi_document
from flightlog.server.operations import Operation
from flightlog.server.origins import check_same_origin
from flightlog.server.prometheus import ROUTE_KEY, Metrics, MetricsMiddleware
from flightlog.server.responses import error_response
from flightlog.server.routes import OPERATIONS, assemble
from flightlog.server.storeapi import ServerStore
from flightlog.server.ui import routes as ui_routes
from flightlog.store.registry import open_store

__all__ = ["create_app", "FlightlogApp"]

_ANONYMOUS = Principal("reader", via="anonymous")
log = logging.getLogger("flightlog.server")


class FlightlogApp:
    """The ASGI callable uvicorn serves, with the state tests and the CLI reach for."""

    def __init__(self, app: ASGIApp, starlette: Starlette, state: AppState) -> None:
        self.app = app
        self.starlette = starlette
        self.state = state

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)

    def close(self) -> None:
        if self.state.ingest_queue is not None:
            self.state.ingest_queue.close()
        self.state.store.close()


def _endpoint(op: Operation, state: AppState) -> Any:
    route = op.full_path

    async def endpoint(request: Request) -> Response:
        request.scope[ROUTE_KEY] = route
        try:
            if not op.own_origin_check:  # no write from another origin's page, auth or not (origins.py)
                check_same_origin(request)
            if op.role is None:
                principal = _ANONYMOUS
            else:
                principal = await authenticate(request, state.store, enabled=state.config.auth)
                principal.require(op.role)
            response: Response = await op.handler(Ctx(request, state, principal))
            return response
        except ClientDisconnect:
            raise
        except Exception as exc:  # noqa: BLE001 - every error becomes the one JSON shape
            return render_exception(exc, request.scope)

    endpoint.__name__ = op.operation_id
    return endpoint


async def _http_error(request: Request, exc: Exception) -> Response:
    exc = cast(HTTPException, exc)  # registered for HTTPException only
    if exc.status_code == 404:
        err: FlightlogError = NotFound(
            f"no API route {request.url.path!r}: the API lives under /api/v1 and is described at /api/v1/openapi.json"
        )
    else:
        err = FlightlogError(exc.detail or f"HTTP {exc.status_code}")
        err.http_status = exc.status_code
        err.code = "method_not_allowed" if exc.status_code == 405 else f"http_{exc.status_code}"
    return error_response(err, headers=dict(exc.headers or {}))


def _specificity(op: Operation) -> list[int]:
    """Sort key that puts a route before the templates that would shadow it: segment by segment,
    a literal (0) before a parameter (1) before a ``{name:path}`` (2). Two features may declare
    ``/deployments/{endpoint}/{env}`` and ``/deployments/{endpoint}/timeline``; Starlette takes
    the first route that matches, so the literal one must come first whatever the table's order.
    The sort is stable: routes that cannot shadow each other keep their declared order."""
    return [2 if ":path}" in seg else 1 if "{" in seg else 0 for seg in op.route_path.split("/")]


def create_app(
    config: ServerConfig, *, store: ServerStore | None = None, features: Features | None = None
) -> FlightlogApp:
    """The app serving ``config.store_uri`` (or ``store``); the store must have the server's extras.

    Its routes are the core's and those of the features in ``features`` (by default this
    process's feature table, `flightlog.plugins.features`)."""
    operations = OPERATIONS if features is None else assemble(features)
    if store is None:
        store = cast(ServerStore, open_store(config.store_uri))
    store.query_timeout = config.query_timeout
    metrics = Metrics()
    try:
        blobs = open_blob_store(config.home, config.artifacts)
    except BaseException:
        store.close()
        raise
    state = AppState(config=config, store=store, blobs=blobs, metrics=metrics)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # the features' background work (alerts' evaluation, the registry's event delivery), each
        # stopped at shutdown
        table = features if features is not None else feature_table()
        watchers = [
            w for _, w in table.call("flightlog_server_start", store=state.store, home=config.home, config=config)
        ]
        yield
        state.draining.set()
        for watcher in watchers:
            try:
                watcher.stop(True)
            except Exception:  # noqa: BLE001 - one feature's shutdown must not stop the others'
                log.exception("a feature's background work did not stop cleanly")
        if state.ingest_queue is not None:  # the batches already taken are applied, then its thread ends
            await anyio.to_thread.run_sync(state.ingest_queue.close)

    routes = [
        Route(op.route_path, _endpoint(op, state), methods=[op.method], name=op.operation_id)
        for op in sorted(operations, key=_specificity)
    ]
    routes += ui_routes()  # the web UI at / (after the API, so /api/... keeps its own answers)
    starlette = Starlette(routes=routes, exception_handlers={HTTPException: _http_error}, lifespan=lifespan)
    starlette.state.openapi = openapi_document(operations, version=__version__)
    starlette.state.flightlog = state
    hosts = (
        config.allowed_hosts
        if config.allowed_hosts is not None
        else default_allowed_hosts(auth=config.auth, bind=config.bind)
    )
    inner = HostGuard(MetricsMiddleware(starlette, metrics), HostPolicy(hosts))
    app = ErrorGuard(ForwardedHeaders(inner, TrustedProxies(config.trusted_proxies)), metrics)
    return FlightlogApp(app, starlette, state)
