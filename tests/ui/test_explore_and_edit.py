"""The sweep view (parallel coordinates and a params-vs-metric scatter, for a sweep or any
filter) and editing a run from its page, in a real browser over a real 20-trial sweep."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

import flightlog
from flightlog.sweeps import LogUniform, SweepResult, Trial, sweep
from tests.browser import open_page


def _train(trial: Trial) -> None:
    loss = (math.log10(trial.params["lr"]) + 2.5) ** 2 + 0.05 * trial.params["layers"]
    for step in range(3):
        trial.run.log({"val_loss": loss + 0.1 / (step + 1)}, step=step)


@pytest.fixture(scope="module")
def explore(
    tmp_path_factory: pytest.TempPathFactory, clean_env: None, built_ui: Path
) -> Iterator[tuple[Any, SweepResult]]:
    from flightlog.server.testing import serve_in_thread

    home = tmp_path_factory.mktemp("explore") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLIGHTLOG_HOME", str(home))
        result = sweep(
            _train,
            {"lr": LogUniform(1e-4, 1e-1), "layers": "int:1:4", "act": ["relu", "gelu"]},
            metric="val_loss",
            trials=20,
            project="sweeps",
            name="lr-search",
            seed=3,
        )
        with serve_in_thread(home) as server:
            yield server, result


@pytest.fixture
def tab(browser: Any, explore: tuple[Any, SweepResult]) -> Iterator[Any]:
    server, _ = explore
    with open_page(browser, server.url) as pg:
        yield pg


def test_a_sweep_run_links_to_its_parallel_coordinates_and_scatter(
    tab: Any, explore: tuple[Any, SweepResult], shot: Any
) -> None:
    _, result = explore
    tab.goto(f"/projects/sweeps/runs/{result.sweep_id}")
    tab.locator("#sweep-link").click()
    expect(tab).to_have_url(re.compile(rf"/projects/sweeps/explore\?sweep={result.sweep_id}"))
    plot = tab.locator("svg.parcoords")
    expect(plot).to_have_attribute("data-runs", "20")
    expect(plot.locator("polyline.pc-line")).to_have_count(20)
    expect(plot).to_have_attribute("data-axes", "act,layers,lr,val_loss")
    expect(plot.locator("[data-axis=lr] .pc-label")).to_have_text("lr (log)")
    expect(tab.locator("#explore-metric")).to_have_value("val_loss")  # from the sweep's own settings
    scatter = tab.locator("svg.scatter")
    expect(scatter.locator("circle.sc-dot")).to_have_count(20)
    shot(tab, "sweep-explore")

    tab.locator("#scatter-x").select_option("layers")
    expect(tab).to_have_url(re.compile(r"x=layers"))
    best = result.best
    assert best is not None and best.run_id is not None
    expect(scatter.locator(f"circle[data-run='{best.run_id}']")).to_have_count(1)
    scatter.locator(f"circle[data-run='{best.run_id}']").click()
    expect(tab).to_have_url(re.compile(rf"/projects/sweeps/runs/{best.run_id}"))
    expect(tab.locator("#run-name")).to_have_text(f"lr-search-{best.number}")


def test_explore_any_filtered_set_of_runs(tab: Any, explore: tuple[Any, SweepResult]) -> None:
    _, result = explore
    deep = [t for t in result.trials if t.params["layers"] >= 3]
    tab.goto("/projects/sweeps")
    tab.locator("#filter").fill("params.layers >= 3")
    tab.locator("#filter").press("Enter")
    tab.locator("#explore-link").click()
    expect(tab).to_have_url(re.compile(r"/projects/sweeps/explore\?filter=params\.layers"))
    expect(tab.locator("svg.parcoords")).to_have_attribute("data-runs", str(len(deep)))
    expect(tab.locator("#explore-count")).to_have_text(f"{len(deep)} runs")


def test_rename_retag_and_describe_a_run_from_its_page(tab: Any, explore: tuple[Any, SweepResult], shot: Any) -> None:
    server, result = explore
    trial = result.trials[0]
    tab.goto(f"/projects/sweeps/runs/{trial.run_id}")
    tab.locator("#edit-run").click()
    tab.locator("#edit-name").fill("lr-search-keeper")
    tab.locator("#edit-description").fill("the one to keep")
    tags = tab.locator("#edit-tags")
    expect(tags).to_have_value(re.compile(r"sweep=" + result.sweep_id))
    tags.fill(f"sweep={result.sweep_id}\ntrial=0\nverdict=keep")
    tab.locator("#edit-save").click()
    expect(tab.locator("#run-name")).to_have_text("lr-search-keeper")
    expect(tab.locator("#run-description")).to_have_text("the one to keep")
    shot(tab, "run-edited")
    info = flightlog.Client(home=server.home).run(trial.run_id or "")
    assert info.name == "lr-search-keeper"
    assert info.tags == {"sweep": result.sweep_id, "trial": "0", "verdict": "keep", "description": "the one to keep"}

    tab.locator("#edit-run").click()
    tab.locator("#edit-tags").fill("no equals sign")
    tab.locator("#edit-save").click()
    expect(tab.locator("#run-edit")).to_contain_text("write key=value")
