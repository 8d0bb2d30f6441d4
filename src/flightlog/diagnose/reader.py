"""What diagnosis reads through: the part of :class:`flightlog.Client` the engine uses.

There is one read facade, the Client: in a CLI or a script over the store its settings name
(or a server over HTTP), and inside the server over the server's own store (``Client.over``,
``ctx.client``), so the engine is one code path for the CLI, the Python API and
``GET /api/v1/runs/{run}/diagnosis``. ``Reader`` only says, for the type checker, which of its
methods diagnosis calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from flightlog.models import Artifact, LogEvent, MetricHistory, RunInfo, StageSummary

__all__ = ["Reader", "reader_home"]


class Reader(Protocol):
    def run(self, ref: Any) -> RunInfo: ...

    def runs(
        self,
        project: str | None = None,
        filter: str | None = None,
        order_by: str | None = None,
        limit: int | None = None,
    ) -> list[RunInfo]: ...

    def logs(
        self,
        run: Any,
        level: str | int | None = None,
        grep: str | None = None,
        since: str | float | None = None,
        limit: int | None = None,
        *,
        tail: bool = False,
    ) -> list[LogEvent]: ...

    def stages(self, run: Any) -> list[StageSummary]: ...

    def resources(self, run: Any) -> list[dict[str, Any]]: ...

    def evidence(self, run: Any, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]: ...

    def context(self, run: Any) -> dict[str, Any]: ...

    def artifacts(self, run: Any) -> list[Artifact]: ...

    def metric_history(self, run: Any, name: str) -> MetricHistory: ...


def reader_home(reader: Any) -> Path | None:
    """Where a team runbook may live for this reader (its Client's FLIGHTLOG_HOME), if anywhere."""
    home = getattr(reader, "home", None) or getattr(getattr(reader, "settings", None), "home", None)
    return Path(home) if home else None
