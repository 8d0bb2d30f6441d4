"""Cache-miss explanations: a pipeline re-run after one input and one param change names both as
the reasons of exactly the steps they reach, and `pipeline plan` predicted the same beforehand."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.browser import open_page
from tests.helpers import cli

import flightlog
from flightlog.server.testing import serve_in_thread

PY = sys.executable
COPY = "import sys, shutil; shutil.copyfile(sys.argv[1], sys.argv[2])\n"
TRAIN = "import os\nopen('model.txt', 'w').write(os.environ['FLIGHTLOG_STEP_PARAMS'] + open('data/train.csv').read())\n"


def _write(folder: Path, lr: float) -> Path:
    (folder / "cp_step.py").write_text(COPY)
    (folder / "train.py").write_text(TRAIN)
    path = folder / "p.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: misses
        steps:
          prepare: {{command: [{PY}, cp_step.py, data/raw.csv, data/train.csv], inputs: [data/raw.csv], outputs: [data/train.csv]}}
          train: {{command: [{PY}, train.py], needs: [prepare], params: {{lr: {lr}}}, inputs: [data/train.csv], outputs: [model.txt]}}
          evaluate: {{command: [{PY}, cp_step.py, model.txt, score.txt], needs: [train], inputs: [model.txt], outputs: [score.txt]}}
          other: {{command: [{PY}, cp_step.py, data/other.csv, other.txt], params: {{k: 1}}, inputs: [data/other.csv], outputs: [other.txt]}}
        """)
    )
    return path


def _texts(step: dict) -> list[str]:
    return [c["text"] for c in (step.get("cache_miss") or {}).get("changes") or []]


@pytest.mark.embedded_only("runs pipelines of real processes; the explanation is transport-independent")
def test_rerun_names_the_changed_input_and_param_and_plan_predicts_it(home: Path, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "raw.csv").write_text("x\n1\n")
    (tmp_path / "data" / "other.csv").write_text("y\n2\n")
    path = _write(tmp_path, 0.1)
    first = json.loads(cli(home, "pipeline", "run", str(path), "--format", "json").stdout)
    assert {s["name"]: s["status"] for s in first["steps"]} == dict.fromkeys(
        ("prepare", "train", "evaluate", "other"), "succeeded"
    )
    assert all(s["cache_miss"] is None for s in first["steps"])  # a first run has nothing to explain
    assert next(s for s in first["steps"] if s["name"] == "train")["cache_parts"]["params"] == {"lr": 0.1}

    unchanged = json.loads(cli(home, "pipeline", "plan", str(path), "--format", "json").stdout)
    assert unchanged["run"] == [] and sorted(unchanged["reuse"]) == ["evaluate", "other", "prepare", "train"]

    (tmp_path / "data" / "raw.csv").write_text("x\n1\n3\n")
    path = _write(tmp_path, 0.3)
    plan = json.loads(cli(home, "pipeline", "plan", str(path), "--format", "json").stdout)
    planned = {s["name"]: s for s in plan["steps"]}
    assert sorted(plan["run"]) == ["evaluate", "prepare", "train"] and plan["reuse"] == ["other"], plan
    assert [r["text"] for r in planned["prepare"]["reasons"]][0].startswith("input data/raw.csv content changed")
    assert {(r["part"], r["name"]) for r in planned["train"]["reasons"]} == {
        ("input", "data/train.csv"),
        ("param", "lr"),
    }
    assert "param lr 0.1 → 0.3" in [r["text"] for r in planned["train"]["reasons"]]
    assert planned["other"]["reused_run"] == next(s["run"] for s in first["steps"] if s["name"] == "other")
    text = cli(home, "pipeline", "plan", str(path)).stdout
    assert "prepare  would run" in text and "param lr 0.1 → 0.3" in text and "other  would be reused" in text, text

    second = json.loads(cli(home, "pipeline", "run", str(path), "--format", "json").stdout)
    steps = {s["name"]: s for s in second["steps"]}
    ran = sorted(n for n, s in steps.items() if s["status"] == "succeeded")
    assert ran == sorted(plan["run"]) and steps["other"]["status"] == "cached"
    assert [(c["part"], c["name"]) for c in steps["prepare"]["cache_miss"]["changes"]] == [("input", "data/raw.csv")]
    assert [(c["part"], c["name"], c["old"], c["new"]) for c in steps["train"]["cache_miss"]["changes"]][1:] == [
        ("param", "lr", 0.1, 0.3)
    ]
    assert [(c["part"], c["name"]) for c in steps["train"]["cache_miss"]["changes"]] == [
        ("input", "data/train.csv"),
        ("param", "lr"),
    ]
    assert [(c["part"], c["name"]) for c in steps["evaluate"]["cache_miss"]["changes"]] == [("input", "model.txt")]
    assert steps["other"]["cache_miss"] is None
    for name in ("prepare", "train", "evaluate"):
        assert steps[name]["cache_miss"]["previous_run"] == next(s["run"] for s in first["steps"] if s["name"] == name)

    shown = cli(home, "pipeline", "show", second["run"][:12]).stdout
    assert "input data/raw.csv content changed" in shown and "param lr 0.1 → 0.3" in shown, shown


