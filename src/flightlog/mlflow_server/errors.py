"""MLflow's error shape on the wire: ``{"error_code": "...", "message": "..."}`` with the HTTP
status MLflow's own server gives for that code.

Why a shape of its own: MLflow's clients (Python, R, Java) read ``error_code`` to raise their
usual ``MlflowException`` (``RestException``) and decide on retries by the status (they retry
429 and 5xx), so a client's mistake must be a 4xx with MLflow's code, never a 500. Our own
errors (`flightlog.errors`) keep their message and are mapped by class onto MLflow's codes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flightlog.errors import Conflict, FlightlogError, Forbidden, InvalidInput, NotFound, Unauthorized
from flightlog.server.responses import Response, json_response

__all__ = [
    "MlflowError",
    "STATUS_OF",
    "invalid",
    "missing",
    "not_found",
    "already_exists",
    "mlflow_code",
    "mlflow_error_response",
]

log = logging.getLogger("flightlog.server")

#: MLflow's error codes and the status its server answers with (mlflow.exceptions)
STATUS_OF: dict[str, int] = {
    "INVALID_PARAMETER_VALUE": 400,
    "BAD_REQUEST": 400,
    "RESOURCE_ALREADY_EXISTS": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "RESOURCE_DOES_NOT_EXIST": 404,
    "ENDPOINT_NOT_FOUND": 404,
    "RESOURCE_CONFLICT": 409,
    "INVALID_STATE": 500,
    "INTERNAL_ERROR": 500,
    "NOT_IMPLEMENTED": 501,
    "TEMPORARILY_UNAVAILABLE": 503,
}


class MlflowError(FlightlogError):
    """An error in MLflow's terms: one of :data:`STATUS_OF`'s codes and a message."""

    def __init__(self, error_code: str, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details=details)
        self.error_code = error_code
        self.code = error_code.lower()
        self.http_status = STATUS_OF.get(error_code, 400)


def invalid(message: str) -> MlflowError:
    return MlflowError("INVALID_PARAMETER_VALUE", message)


def missing(name: str) -> MlflowError:
    """MLflow's words for a required field left out of a request."""
    return invalid(f"Missing value for required parameter '{name}'.")


def not_found(message: str) -> MlflowError:
    return MlflowError("RESOURCE_DOES_NOT_EXIST", message)


def already_exists(message: str) -> MlflowError:
    return MlflowError("RESOURCE_ALREADY_EXISTS", message)


def mlflow_code(exc: FlightlogError) -> str:
    """The MLflow code for one of our errors, by its class (then by its status)."""
    if isinstance(exc, MlflowError):
        return exc.error_code
    for cls, code in (
        (Unauthorized, "UNAUTHENTICATED"),
        (Forbidden, "PERMISSION_DENIED"),
        (NotFound, "RESOURCE_DOES_NOT_EXIST"),
        (Conflict, "RESOURCE_ALREADY_EXISTS"),
        (InvalidInput, "INVALID_PARAMETER_VALUE"),
    ):
        if isinstance(exc, cls):
            return code
    status = exc.http_status
    if status == 503:
        return "TEMPORARILY_UNAVAILABLE"
    if status == 501:
        return "NOT_IMPLEMENTED"
    if 400 <= status < 500:
        return "INVALID_PARAMETER_VALUE"
    return "INTERNAL_ERROR"


def mlflow_error_response(exc: Exception, scope: Mapping[str, Any] | None = None) -> Response:
    """The response for anything a handler raised: ours keep their words; anything else is our
    bug, logged with its traceback and answered 500 without it."""
    if not isinstance(exc, FlightlogError):
        where = f"{scope.get('method')} {scope.get('path')}" if scope else "an MLflow route"
        log.error("internal error on %s", where, exc_info=exc)
        return json_response(
            {
                "error_code": "INTERNAL_ERROR",
                "message": "internal server error: the server's log has the details (this is a bug; please report it)",
            },
            status=500,
        )
    code = mlflow_code(exc)
    status = exc.http_status if isinstance(exc, MlflowError) else STATUS_OF.get(code, exc.http_status)
    if code == "INVALID_PARAMETER_VALUE" and exc.http_status in (413, 415):
        status = exc.http_status  # too large / wrong media type: MLflow's code, the precise status
    headers = {"WWW-Authenticate": 'Basic realm="flightlog", Bearer realm="flightlog"'} if status == 401 else None
    message = exc.message
    if isinstance(exc, Unauthorized) and exc.details.get("reason") == "no_token":
        message = NO_TOKEN  # an MLflow client is configured with MLflow's variable, not flightlog's
    return json_response({"error_code": code, "message": message}, status=status, headers=headers)


#: what an MLflow client that sent no token is told
NO_TOKEN = (
    "this server needs a token: set MLFLOW_TRACKING_TOKEN in the client's environment (it is sent as "
    "`Authorization: Bearer TOKEN`; `flightlog token create` makes one)"
)
