"""``flightlog diagnose`` on a pipeline run: name the step (or gate) that failed, and its cause.

The pipeline run itself ran no workload; its evidence is which step failed. So its diagnosis
is the failing step's own diagnosis (logs, traceback, validation evidence, resources), with
every finding's summary saying which step it is about and the pipeline's view of it (which
steps were skipped because of it) kept under ``pipeline``.
"""

from __future__ import annotations

from typing import Any

from flightlog.errors import InvalidInput
from flightlog.pipeline.state import DONE, load_view, said_once
from flightlog.statuses import UNSUCCESSFUL_STATUSES
from flightlog.timefmt import iso

__all__ = ["diagnose_pipeline"]


def diagnose_pipeline(client: Any, run_id: str) -> dict[str, Any] | None:
    """The diagnosis report (docs/troubleshooting.md) of a pipeline run, or None when ``run_id`` is not a pipeline."""
    try:
        view = load_view(client, run_id)
    except InvalidInput:  # no pipeline definition recorded on the run
        return None
    info = view.run
    if info.parent_id is not None or "pipeline" not in info.tags:
        return None
    from flightlog.diagnose.engine import diagnose_run

    order = view.spec.order()
    failing = next((n for n in order if view.steps[n].status in UNSUCCESSFUL_STATUSES), None)
    skipped = [n for n in order if view.steps[n].status == "skipped"]
    summary = {
        "name": view.spec.name,
        "failing_step": failing,
        "gate": None,
        "step_run": None,
        "reason": None,
        "skipped_steps": skipped,
        "steps": {n: view.steps[n].status for n in order},
    }
    report: dict[str, Any] = {
        "run": info.id,
        "status": info.status,
        "kind": "none",
        "findings": [],
        "baseline": None,
        "runbook": [],
        "pipeline": summary,
    }
    if failing is None:
        if info.status in UNSUCCESSFUL_STATUSES and not all(view.steps[n].status in DONE for n in order):
            report["findings"] = [_lost_finding(info)]
            report["kind"] = "infrastructure"
        return report
    state = view.steps[failing]
    is_gate = view.spec.step(failing).kind == "gate"
    what = f"gate {failing!r}" if is_gate else f"step {failing!r}"
    summary.update(gate=failing if is_gate else None, step_run=state.run, reason=state.reason)
    if state.run is None:  # failed before a process started (a declared input missing)
        report["kind"] = "software"
        report["findings"] = [
            {
                "category": state.category or "missing_file",
                "confidence": 0.9,
                "summary": f"{what[0].upper()}{what[1:]} failed before it started: {state.reason}",
                "evidence": [{"source": "pipeline", "detail": state.reason or "", "at": iso(state.ended)}],
                "next_steps": ["Check the step's declared inputs (inputs: in the pipeline)."],
            }
        ]
        return report
    step_report = diagnose_run(client, state.run)
    blocked = f"; it stopped {', '.join(skipped)}" if skipped else ""
    pointer = {
        "source": "pipeline",
        "detail": f"{what} {state.status} (run {state.run[:12]}): {said_once(state.reason) or ''}{blocked}",
        "at": iso(state.ended),
    }
    findings = []
    for f in step_report["findings"]:
        findings.append(
            {
                **f,
                "summary": f"{what[0].upper()}{what[1:]} {state.status}: {f['summary']}",
                "evidence": [pointer, *f["evidence"]],
                "next_steps": [
                    *f["next_steps"],
                    f"Fix it, then `flightlog pipeline resume {info.id[:12]}` "
                    "re-runs only this step and what it stopped.",
                ],
            }
        )
    report.update(
        kind=step_report["kind"],
        findings=findings,
        runbook=step_report.get("runbook") or [],
        baseline=step_report.get("baseline"),  # the failing step's comparison with its last success
        step_diagnosis={"run": state.run, "status": step_report["status"]},
    )
    return report


def _lost_finding(info: Any) -> dict[str, Any]:
    return {
        "category": "killed_by_signal",
        "confidence": 0.6,
        "summary": f"The pipeline's controller ended {info.status} ({info.end_reason}) before every step ran.",
        "evidence": [
            {"source": "run", "detail": f"status {info.status}, end reason {info.end_reason}", "at": iso(info.ended)}
        ],
        "next_steps": [f"`flightlog pipeline resume {info.id[:12]}` runs what never ran."],
    }
