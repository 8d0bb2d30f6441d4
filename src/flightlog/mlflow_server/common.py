"""What every MLflow route shares: who is asking (MLflow's bearer token or basic auth, onto
flightlog's tokens), reading MLflow's request message, and declaring a route twice.

MLflow's clients send a route's request message as a JSON body (POST, PATCH, DELETE) or as
query parameters (GET), under ``/api/2.0/mlflow/`` (clients) and ``/ajax-api/2.0/mlflow/``
(MLflow's web UI). :func:`mlflow_operations` declares both from one handler, and wraps it so
that authentication and every error are answered in MLflow's shape (`errors.py`): the core's
endpoint would answer flightlog's shape, which MLflow's clients do not read.

Auth: ``MLFLOW_TRACKING_TOKEN`` arrives as ``Authorization: Bearer TOKEN``, the core's own
form; ``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD`` arrive as ``Basic``, where the
password is a flightlog token (the user name is free: it names who logs, nothing more). Both
end in `flightlog.server.auth.authenticate`, so roles, project limits, revocation and
``last_used`` work exactly as for the native API.
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from flightlog.errors import Unauthorized
from flightlog.mlflow_server.errors import invalid, missing, mlflow_error_response
from flightlog.server.auth import Principal, authenticate
from flightlog.server.context import Ctx, Request, UnsupportedMediaType
from flightlog.server.operations import JSON, Operation
from flightlog.server.origins import check_same_origin
from flightlog.server.prometheus import ROUTE_KEY
from flightlog.server.responses import Response, json_response

__all__ = ["Call", "MlflowHandler", "PREFIXES", "mlflow_operations", "principal_of"]

#: where MLflow's clients and its web UI send the tracking protocol
PREFIXES = ("//api/2.0/mlflow", "//ajax-api/2.0/mlflow")
_json = msgspec.json.Decoder()
_WRITES = {"POST", "PATCH", "DELETE", "PUT"}


@dataclass
class Call:
    """One MLflow request: the server's context and the request message, read once."""

    ctx: Ctx
    message: dict[str, Any]
    multi: dict[str, list[str]]  # repeated query parameters (GET ``run_ids=a&run_ids=b``)

    def text(self, name: str, *, required: bool = False, max_len: int = 100_000) -> str | None:
        value = self.message.get(name)
        if value is None or value == "":
            if required:
                raise missing(name)
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise invalid(f"Invalid value {_short(value)} for parameter '{name}' supplied: it must be a string.")
        if len(value) > max_len:
            raise invalid(f"Parameter '{name}' is {len(value)} characters long; at most {max_len} are accepted.")
        if "\x00" in value:
            raise invalid(f"Parameter '{name}' contains a NUL character.")
        return value

    def need(self, name: str, *, max_len: int = 100_000) -> str:
        value = self.text(name, required=True, max_len=max_len)
        assert value is not None  # noqa: S101 - text(required=True) never returns None
        return value

    def integer(self, name: str, *, default: int | None = None, min: int | None = None) -> int | None:
        value = self.message.get(name)
        if value is None or value == "":
            return default
        if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
            value = int(value)
        if isinstance(value, float) and math.isfinite(value) and value == int(value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise invalid(f"Invalid value {_short(value)} for parameter '{name}' supplied: it must be an integer.")
        if min is not None and value < min:
            raise invalid(f"Invalid value {value} for parameter '{name}' supplied: it must be at least {min}.")
        return value

    def items(self, name: str, *, limit: int | None = None) -> list[Any]:
        """A repeated field: a JSON list, or a query parameter given once per value."""
        value = self.message.get(name)
        if value is None:
            return []
        if isinstance(value, str):
            value = self.multi.get(name, [value])
        if not isinstance(value, list):
            raise invalid(f"Invalid value {_short(value)} for parameter '{name}' supplied: it must be a list.")
        if limit is not None and len(value) > limit:
            raise invalid(f"Parameter '{name}' has {len(value)} entries; at most {limit} are accepted.")
        return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


MlflowHandler = Callable[[Call], Awaitable[Any]]


def _bearer_form(request: Request) -> Request:
    """The request with basic auth rewritten as the bearer form the core checks (the password is
    the token); any other Authorization header is left as it is, for the core to refuse."""
    header = request.headers.get("authorization")
    if header is None:
        return request
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return request
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise Unauthorized("the basic credentials are not valid base64 of USER:PASSWORD") from None
    _, sep, password = decoded.partition(":")
    if not sep or not password:
        raise Unauthorized(
            "basic auth needs a flightlog token as its password: set MLFLOW_TRACKING_PASSWORD "
            "(or MLFLOW_TRACKING_TOKEN alone; `flightlog token create` makes one)"
        )
    headers = [(k, v) for k, v in request.scope["headers"] if k != b"authorization"]
    headers.append((b"authorization", b"Bearer " + password.encode("utf-8")))
    return Request({**request.scope, "headers": headers}, request.receive)


async def principal_of(ctx: Ctx) -> Principal:
    """Who is asking, from MLflow's bearer token or basic auth (module doc)."""
    request = _bearer_form(ctx.request)
    return await authenticate(request, ctx.store, enabled=ctx.state.config.auth)


def _json_media(ctx: Ctx) -> None:
    """A write's body must be declared JSON: a browser cannot send that from another origin
    without asking first (a preflight this server never grants), so no form or ``text/plain``
    post of another page's is read as a request (issue 31, item 3; server/origins.py)."""
    media = ctx.request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media != JSON:
        raise UnsupportedMediaType(
            f"send this request's message as {JSON} (Content-Type: {JSON}), not {media or 'no Content-Type'}",
            details={"content_type": media},
        )


async def _message(ctx: Ctx) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The request message: a read's query parameters; a write's JSON body. A write's query
    parameters are not merged into it (a form-less POST to ``…/delete?experiment_id=1`` must not
    act), except DELETE's, which browsers always preflight."""
    request = ctx.request
    multi: dict[str, list[str]] = {}
    if request.method not in _WRITES or request.method == "DELETE":
        for key, value in request.query_params.multi_items():
            multi.setdefault(key, []).append(value)
    message: dict[str, Any] = {k: v[0] for k, v in multi.items()}
    if request.method in _WRITES:
        raw = await ctx.body()
        if raw.strip() or request.method != "DELETE":
            _json_media(ctx)
        if raw.strip():
            try:
                doc = _json.decode(raw)
            except msgspec.DecodeError as exc:
                raise invalid(f"The request body is not valid JSON: {exc}") from None
            except RecursionError:
                raise invalid("The request body is nested too deeply.") from None
            if not isinstance(doc, dict):
                raise invalid("The request body must be a JSON object.")
            message.update(doc)
    return message, multi


def _guarded(handler: MlflowHandler, role: str, route: str) -> Callable[[Ctx], Awaitable[Response]]:
    async def endpoint(ctx: Ctx) -> Response:
        ctx.request.scope[ROUTE_KEY] = route
        try:
            check_same_origin(ctx.request)  # a page of another origin changes nothing (server/origins.py)
            principal = await principal_of(ctx)
            principal.require(role)
            ctx = Ctx(ctx.request, ctx.state, principal)
            message, multi = await _message(ctx)
            answer = await handler(Call(ctx, message, multi))
            return answer if isinstance(answer, Response) else _json_answer(answer)
        except Exception as exc:  # noqa: BLE001 - every error becomes MLflow's one shape
            return mlflow_error_response(exc, ctx.request.scope)

    return endpoint


def _json_answer(doc: Any) -> Response:
    return json_response(doc if doc is not None else {})


def mlflow_operations(
    method: str, path: str, handler: MlflowHandler, role: str, summary: str, *, tag: str = "mlflow"
) -> list[Operation]:
    """The route at ``path`` (after ``/mlflow``) under both of MLflow's prefixes.

    The operations carry no role for the core's endpoint (which would answer refusals in
    flightlog's shape): the wrapper authenticates and checks ``role`` itself."""
    ops = []
    for prefix in PREFIXES:
        full = prefix + path
        ops.append(
            Operation(
                method,
                full,
                _guarded(handler, role, full[1:]),
                None,
                summary,
                tag,
                body={"required": False, "content": {JSON: {"schema": {"type": "object"}}}}
                if method in _WRITES
                else None,
                own_origin_check=True,
                description=f"MLflow's REST protocol (docs/mlflow.md). Needs the role {role!r}: a flightlog token "
                "as `Authorization: Bearer` (MLFLOW_TRACKING_TOKEN) or as the basic-auth password. Errors are "
                'MLflow\'s `{"error_code", "message"}`.',
            )
        )
    return ops
