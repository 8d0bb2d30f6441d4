"""flightlog: every ML run carries its own evidence.

import flightlog
run = flightlog.init(project="vision", params=cfg)
run.log({"loss": loss}, step=i)
with run.stage("data_loading"):
    ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flightlog._version import __version__
from flightlog.errors import FlightlogError
from flightlog.sdk import FlightlogWarning, Run, active_run, finish, init, log

if TYPE_CHECKING:
    from flightlog.client import Client
    from flightlog.pipeline import Pipeline, step
    from flightlog.sdk.logging import FlightlogHandler, logging_handler

__all__ = [
    "Client",
    "FlightlogError",
    "FlightlogHandler",
    "FlightlogWarning",
    "Pipeline",
    "Run",
    "__version__",
    "active_run",
    "finish",
    "init",
    "log",
    "logging_handler",
    "step",
]


def __getattr__(name: str) -> Any:
    # Imported on first use so that `import flightlog` stays fast in training code.
    if name == "Client":
        from flightlog.client import Client

        return Client
    if name in ("step", "Pipeline"):  # pipelines: imported only by programs that define one
        from flightlog import pipeline as _pipeline

        return getattr(_pipeline, name)
    if name in ("logging_handler", "FlightlogHandler"):
        from flightlog.sdk import logging as _logging

        return getattr(_logging, name)
    raise AttributeError(f"module 'flightlog' has no attribute {name!r}")
