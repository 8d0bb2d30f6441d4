"""Diagnosis as a feature: `flightlog diagnose`, `compare`, `rightsize`, their API, and the
answers the core asks of it (a failure's category at each exit of ``flightlog run``, and
``Client.diagnose`` / ``compare`` / ``rightsize``).

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): the commands are named
lazily, and each answer imports its module inside the hook, so loading the table imports
nothing of diagnosis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from flightlog.plugins import CommandRef, hookimpl
from flightlog.plugins.operations import Operation

__all__ = [
    "flightlog_api_operations",
    "flightlog_classify_failure",
    "flightlog_cli_commands",
    "flightlog_compare_runs",
    "flightlog_diagnose_run",
    "flightlog_ended_nonfinite",
    "flightlog_judge_ranks",
    "flightlog_listing_fields",
    "flightlog_rightsize",
]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [
        CommandRef("flightlog.diagnose.cli", "diagnose_cmd", "diagnose"),
        CommandRef("flightlog.diagnose.cli", "compare_cmd", "compare"),
        CommandRef("flightlog.diagnose.cli", "rightsize_cmd", "rightsize"),
    ]


@hookimpl
def flightlog_api_operations() -> list[Operation]:
    # imported here: the API module needs Starlette (flightlog[server]), which the CLI does not
    from flightlog.diagnose.api import OPERATIONS

    return list(OPERATIONS)


@hookimpl
def flightlog_classify_failure(
    exit_code: int | None,
    signal: int | None,
    timed_out: bool,
    oom_killed: bool,
    traceback_text: str | None,
    last_lines: Sequence[str],
    memory_share: float | None,
) -> tuple[str, float]:
    # cost: the runner's exit only (the patterns are compiled on import)
    from flightlog.diagnose.classify import classify_failure

    return classify_failure(
        exit_code=exit_code,
        signal=signal,
        timed_out=timed_out,
        oom_killed=oom_killed,
        traceback_text=traceback_text,
        last_lines=list(last_lines),
        memory_share=memory_share,
    )


@hookimpl
def flightlog_ended_nonfinite(last_lines: Sequence[str]) -> tuple[str, str, str] | None:
    # cost: a succeeded exit whose last lines print a NaN or an infinity only
    from flightlog.diagnose.nanlog import ended_nonfinite

    return ended_nonfinite(last_lines)


@hookimpl
def flightlog_judge_ranks(client: Any, run_id: str, end_reason: str | None) -> dict[str, Any] | None:
    # cost: the failed exit of a distributed job only
    from flightlog.diagnose.distributed import judge_attempt

    return judge_attempt(client, run_id, end_reason=end_reason)


@hookimpl
def flightlog_diagnose_run(client: Any, run_id: str, baseline_id: str | None, auto_baseline: bool) -> dict[str, Any]:
    from flightlog.diagnose.engine import diagnose_run  # cost: a diagnosis only

    return diagnose_run(client, run_id, baseline_id, auto_baseline=auto_baseline)


@hookimpl
def flightlog_compare_runs(client: Any, run_id: str, baseline_id: str | None) -> dict[str, Any]:
    from flightlog.diagnose.compare import compare_runs  # cost: a comparison only

    return compare_runs(client, run_id, baseline_id)


@hookimpl
def flightlog_rightsize(client: Any, run: str, project: str | None) -> dict[str, Any]:
    from flightlog.diagnose.rightsize import rightsize  # cost: a right-sizing only

    return rightsize(client, run, project=project)


@hookimpl
def flightlog_listing_fields() -> dict[str, Callable[[Any], Any]]:
    from flightlog.diagnose.cause import run_cause  # light: the category a run's row already says

    return {"cause": run_cause}
