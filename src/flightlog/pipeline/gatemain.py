"""``python -m flightlog.pipeline.gatemain`` — run a gate step's checks.

Started by the controller under ``flightlog run`` like any step, so a gate has a run with its
logs and status. The checks come as JSON in ``FLIGHTLOG_GATE``: ``{"checks": [...],
"step_runs": {step: run id}}``. A validation suite's result is kept on the gate's run as
evidence kind ``validation`` (what diagnosis reads), a metric check's as kind ``gate``. Any
failed check ends the step with an exception that names it, so downstream steps never start.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from flightlog.client import Client
from flightlog.pipeline.state import GATE_FAILED
from flightlog.sdk import Run, init

__all__ = ["ExpectationFailed", "GateFailed", "main"]


class GateFailed(Exception):
    """A gate's check did not pass."""


class ExpectationFailed(GateFailed):
    """A data validation suite failed (diagnosis reads it as ``data_error``)."""


def _validate(run: Run, check: dict[str, Any]) -> str | None:
    from flightlog.data.expectfile import load_expectations
    from flightlog.data.validation import validate

    suite = load_expectations(check["expect"])
    result = validate(check["data"], suite, show_progress=False)
    d = result.to_dict()
    name = os.path.basename(check["expect"])
    run.log_evidence("validation", name, d)
    print(f"gate: validation {name} on {check['data']}: {d['passed']} of {d['evaluated']} expectations passed")
    if result.success:
        return None
    unmet = [f"{r.expectation}" + (f" on column {r.column!r}" if r.column else "") for r in result.failed]
    return f"validation {name} on {check['data']}: {len(unmet)} of {d['evaluated']} expectations not met: {'; '.join(unmet)}"


def _metric(run: Run, check: dict[str, Any], step_runs: dict[str, str]) -> str | None:
    run_id = step_runs.get(check["step"])
    value = None
    if run_id:
        client = Client()
        try:
            summary = client.metrics(run_id).get(check["metric"])
            value = summary.last if summary is not None else None
        finally:
            client.close()
    low, high = check.get("min"), check.get("max")
    problem = None
    if value is None:
        problem = f"step {check['step']} logged no metric {check['metric']!r}"
    elif low is not None and not value >= low:
        problem = f"metric {check['metric']} of step {check['step']} is {value:g}, below min {low:g}"
    elif high is not None and not value <= high:
        problem = f"metric {check['metric']} of step {check['step']} is {value:g}, above max {high:g}"
    run.log_evidence(
        "gate",
        f"metric {check['metric']}",
        {"check": check, "value": value, "run": run_id, "success": problem is None, "problem": problem},
    )
    print(f"gate: metric {check['metric']} of step {check['step']} = {value}: {'ok' if problem is None else 'FAILED'}")
    return problem


def main() -> int:
    config = json.loads(os.environ.get("FLIGHTLOG_GATE") or "{}")
    run = init(resources=False)
    problems: list[str] = []
    data_failed = False
    for check in config.get("checks") or []:
        if check.get("expect"):
            problem = _validate(run, check)
            data_failed = data_failed or problem is not None
        else:
            problem = _metric(run, check, config.get("step_runs") or {})
        if problem:
            problems.append(problem)
    if problems:
        # the gate's run reads alone (`runs show`), so it says "gate failed"; the pipeline's views,
        # which said the status already, drop it (state.said_once)
        raise (ExpectationFailed if data_failed else GateFailed)(GATE_FAILED + " | ".join(problems))
    return 0


if __name__ == "__main__":
    sys.exit(main())
