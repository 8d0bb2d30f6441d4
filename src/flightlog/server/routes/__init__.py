"""The API's operations, one module per resource; ``OPERATIONS`` is all of them, in routing order.

The core's resources are listed here; a feature's operations (diagnosis, alerts, pipelines,
a third-party package's) come from the feature table (`flightlog.plugins`), after the core's,
in the features' order.
"""

from __future__ import annotations

from flightlog.plugins import Features, features
from flightlog.server.operations import Operation
from flightlog.server.routes import (
    access,
    artifacts,
    attempts,
    edits,
    events,
    ingest,
    meta,
    ranks,
    runs,
    stream,
)

__all__ = ["CORE_OPERATIONS", "OPERATIONS", "assemble"]

CORE_OPERATIONS: list[Operation] = [
    *meta.OPERATIONS,
    *access.OPERATIONS,
    *ingest.OPERATIONS,
    *runs.OPERATIONS,
    *edits.OPERATIONS,
    *attempts.OPERATIONS,
    *events.OPERATIONS,
    *ranks.OPERATIONS,
    *stream.OPERATIONS,
    *artifacts.OPERATIONS,
]


def assemble(table: Features) -> list[Operation]:
    """Every operation the server serves with the features of ``table``."""
    return [*CORE_OPERATIONS, *table.api_operations()]


OPERATIONS: list[Operation] = assemble(features())
