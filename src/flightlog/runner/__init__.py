"""``flightlog run``: wrap any command and attach its logs, resources, exit and failure to a run."""

from flightlog.runner.options import RunnerOptions
from flightlog.runner.outcome import Outcome, outcome_of

__all__ = ["Outcome", "RunnerOptions", "outcome_of"]
