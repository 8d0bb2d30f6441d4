"""The Python SDK: runs, their writers, the background shipper and the process hooks."""

from flightlog.sdk.api import active_run, finish, init, log
from flightlog.sdk.run import FlightlogWarning, Run

__all__ = ["FlightlogWarning", "Run", "active_run", "finish", "init", "log"]
