"""Alerts understand pipelines: failures counted per pipeline name, a step's duration against its
last successful runs (replayed with `flightlog alerts test` over real pipeline runs)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import cli

from flightlog.pipeline import load_pipeline_file, run_pipeline

PY = sys.executable

RULES = """
rules:
  - name: pipeline-keeps-failing
    kind: consecutive_failures
    count: 3
    group_by: pipeline
  - name: slow-step
    kind: duration
    factor: 2
    baseline: 10
    min_runs: 2
"""


def fired(home: Path, rules: Path, run: str) -> dict[str, list[dict[str, Any]]]:
    doc = json.loads(
        cli(home, "alerts", "test", str(rules), "--run", run, "--interval", "0.05s", "--format", "json").stdout
    )
    assert doc["errors"] == []
    out: dict[str, list[dict[str, Any]]] = {}
    for alert in doc["alerts"]:
        out.setdefault(alert["rule"], []).append(alert)
    return out


@pytest.mark.embedded_only("alert replay reads the embedded store, as in tests/alerts")
def test_consecutive_pipeline_failures_and_a_slow_step_fire(home: Path, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(
        textwrap.dedent("""
        import sys, time
        mode = open("mode").read().strip()
        if mode == "slow":
            time.sleep(3)
        if mode == "fail":
            sys.exit("ConnectionError: the feature store is down")
    """)
    )
    path = tmp_path / "p.yaml"
    path.write_text(f"name: nightly\nsteps:\n  train: {{command: [{PY}, train.py], cache: false}}\n")
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    spec = load_pipeline_file(path)

    def once(mode: str) -> Any:
        (tmp_path / "mode").write_text(mode)
        return run_pipeline(spec, quiet=True)

    once("ok")
    once("ok")
    slow = once("slow")
    [alert] = fired(home, rules, slow.steps["train"].run)["slow-step"]  # the step, against its own history
    assert alert["labels"]["pipeline"] == slow.run_id and alert["labels"]["run"] == slow.steps["train"].run

    failures = [once("fail") for _ in range(3)]
    assert all(f.status == "failed" for f in failures)
    assert "pipeline-keeps-failing" not in fired(home, rules, failures[1].run_id)
    [streak] = fired(home, rules, failures[2].run_id)["pipeline-keeps-failing"]
    assert streak["labels"] == {"project": streak["labels"]["project"], "name": "nightly"}
    assert streak["evidence"]["runs"] == [f.run_id for f in reversed(failures)]  # pipelines, not their steps
