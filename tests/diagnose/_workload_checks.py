"""Shared assertions of the workload test modules (one module per group of categories, so
`pytest -n 2 --dist loadfile` spreads them over the workers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.diagnose.harness import Outcome, Workload, diagnose, explain, run_all, top


def outcomes_for(workloads: list[Workload], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    """Every workload of a module, run once, three at a time (they mostly wait)."""
    return run_all(workloads, Path(tmp_path_factory.mktemp("workloads")), parallel=3)


def check(outcome: Outcome) -> dict:
    report = diagnose(outcome)
    w = outcome.workload
    got, confidence = top(report, w.expect)
    assert got == w.expect, explain(outcome, report)
    for f in report["findings"]:
        assert f["summary"] and f["evidence"], f"{w.id}: a finding without words or evidence: {f}"
        assert all(e["detail"] for e in f["evidence"])
        if f["confidence"] >= 0.5:
            assert f["next_steps"], f"{w.id}: a lead without next steps: {f}"
    if w.expect == "none":
        assert all(f["confidence"] < 0.5 for f in report["findings"]), explain(outcome, report)
    else:
        assert confidence >= 0.3, explain(outcome, report)
    return report
