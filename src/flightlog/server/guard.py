"""The outermost layer: whatever goes wrong inside becomes the one JSON error shape.

A :class:`FlightlogError` is the client's mistake or a known condition and keeps its status;
anything else is our bug: logged with its traceback, answered 500 with a message that says
so (never the traceback). A client that hangs up mid-request is not an error.
"""

from __future__ import annotations

import logging

from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from flightlog.errors import FlightlogError
from flightlog.server.prometheus import ROUTE_KEY, Metrics
from flightlog.server.responses import error_response

__all__ = ["ErrorGuard", "render_exception"]

log = logging.getLogger("flightlog.server")


class ErrorGuard:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_wrapper(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                status = int(message["status"])
                if status >= 400:
                    self.metrics.error(str(scope.get(ROUTE_KEY) or "other"), _code_for(status))
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except ClientDisconnect:
            return
        except Exception as exc:
            if started:  # the answer is on its way: nothing better to do than to log
                log.exception("error while streaming %s %s", scope.get("method"), scope.get("path"))
                return
            await render_exception(exc, scope)(scope, receive, send_wrapper)


def render_exception(exc: Exception, scope: Scope) -> Response:
    """Our errors keep their status and words; anything else is a logged 500 that says so."""
    if not isinstance(exc, FlightlogError):
        log.error("internal error on %s %s", scope.get("method"), scope.get("path"), exc_info=exc)
        exc = FlightlogError(
            "internal server error: the server's log has the details (this is a bug; please report it)"
        )
        exc.code = "internal_error"
    return error_response(exc)


def _code_for(status: int) -> str:
    return {
        400: "invalid_input",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        405: "method_not_allowed",
        409: "conflict",
        413: "payload_too_large",
        415: "unsupported_media_type",
        422: "query_timeout",
    }.get(status, str(status))
