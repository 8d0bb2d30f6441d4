"""flightlog: every ML run carries its own evidence.

import flightlog
run = flightlog.init(project="vision", params=cfg)
run.log({"loss": loss}, step=i)
with run.stage("data_loading"):
    ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flightlog._version import __version__
from flightlog.errors import FlightlogError
from flightlog.lazy import lazy_attributes
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


# imported on first use, so that `import flightlog` stays fast in training code (pipelines: only
# by programs that define one)
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "Client": "flightlog.client",
        "step": "flightlog.pipeline",
        "Pipeline": "flightlog.pipeline",
        "logging_handler": "flightlog.sdk.logging",
        "FlightlogHandler": "flightlog.sdk.logging",
    },
    eager=tuple(__all__),
)
