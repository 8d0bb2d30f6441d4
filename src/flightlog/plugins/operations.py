"""An API operation declared once: its route, its handler, who may call it, and its OpenAPI text.

The app's routes and ``/api/v1/openapi.json`` are both built from these declarations, so
the document cannot drift from what the server serves.

Why here, in the feature table's package, and not in the server's: an operation is what the
``flightlog_api_operations`` hook answers, and the types a hook speaks in live below the table,
so that the table names no feature and no face. Declaring one needs nothing of the server
(Starlette included); its handler is called by the server with the request's context
(`flightlog.server.context.Ctx`) and answers a Starlette response. ``flightlog.server.operations``
re-exports these names, where the API modules and third-party features import them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Handler", "Operation", "Param", "RUN", "JSON", "error_ref", "json_body", "ok", "schema_ref"]

#: an operation's handler: the request's context (`flightlog.server.context.Ctx`) to a response
Handler = Callable[[Any], Awaitable[Any]]
JSON = "application/json"


@dataclass(frozen=True)
class Param:
    name: str
    where: str  # query | path | header
    schema: dict[str, Any]
    description: str
    required: bool = False
    explode: bool | None = None

    def to_openapi(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "name": self.name,
            "in": self.where,
            "description": self.description,
            "required": self.required or self.where == "path",
            "schema": self.schema,
        }
        if self.explode is not None:
            doc["explode"] = self.explode
        return doc


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # OpenAPI template, relative to /api/v1 unless it starts with "//"
    handler: Handler
    role: str | None  # reader | writer | admin; None: no token needed
    summary: str
    tag: str
    params: tuple[Param, ...] = ()
    body: dict[str, Any] | None = None
    responses: dict[str, Any] = field(default_factory=dict)
    route: str | None = None  # the Starlette path when it differs from ``path`` ({name:path})
    description: str = ""
    # the handler checks the request's origin itself, to refuse in its own error shape (the MLflow routes)
    own_origin_check: bool = False

    @property
    def full_path(self) -> str:
        return self.path[1:] if self.path.startswith("//") else "/api/v1" + self.path

    @property
    def route_path(self) -> str:
        route = self.route or self.path
        return route[1:] if route.startswith("//") else "/api/v1" + route

    @property
    def operation_id(self) -> str:
        words = [w for w in self.path.replace("{", "").replace("}", "").replace("//", "/").split("/") if w]
        return self.method.lower() + "_" + "_".join(words).replace(".", "_").replace("-", "_")


RUN = Param(
    "run",
    "path",
    {"type": "string", "pattern": r"^[0-9A-Za-z_.-]+$", "maxLength": 64},
    "A run id, or a unique prefix of one.",
)


def schema_ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def error_ref() -> dict[str, Any]:
    return {"content": {JSON: {"schema": schema_ref("Error")}}}


def json_body(schema: dict[str, Any], description: str = "") -> dict[str, Any]:
    return {"required": True, "description": description, "content": {JSON: {"schema": schema}}}


def ok(description: str, schema: dict[str, Any] | None = None, media: str = JSON) -> dict[str, Any]:
    doc: dict[str, Any] = {"description": description}
    if schema is not None:
        doc["content"] = {media: {"schema": schema}}
    return doc
