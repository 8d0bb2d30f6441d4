"""The runs table's headlines and the compare page's NaN: a NaN badge on runs whose metrics went
non-finite, each failed run's cause, child runs (pipeline steps, sweep trials) nested under
their parent with a toggle and a Flat switch; on compare, a number that became NaN first, a
metric a run never logged shown as such and never asked for (no 404); compact axis labels."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.ui.workloads import Seeded, flightlog, run_script, script

# A pipeline with three steps and a sweep with four trials (child runs, made with the SDK's
# `parent=` as the pipeline controller and the sweep driver make them), a healthy run with
# values up to 6e9 and down to 1e-4, and a run whose loss explodes and ends NaN ("succeeded").
NEST = r"""
import math
import flightlog

pipe = flightlog.init(project="nest", name="nightly-pipeline", resources=False, tags={"pipeline": "nightly"})
for i, step in enumerate(["prepare", "train", "evaluate"]):
    child = flightlog.init(project="nest", name=f"step-{step}", parent=pipe.id, resources=False)
    child.log({"loss": 1.0 / (i + 1)}, step=0)
    child.finish()
pipe.finish()
sweep = flightlog.init(project="nest", name="lr-sweep", resources=False)
for t, lr in enumerate([0.1, 0.01, 0.001, 0.0001]):
    trial = flightlog.init(project="nest", name=f"trial-{t}", parent=sweep.id, resources=False, params={"lr": lr})
    for s in range(5):
        trial.log({"loss": 1.0 / (s + 1 + t), "acc": 0.5 + 0.1 * s}, step=s)
    trial.finish()
sweep.finish()
good = flightlog.init(project="nest", name="healthy", resources=False, params={"lr": 0.01})
for s in range(30):
    good.log({"loss": 2.0 / (s + 1), "acc": 0.5 + s / 70, "tokens": 2e8 * s, "lr_now": 1e-4 * (1 - s / 30)}, step=s)
good.finish()
bad = flightlog.init(project="nest", name="diverged", resources=False, params={"lr": 50})
for s in range(30):
    bad.log({"loss": 2.0 * 10 ** (s / 3) if s < 25 else math.nan, "acc": 0.5, "tokens": 2e8 * s}, step=s)
