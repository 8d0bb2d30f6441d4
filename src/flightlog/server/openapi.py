"""The OpenAPI 3.1 document of API v1, built from the operations the server serves.

Each operation brings its own parameters, body and success answers (declared beside its
handler); this module adds what every operation shares — the error answers and their shape,
the security schemes — and the schemas of the models.
"""

from __future__ import annotations

from typing import Any

from flightlog.server.operations import Operation, error_ref

__all__ = ["openapi_document"]

_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {"type": "string", "description": "Stable, e.g. invalid_input, not_found, unauthorized."},
                "message": {"type": "string", "description": "What was wrong and how to fix it, for people."},
                "details": {"type": "object"},
            },
        }
    },
}
_TIME = {"type": ["string", "null"], "format": "date-time"}
_NUM = {
    "type": ["number", "string", "null"],
    "description": 'A number; NaN and infinities as "NaN", "Infinity", "-Infinity".',
}

SCHEMAS: dict[str, Any] = {
    "Error": _ERROR,
    "Project": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "runs": {"type": "integer"},
            "serving_runs": {"type": "integer", "description": "of them, serving replicas (runs of kind serving)"},
            "running": {"type": "integer"},
            "failed": {"type": "integer"},
            "last_created": _TIME,
        },
    },
    "Run": {
        "type": "object",
        "required": ["id", "project", "status"],
        "properties": {
            "id": {"type": "string"},
            "project": {"type": "string"},
            "name": {"type": ["string", "null"]},
            "status": {"type": "string"},
            "end_reason": {"type": ["string", "null"]},
            "parent_id": {"type": ["string", "null"]},
            "attempt": {"type": "integer"},
            "exit_code": {"type": ["integer", "null"]},
            "signal": {"type": ["integer", "null"]},
            "duration": {"type": ["number", "null"]},
            "queue_wait": {"type": ["number", "null"]},
            "created": _TIME,
            "queued": _TIME,
            "started": _TIME,
            "ended": _TIME,
            "updated": _TIME,
            "params": {"type": "object"},
            "tags": {"type": "object"},
            "metrics": {"type": "object"},
            "host": {"type": ["string", "null"]},
            "pid": {"type": ["integer", "null"]},
            "failure": {"type": ["object", "null"]},
            "timeline": {"type": "object"},
            "metric_summaries": {"type": "object"},
            "counters": {"type": "object"},
            "cause": {
                "type": ["string", "null"],
                "description": "In listings: the taxonomy category of a failed, crashed or killed run.",
            },
            "nonfinite_metrics": {
                "type": "array",
                "items": {"type": "string"},
                "description": "In listings: the metrics with a NaN or infinite point.",
            },
        },
    },
    "MetricSummary": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer"},
            "nonfinite": {"type": "integer"},
            "min": _NUM,
            "max": _NUM,
            "last": _NUM,
            "last_step": {"type": ["integer", "null"]},
            "first_step": {"type": ["integer", "null"]},
            "first_time": _TIME,
            "last_time": _TIME,
        },
    },
    "LogEvent": {
        "type": "object",
        "properties": {
            "time": _TIME,
            "stream": {"type": "string"},
            "level": {"type": "string"},
            "level_no": {"type": "integer"},
            "component": {"type": ["string", "null"]},
            "message": {"type": "string"},
            "fields": {"type": ["object", "null"]},
            "rank": {"type": ["integer", "null"]},
            "attempt": {"type": "integer"},
            "stage": {"type": ["string", "null"]},
        },
    },
    "RankInfo": {
        "type": "object",
        "description": "One rank of a distributed run (models.RankInfo).",
        "properties": {
            "rank": {"type": "integer"},
            "local_rank": {"type": ["integer", "null"]},
            "world_size": {"type": ["integer", "null"]},
            "node_rank": {"type": ["integer", "null"]},
            "local_world_size": {"type": ["integer", "null"]},
            "host": {"type": ["string", "null"]},
            "pid": {"type": ["integer", "null"]},
            "restart": {"type": "integer", "description": "The launcher's restart count (TORCHELASTIC_RESTART_COUNT)."},
            "attempt": {"type": "integer"},
            "state": {
                "type": "string",
                "enum": ["running", "succeeded", "failed", "stopped", "killed", "lost", "hung"],
            },
            "started": _TIME,
            "last_heartbeat": _TIME,
            "last_received": _TIME,
            "last_step": {"type": ["integer", "null"]},
            "last_step_time": _TIME,
            "ended": _TIME,
            "end_reason": {"type": ["string", "null"]},
            "exit_code": {"type": ["integer", "null"]},
            "signal": {"type": ["integer", "null"]},
            "first_error": {
                "type": ["object", "null"],
                "properties": {"message": {"type": "string"}, "time": _TIME},
            },
            "failure": {"type": ["object", "null"]},
            "launcher": {"type": ["string", "null"]},
            "job_key": {"type": ["string", "null"]},
            "writer": {"type": ["string", "null"]},
        },
    },
    "Artifact": {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "run_id": {"type": "string"},
            "role": {"type": "string"},
            "kind": {"type": ["string", "null"]},
            "path": {"type": "string"},
            "source": {"type": ["string", "null"]},
            "size": {"type": ["integer", "null"]},
            "sha256": {"type": ["string", "null"]},
            "uri": {"type": ["string", "null"]},
            "step": {"type": ["integer", "null"]},
            "time": _TIME,
            "attempt": {"type": "integer"},
            "meta": {"type": ["object", "null"]},
        },
    },
    "Note": {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "run_id": {"type": "string"},
            "time": _TIME,
            "author": {"type": ["string", "null"]},
            "text": {"type": "string"},
        },
    },
}

_COMMON_ERRORS = {
    "400": "The request is not valid: the message says what to change.",
    "401": "No token, or a token that is unknown or revoked.",
    "403": "The token's role or project does not allow this.",
    "404": "No such run, metric, artifact or content.",
    "413": "The body is over the server's limit.",
    "415": "The body is not in a media type this operation takes.",
}


def _operation(op: Operation) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "operationId": op.operation_id,
        "summary": op.summary,
        "tags": [op.tag],
        "parameters": [p.to_openapi() for p in op.params],
        "responses": {**op.responses},
    }
    if op.description:
        doc["description"] = op.description
    if op.body is not None:
        doc["requestBody"] = op.body
    for status, text in _COMMON_ERRORS.items():
        if status in ("401", "403") and op.role is None:
            continue
        if status in ("413", "415") and op.body is None:
            continue
        if status == "404" and op.method == "HEAD":
            continue
        doc["responses"].setdefault(status, {"description": text, **error_ref()})
    if op.role is None:
        doc["security"] = []
    else:
        doc["x-flightlog-role"] = op.role
    return doc


def openapi_document(operations: list[Operation], *, version: str) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for op in operations:
        paths.setdefault(op.full_path, {})[op.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "flightlog API",
            "version": version,
            "description": "Runs, metrics, logs, artifacts and live streams of a flightlog server. Errors are "
            '`{"error": {"code", "message", "details"}}`. Times are ISO-8601 UTC. '
            "Deployment: docs/server.md.",
        },
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "A token from `flightlog token create`."},
                "session": {
                    "type": "apiKey",
                    "in": "cookie",
                    "name": "flightlog_session",
                    "description": "Set by POST /api/v1/session (the web UI).",
                },
            },
        },
        "security": [{"bearer": []}, {"session": []}],
    }
