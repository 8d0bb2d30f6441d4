"""Export as a feature: the per-run gauges the server's ``/metrics`` appends (``--export-run-metrics``).

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md).
"""

from __future__ import annotations

from typing import Any

from flightlog.plugins import hookimpl

__all__ = ["flightlog_metrics_text"]


def run_gauges(store: Any, project: str | None) -> str:
    """The running runs' last metric values as Prometheus gauges (``flightlog_run_*``)."""
    # here, not at the top: the table is loaded by every command, the exporter only by a server
    from flightlog.export.prometheus import render_run_gauges, running_runs

    return render_run_gauges(running_runs(store, project))


@hookimpl
def flightlog_metrics_text() -> list[Any]:
    return [run_gauges]
