"""The small hierarchy of errors flightlog raises, each with a stable code and an HTTP status.

Why one hierarchy: the CLI prints ``error.message``, the server renders
``{"error": {"code", "message", "details"}}`` and the HTTP client rebuilds the same exception
from that body, so a user sees the same words whichever way they reached flightlog.
Messages are written for people: what was wrong, where, and how to fix it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "FlightlogError",
    "InvalidInput",
    "FilterSyntaxError",
    "NotFound",
    "AmbiguousId",
    "Conflict",
    "DigestMismatch",
    "SchemaTooOld",
    "SchemaTooNew",
    "StoreUnavailable",
    "QueryTimeout",
    "Unauthorized",
    "Forbidden",
    "MissingExtra",
    "error_from_dict",
]


# code → class, filled as classes are defined, so a server's error comes back as the same type
_BY_CODE: dict[str, type[FlightlogError]] = {}


class FlightlogError(Exception):
    """Base of every error flightlog raises on purpose."""

    code = "flightlog_error"
    http_status = 500

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "code" in cls.__dict__ and "__init__" not in cls.__dict__:
            _BY_CODE.setdefault(cls.code, cls)

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details or {}

    def to_dict(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class InvalidInput(FlightlogError):
    """A value given by the caller is not acceptable (bad option, bad id, bad config)."""

    code = "invalid_input"
    http_status = 400


class FilterSyntaxError(InvalidInput):
    """A run filter or ordering expression could not be parsed.

    ``details`` carries ``position`` (0-based character offset) and ``expected``.
    """

    code = "invalid_filter"

    def __init__(self, message: str, *, expression: str, position: int, expected: str) -> None:
        pointer = f"\n  {expression}\n  {' ' * position}^"
        super().__init__(
            f"{message} at position {position}: expected {expected}{pointer}",
            details={"expression": expression, "position": position, "expected": expected},
        )
        self.position = position
        self.expected = expected


class NotFound(FlightlogError):
    code = "not_found"
    http_status = 404


class AmbiguousId(InvalidInput):
    code = "ambiguous_id"


class Conflict(FlightlogError):
    code = "conflict"
    http_status = 409


class DigestMismatch(Conflict):
    """Downloaded bytes whose sha256 is not the one recorded (a registered model, an artifact)."""

    code = "digest_mismatch"


class SchemaTooOld(FlightlogError):
    """The store was written by an older flightlog; migrations must run first."""

    code = "schema_too_old"
    http_status = 503


class SchemaTooNew(FlightlogError):
    """The store was written by a newer flightlog than this one."""

    code = "schema_too_new"
    http_status = 503


class StoreUnavailable(FlightlogError):
    code = "store_unavailable"
    http_status = 503


class QueryTimeout(FlightlogError):
    """A query ran past its time budget and was stopped, so that it cannot hold up other readers.

    A 4xx, not a 503: retrying the same query would cost the same; a narrower one succeeds.
    """

    code = "query_timeout"
    http_status = 422


class Unauthorized(FlightlogError):
    code = "unauthorized"
    http_status = 401


class Forbidden(FlightlogError):
    code = "forbidden"
    http_status = 403


class MissingExtra(FlightlogError):
    """A feature needs an optional extra that this installation lacks (see ``flightlog.extras``)."""

    code = "missing_extra"
    http_status = 501


_BY_CODE[FlightlogError.code] = FlightlogError


def error_from_dict(body: dict[str, Any], status: int = 500) -> FlightlogError:
    """Rebuild the exception a server rendered, so remote callers catch the same types."""
    err = body.get("error") or {}
    code = str(err.get("code", "flightlog_error"))
    message = str(err.get("message", f"server answered {status}"))
    details = err.get("details") or {}
    if code == FilterSyntaxError.code:
        return _filter_error(message, details)
    cls = _BY_CODE.get(code, FlightlogError)
    exc = cls(message, details=details)
    if cls is FlightlogError:
        exc.code = code
        exc.http_status = status
    return exc


def _filter_error(message: str, details: dict[str, Any]) -> FlightlogError:
    """A FilterSyntaxError with the server's words and its position, when the details carry it."""
    position, expected = details.get("position"), details.get("expected")
    if not isinstance(position, int) or isinstance(position, bool) or not isinstance(expected, str):
        exc: FlightlogError = InvalidInput(message, details=details)
        exc.code = FilterSyntaxError.code
        return exc
    err = FilterSyntaxError.__new__(FilterSyntaxError)
    InvalidInput.__init__(err, message, details=details)
    err.position = position
    err.expected = expected
    return err
