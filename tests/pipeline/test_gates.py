"""Gates stop downstream steps with a clear reason, and diagnosis names the gate and its check."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from tests.helpers import cli

import flightlog
from flightlog.pipeline import load_pipeline_file, run_pipeline

PY = sys.executable


@pytest.mark.embedded_only("runs several processes; the transports are covered by the cache test")
def test_a_failed_validation_gate_stops_training_and_diagnose_names_it(home: Path, tmp_path: Path) -> None:
    (tmp_path / "expect.yaml").write_text("row_count: {min: 1}\ncolumns:\n  age: {between: [0, 120]}\n")
    (tmp_path / "prepare.py").write_text("open('clean.csv', 'w').write('id,age\\n1,30\\n2,250\\n3,41\\n')\n")
    path = tmp_path / "p.yaml"
    path.write_text(
        textwrap.dedent(f"""
        name: gated
        steps:
          prepare: {{command: [{PY}, prepare.py], outputs: [clean.csv]}}
          validate: {{needs: [prepare], gate: [{{expect: expect.yaml, data: clean.csv}}]}}
          train: {{needs: [validate], command: [{PY}, -c, "open('trained', 'w')"]}}
    """)
    )
    result = run_pipeline(load_pipeline_file(path), quiet=True)
    assert result.status == "failed"
    assert result.steps["validate"].status == "failed"
    assert "between on column 'age'" in (result.steps["validate"].reason or "")
    train = result.steps["train"]
    assert train.status == "skipped" and train.reason is not None and "upstream gate 'validate' failed" in train.reason
    assert not (tmp_path / "trained").exists()

    report = json.loads(cli(home, "diagnose", result.run_id[:12], "--format", "json").stdout)
    assert report["run"] == result.run_id and report["kind"] == "data"
    assert report["pipeline"]["gate"] == "validate" and report["pipeline"]["skipped_steps"] == ["train"]
    top = report["findings"][0]
    assert top["category"] == "data_error" and top["confidence"] >= 0.5
    assert top["summary"].startswith("Gate 'validate' failed")
    details = " ".join(e["detail"] for e in top["evidence"])
    assert "between on column 'age' failed: 1 unexpected rows" in details and "250" in details


@pytest.mark.embedded_only("runs several processes; the transports are covered by the cache test")
def test_a_metric_gate_reads_the_upstream_steps_metric(home: Path, tmp_path: Path) -> None:
    evaluate = tmp_path / "evaluate.py"
    pipe = flightlog.Pipeline("quality", workdir=tmp_path)
    pipe.add("evaluate", [PY, "evaluate.py"])
    pipe.add("quality", gate=[{"metric": "accuracy", "step": "evaluate", "min": 0.8}], needs=["evaluate"])
    pipe.add("publish", [PY, "-c", "open('published', 'a').write('x')"], needs=["quality"])
    evaluate.write_text("import flightlog\nflightlog.init().log({'accuracy': 0.91})\n")
    good = pipe.run(quiet=True)
    assert good.status == "succeeded" and (tmp_path / "published").read_text() == "x"

    evaluate.write_text("import flightlog\nflightlog.init().log({'accuracy': 0.71})\n")  # a worse model
    result = pipe.run(quiet=True)
    assert result.status == "failed"  # the gate read the new metric: never a cache hit on an old one
    assert result.steps["quality"].reason == "gate failed: metric accuracy of step evaluate is 0.71, below min 0.8"
    assert result.steps["publish"].status == "skipped" and (tmp_path / "published").read_text() == "x"
    report = flightlog.Client().diagnose(result.run_id)
    assert report["pipeline"]["gate"] == "quality"
    assert report["baseline"] is not None  # the gate's own last success, as for any run
    assert "below min 0.8" in report["findings"][0]["evidence"][0]["detail"]
