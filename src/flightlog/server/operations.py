"""An API operation declared once: its route, its handler, who may call it, and its OpenAPI text.

The declarations are the feature table's (`flightlog.plugins.operations`: what the
``flightlog_api_operations`` hook answers); this module is where the server's routes and every
feature's ``api.py`` import them, with the handler's type as the server calls it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.responses import Response

from flightlog.plugins.operations import JSON, RUN, Operation, Param, error_ref, json_body, ok, schema_ref
from flightlog.server.context import Ctx

__all__ = ["Handler", "Operation", "Param", "RUN", "JSON", "error_ref", "json_body", "ok", "schema_ref"]

#: an operation's handler as the server calls it: the request's context to a Starlette response
Handler = Callable[[Ctx], Awaitable[Response]]
