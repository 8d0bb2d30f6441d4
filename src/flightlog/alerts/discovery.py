"""Where the rules file is: found without loading the rule kinds, so a run with no rules file
(most runs) pays nothing for alerting (``flightlog run`` checks this at every start)."""

from __future__ import annotations

import os
from pathlib import Path

from flightlog.errors import NotFound

__all__ = ["discover", "FILE_NAME", "HOME_FILE_NAME"]

FILE_NAME = "flightlog.alerts.yaml"
HOME_FILE_NAME = "alerts.yaml"


def discover(
    explicit: str | os.PathLike[str] | None = None, *, cwd: Path | None = None, home: Path | None = None
) -> Path | None:
    """The rules file to use: ``explicit``, else ./flightlog.alerts.yaml, else FLIGHTLOG_HOME/alerts.yaml."""
    if explicit is not None:
        p = Path(explicit)
        if not p.is_file():
            raise NotFound(f"no rules file at {p}")
        return p
    here = (cwd or Path.cwd()) / FILE_NAME
    if here.is_file():
        return here
    if home is None:
        from flightlog.config import Settings as FlightlogSettings

        home = FlightlogSettings.from_env().home
    at_home = home / HOME_FILE_NAME
    return at_home if at_home.is_file() else None
