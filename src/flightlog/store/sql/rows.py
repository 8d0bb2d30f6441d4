"""The rows that several concerns of the SQL store decode alike: a run's row, a series summary.

Apart from the mixins because several decode them: run rows (``runs.py``, ``changefeed.py``) and
series summaries (``runs.py``, ``events.py``): one column list, one decoding, whoever reads.
"""

from __future__ import annotations

import json
import math
from typing import Any

from flightlog.models import MetricSummary, RunInfo

__all__ = ["RUN_COLUMNS", "metric_summary", "run_row"]

RUN_COLUMNS = (
    "id, project, name, parent_id, status, end_reason, created, queued, started, ended, "
    "exit_code, signal, attempt, host, pid, failure, timeline, updated"
)


def run_row(r: Any) -> RunInfo:
    """A row of ``RUN_COLUMNS`` → RunInfo without params, tags or metrics."""
    return RunInfo(
        id=r[0],
        project=r[1],
        name=r[2],
        parent_id=r[3],
        status=r[4],
        end_reason=r[5],
        created=r[6],
        queued=r[7],
        started=r[8],
        ended=r[9],
        exit_code=r[10],
        signal=r[11],
        attempt=r[12],
        host=r[13],
        pid=r[14],
        failure=json.loads(r[15]) if r[15] else None,
        timeline=json.loads(r[16]) if r[16] else {},
        updated=r[17],
    )


def metric_summary(row: Any) -> MetricSummary:
    """Both stores keep NaN as NULL: a series with points whose last value reads NULL ended on NaN."""
    summary = MetricSummary(*row)
    if summary.last is None and summary.count:
        summary.last = math.nan
    return summary
