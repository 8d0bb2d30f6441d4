"""The pipeline tab after a resume (arrows on the DAG's edges, every attempt of every step) and
the failure card's frame order (the user's own frame first), in headless Chromium against a
real server over a pipeline run by the real CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.browser import open_page
from tests.pipeline.resumable import mend, write_pipeline
from tests.ui.workloads import flightlog


@dataclass
class Resumed:
    url: str
    run: str
    view: dict[str, Any]


@pytest.fixture(scope="module")
def resumed_pipeline(tmp_path_factory: pytest.TempPathFactory, clean_env: None, built_ui: Path) -> Iterator[Resumed]:
    """prepare → (train, check gate) → report: train and the gate fail, then `pipeline resume` passes."""
    from flightlog.server.testing import serve_in_thread

    work = tmp_path_factory.mktemp("pipeline-ui")
    home = work / "home"
    path = write_pipeline(work, "resumable", project="pipes")
    flightlog(home, "pipeline", "run", str(path), check=False, cwd=work)
    run_id = json.loads(flightlog(home, "pipeline", "ls", "--format", "json").stdout)[0]["id"]
    mend(work)
    view = json.loads(flightlog(home, "pipeline", "resume", run_id, "--format", "json", cwd=work).stdout)
    assert view["status"] == "succeeded" and view["attempt"] == 2
    with serve_in_thread(home) as server:
        yield Resumed(server.url, run_id, view)


def test_the_dag_draws_arrows_and_lists_every_attempt_across_resumes(
    browser: Any, resumed_pipeline: Resumed, shot: Any
) -> None:
    from playwright.sync_api import expect

    steps = {s["name"]: s for s in resumed_pipeline.view["steps"]}
    with open_page(browser, resumed_pipeline.url) as page:
        page.goto(f"/runs/{resumed_pipeline.run}/pipeline")
        dag = page.locator(".pipeline-dag")
        expect(dag.locator(".pipeline-step")).to_have_count(4)
        edges = dag.locator(".pipeline-edge")
        expect(edges).to_have_count(4)
        drawn = sorted(
            (edges.nth(i).get_attribute("data-from"), edges.nth(i).get_attribute("data-to")) for i in range(4)
        )
        assert drawn == [("check", "report"), ("prepare", "check"), ("prepare", "train"), ("train", "report")]
        # each edge ends in an arrowhead, at the left side of the step that needs the other
        for i in range(4):
            edge = edges.nth(i)
            assert "pipeline-arrow" in edge.evaluate("e => getComputedStyle(e).markerEnd")
            end = edge.evaluate("e => { const p = e.getPointAtLength(e.getTotalLength()); return [p.x, p.y]; }")
            target = dag.locator(f'.pipeline-step[data-step="{edge.get_attribute("data-to")}"] rect')
            box = target.evaluate(
                "r => { const m = r.getCTM(); return [m.e, m.f, r.width.baseVal.value, r.height.baseVal.value]; }"
            )
            assert abs(end[0] - box[0]) <= 3 and box[1] < end[1] < box[1] + box[3], (end, box)
        assert dag.locator("marker#pipeline-arrow path").count() == 1

        expect(page.locator(".pipeline-view > p.muted")).to_contain_text("attempt 2")
        rows = page.locator(".pipeline-attempts .pipeline-attempt")
        expect(rows).to_have_count(6)  # prepare once, train twice, check twice, report once
        for name in ("train", "check"):
            mine = page.locator(f'.pipeline-attempt[data-step="{name}"]')
            expect(mine).to_have_count(2)
            expect(mine.nth(0)).to_have_attribute("data-status", "failed")
            expect(mine.nth(1)).to_have_attribute("data-status", "succeeded")
            expect(mine.nth(0).locator("td").nth(2)).to_have_text("1")  # its pipeline attempt
            expect(mine.nth(1).locator("td").nth(2)).to_have_text("2")
            for i, attempt in enumerate(steps[name]["attempts"]):
                expect(mine.nth(i)).to_contain_text(attempt["run"][:8])
        expect(dag.locator('.pipeline-step[data-step="train"]')).to_contain_text("2 attempts")
        shot(page, "pipeline-resumed")


def test_the_failure_card_shows_the_users_innermost_frame_first(
    browser: Any, resumed_pipeline: Resumed, shot: Any
) -> None:
    from playwright.sync_api import expect

    train = next(s for s in resumed_pipeline.view["steps"] if s["name"] == "train")
    failed_run = train["attempts"][0]["run"]
    with open_page(browser, resumed_pipeline.url) as page:
        page.goto(f"/runs/{failed_run}")
        frames = page.locator(".failure-card .frame-list .frame")
        expect(frames.first).to_contain_text("train.py:9 in step")
        expect(frames.first).to_contain_text("your code")
        expect(frames.first).to_have_class("frame frame-user")
        expect(frames.nth(1)).to_contain_text("fakelib.py:7 in _check")
        expect(frames.nth(2)).to_contain_text("fakelib.py:3 in forward")
        expect(frames.nth(1)).to_have_class("frame frame-library")
        expect(frames.nth(3)).to_contain_text("train.py:12 in <module>")
        shot(page.locator(".failure-card"), "failure-card-user-frame-first")