bad.finish()
"""
CRASH = 'open("/data/missing/train.csv")\n'
TOP_LEVEL = ["crashes", "diverged", "healthy", "lr-sweep", "nightly-pipeline"]


@pytest.fixture(scope="module")
def nest(seeded: Seeded) -> dict[str, str]:
    """The runs of NEST plus one `flightlog run` that fails on a missing file (project "nest"), by name."""
    run_script(seeded.home, script(seeded.work, "nest.py", NEST))
    flightlog(
        seeded.home,
        "run",
        "--project",
        "nest",
        "--name",
        "crashes",
        "--",
        sys.executable,
        script(seeded.work, "crash.py", CRASH),
        check=False,
    )
    runs = json.loads(flightlog(seeded.home, "runs", "ls", "--project", "nest", "--format", "json").stdout)
    return {r["name"]: r["id"] for r in runs}


def row(page: Any, run_id: str) -> Any:
    return page.locator(f".runs-table .row[data-run='{run_id}']")


def names(page: Any) -> list[str]:
    return page.locator(".runs-table .row[data-run] .run-name").all_inner_texts()


def test_runs_table_badges_nan_runs_and_shows_the_cause(page: Any, nest: dict[str, str], shot: Any) -> None:
    page.goto("/projects/nest")
    expect(page.locator(".runs-table .row.head")).to_contain_text("Cause")
    badge = row(page, nest["diverged"]).locator(".chip-nan")
    expect(badge).to_have_text("NaN")
    expect(badge).to_have_attribute("data-nonfinite", "loss")
    expect(row(page, nest["diverged"]).locator("[data-nonfinite-value]")).to_have_text("NaN")  # the loss cell
    expect(row(page, nest["healthy"]).locator(".chip-nan")).to_have_count(0)
    expect(row(page, nest["diverged"]).locator("[data-status]")).to_have_text("succeeded")
    cause = row(page, nest["crashes"]).locator(".cause")
    expect(cause).to_have_text("missing_file")
    expect(row(page, nest["healthy"]).locator(".cause")).to_have_count(0)
    shot(page, "runs-nan-cause", full_page=False)


def test_child_runs_nest_under_their_parent_with_a_toggle_and_a_flat_switch(
    page: Any, nest: dict[str, str], shot: Any
) -> None:
    page.goto("/projects/nest")
    expect(page.locator("#run-count")).to_have_text("12 runs")
    expect(page.locator(".runs-table .row[data-run]")).to_have_count(len(TOP_LEVEL))
    assert names(page) == TOP_LEVEL, "children stay under their collapsed parent"
    toggle = row(page, nest["lr-sweep"]).locator(".nest-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    expect(toggle).to_have_text(re.compile(r"4"))
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(page.locator(".runs-table .row[data-depth='1']")).to_have_count(4)
    assert names(page) == [
        "crashes",
        "diverged",
        "healthy",
        "lr-sweep",
        "trial-0",
        "trial-1",
        "trial-2",
        "trial-3",
        "nightly-pipeline",
    ], "trials right under their sweep, in the order they ran"
    for name in ("trial-0", "trial-3"):
        expect(row(page, nest[name])).to_have_attribute("data-parent", nest["lr-sweep"])
    shot(page, "runs-nested", full_page=False)
    toggle.click()
    expect(page.locator(".runs-table .row[data-depth='1']")).to_have_count(0)

    page.locator("label.toggle", has_text="Flat").click()
    expect(page).to_have_url(re.compile(r"flat=1"))
    expect(page.locator(".runs-table .row[data-run]")).to_have_count(12)
    expect(page.locator(".nest-toggle")).to_have_count(0)
    page.locator("label.toggle", has_text="Flat").click()
    expect(page.locator(".runs-table .row[data-run]")).to_have_count(len(TOP_LEVEL))


def test_a_table_without_child_runs_has_no_nesting_controls(page: Any) -> None:
    page.goto("/projects/sweep")
    expect(page.locator(".runs-table .row[data-run]").first).to_be_visible()
    expect(page.locator(".nest-toggle")).to_have_count(0)
    expect(page.locator("label.toggle", has_text="Flat")).to_have_count(0)


def test_compare_shows_a_number_turned_nan_first(page: Any, nest: dict[str, str], shot: Any) -> None:
    ids = [nest["healthy"], nest["diverged"], nest["step-train"]]
    page.goto(f"/projects/nest/compare?runs={','.join(ids)}")
    rows = page.locator("#compare-metrics tbody tr[data-metric]")
    expect(rows.first).to_have_attribute("data-metric", "loss")  # before acc, by name it would come second
    expect(rows.first).to_have_attribute("data-nan-change", "true")
    expect(rows.first.locator("td").nth(1)).to_have_text("NaN")
    expect(rows.first.locator("th .chip-nan")).to_be_visible()
    acc = page.locator("#compare-metrics tr[data-metric=acc]")
    expect(acc).to_have_attribute("data-nan-change", "false")
    expect(acc.locator("td").nth(2)).to_have_text("not logged")  # step-train never logged acc: not "—", not NaN
    shot(page, "compare-nan-first")


def test_compare_asks_only_for_the_metrics_each_run_logged(page: Any, nest: dict[str, str]) -> None:
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on(
        "console", lambda m: failed.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None
    )
    ids = [nest["healthy"], nest["diverged"], nest["step-train"]]
    page.goto(f"/projects/nest/compare?runs={','.join(ids)}")
    for name in ("loss", "acc", "tokens", "lr_now"):
        expect(page.locator(f".metric-chart[data-metric={name}] canvas")).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert failed == [], failed
    expect(page.locator(".chart-card", has=page.locator(".metric-chart[data-metric=lr_now]"))).to_contain_text(
        "Not logged by diverged"
    )


def test_chart_axes_use_compact_labels(page: Any, nest: dict[str, str]) -> None:
    page.goto(f"/projects/nest/runs/{nest['healthy']}/metrics")
    tokens = page.locator(".metric-chart[data-metric=tokens] .uplot")
    expect(tokens).to_have_attribute("data-y-ticks", re.compile(r"\de9"))
    assert "000000" not in (tokens.get_attribute("data-y-ticks") or "")
    lr = page.locator(".metric-chart[data-metric=lr_now] .uplot")
    expect(lr).to_have_attribute("data-y-ticks", re.compile(r"^(?:[^|]*\| )*1e-4(?: \||$)"))
    assert all(
        not re.fullmatch(r"\d\.\d{3}e[-+]\d+", t) for t in (lr.get_attribute("data-y-ticks") or "").split(" | ")
    ), "no padded mantissas such as 1.000e-4"
