"""The pipeline in the HTTP API and the web UI: the DAG drawn, steps coloured by status, a click
opens the step's run (headless Chromium against a real server, as tests/ui)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.browser import open_page

import flightlog

PY = sys.executable


def failing_pipeline(tmp_path: Path) -> flightlog.pipeline.PipelineResult:  # type: ignore[name-defined]
    pipe = flightlog.Pipeline("dag", workdir=tmp_path)
    pipe.add("prepare", [PY, "-c", "pass"])
    pipe.add("lint", [PY, "-c", "pass"])
    pipe.add("train", [PY, "-c", "raise SystemExit('diverged')"], needs=["prepare", "lint"])
    pipe.add("publish", [PY, "-c", "pass"], needs=["train"])
    return pipe.run(quiet=True)


@pytest.mark.embedded_only("serves the embedded store it ran on")
def test_the_api_returns_the_pipeline_and_refuses_a_plain_run(home: Path, tmp_path: Path, browser: Any) -> None:
    from flightlog.server.testing import serve_in_thread

    result = failing_pipeline(tmp_path)
    step_run = result.steps["prepare"].run
    with serve_in_thread(home) as server:
        view = httpx.get(f"{server.url}/api/v1/runs/{result.run_id[:10]}/pipeline").json()
        assert view["run"] == result.run_id and view["status"] == "failed"
        assert {s["name"]: s["status"] for s in view["steps"]} == {
            "prepare": "succeeded",
            "lint": "succeeded",
            "train": "failed",
            "publish": "skipped",
        }
        assert view["steps"][2]["needs"] == ["prepare", "lint"]
        plain = httpx.get(f"{server.url}/api/v1/runs/{step_run}/pipeline")
        assert plain.status_code == 400 and "is not a pipeline run" in plain.json()["error"]["message"]
        assert f"it is a step of pipeline run {result.run_id[:12]}" in plain.json()["error"]["message"]

        from playwright.sync_api import expect

        with open_page(browser, server.url) as page:  # fails, never skips, without Chromium
            page.goto(f"/runs/{result.run_id}/pipeline")
            dag = page.locator(".pipeline-dag")
            expect(dag.locator(".pipeline-step")).to_have_count(4)
            for name, status in (("prepare", "succeeded"), ("train", "failed"), ("publish", "skipped")):
                step = dag.locator(f'.pipeline-step[data-step="{name}"]')
                expect(step).to_have_attribute("data-status", status)
                expect(step).to_have_class(re.compile(f"step-{status}"))
            expect(dag.locator(".pipeline-edge")).to_have_count(3)  # prepare, lint -> train -> publish
            expect(page.locator(".pipeline-reason")).to_contain_text(["diverged"])
            dag.locator('.pipeline-step[data-step="train"]').click()
            expect(page).to_have_url(re.compile(rf"/runs/{result.steps['train'].run}$"))
            expect(page.locator(".run-meta")).to_contain_text("step of")