@pytest.mark.embedded_only("runs a real pipeline")
def test_no_cache_says_so_and_plan_of_a_missing_input_fails_the_step(home: Path, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "raw.csv").write_text("x\n1\n")
    (tmp_path / "data" / "other.csv").write_text("y\n2\n")
    path = _write(tmp_path, 0.1)
    cli(home, "pipeline", "run", str(path), "--format", "json")
    plan = json.loads(cli(home, "pipeline", "plan", str(path), "--no-cache", "--format", "json").stdout)
    assert sorted(plan["run"]) == ["evaluate", "other", "prepare", "train"]
    assert "caching was off" in plan["steps"][0]["reasons"][0]["text"]
    (tmp_path / "data" / "other.csv").unlink()
    plan = json.loads(cli(home, "pipeline", "plan", str(path), "--format", "json").stdout)
    other = next(s for s in plan["steps"] if s["name"] == "other")
    assert other["action"] == "fail" and "data/other.csv does not exist" in other["reasons"][0]["text"]


@pytest.mark.embedded_only("serves the embedded store it ran on")
def test_the_api_and_the_ui_say_why_a_step_ran_again(home: Path, tmp_path: Path, browser: Any) -> None:
    def pipeline(lr: float) -> flightlog.pipeline.PipelineResult:  # type: ignore[name-defined]
        pipe = flightlog.Pipeline("again", workdir=tmp_path)
        pipe.add("prepare", [PY, "-c", "pass"])
        pipe.add("train", [PY, "-c", "pass"], params={"lr": lr}, needs=["prepare"])
        return pipe.run(quiet=True)

    first = pipeline(0.1)
    second = pipeline(0.3)
    assert second.steps["prepare"].status == "cached" and second.steps["train"].status == "succeeded"
    with serve_in_thread(home) as server:
        view = httpx.get(f"{server.url}/api/v1/runs/{second.run_id}/pipeline").json()
        train = next(s for s in view["steps"] if s["name"] == "train")
        assert train["cache_miss"]["previous_run"] == first.steps["train"].run
        assert [c["text"] for c in train["cache_miss"]["changes"]] == ["param lr 0.1 → 0.3"]

        from playwright.sync_api import expect

        with open_page(browser, server.url) as page:  # fails, never skips, without Chromium
            page.goto(f"/runs/{second.run_id}/pipeline")
            misses = page.locator(".pipeline-cache-miss")
            expect(misses).to_have_count(1)
            expect(misses.first).to_have_attribute("data-step", "train")
            expect(misses.first.locator('.cache-change[data-part="param"]')).to_have_text("param lr 0.1 → 0.3")
