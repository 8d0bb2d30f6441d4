"""The API's operations, one module per resource; ``OPERATIONS`` is all of them, in routing order."""

from __future__ import annotations

from flightlog.diagnose import api as diagnose_api
from flightlog.pipeline import api as pipeline_api
from flightlog.server import alerts_routes
from flightlog.server.operations import Operation
from flightlog.server.routes import (
    access,
    artifacts,
    attempts,
    edits,
    events,
    ingest,
    meta,
    runs,
    stream,
)

__all__ = ["OPERATIONS"]

OPERATIONS: list[Operation] = [
    *meta.OPERATIONS,
    *access.OPERATIONS,
    *ingest.OPERATIONS,
    *runs.OPERATIONS,
    *edits.OPERATIONS,
    *attempts.OPERATIONS,
    *events.OPERATIONS,
    *stream.OPERATIONS,
    *artifacts.OPERATIONS,
    *diagnose_api.OPERATIONS,
    *pipeline_api.OPERATIONS,
    *alerts_routes.OPERATIONS,
]
