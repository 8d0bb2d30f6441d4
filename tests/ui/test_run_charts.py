"""Metrics (step or time axis, smoothing, log scale, zoom, hover, downsampled), resources with
stage bands, and the timeline."""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import expect

from tests.ui.workloads import Seeded


def query(page: Any) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def box_of(locator: Any) -> dict[str, float]:
    """The element's box once it is laid out (a chart is rebuilt when its options change)."""
    for _ in range(100):
        locator.wait_for()
        box = locator.bounding_box()
        if box and box["width"] > 0:
            return box  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"{locator} has no box")


def drag(page: Any, box: dict[str, float], x0: float, x1: float) -> None:
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * x0, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * (x0 + x1) / 2, y, steps=4)
    page.mouse.move(box["x"] + box["width"] * x1, y, steps=4)
    page.mouse.up()


def test_a_metric_chart_renders_with_hover_values(page: Any, seeded: Seeded, shot: Any) -> None:
    buckets: list[str] = []
    page.on("request", lambda r: buckets.append(r.url) if "/metrics/loss?" in r.url else None)
    page.goto(f"/projects/vision/runs/{seeded.good}/metrics")
    chart = page.locator("[data-metric=loss]")
    expect(chart.locator("canvas")).to_be_visible()
    expect(chart).to_contain_text("225 points")
    assert buckets and "buckets=" in buckets[0]  # the server downsamples for the chart
    for name in ("val_acc", "lr", "epoch"):
        expect(page.locator(f"[data-metric='{name}'] canvas")).to_be_visible()
    box = box_of(chart.locator(".u-over"))
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
    expect(chart.locator(".readout")).to_contain_text(re.compile(r"step \d+ · value \d"))
    shot(page, "metrics", full_page=False)


def test_chart_controls_smoothing_log_scale_x_axis_and_zoom(page: Any, seeded: Seeded) -> None:
    page.goto(f"/projects/vision/runs/{seeded.good}/metrics")
    chart = page.locator("[data-metric=loss]")
    expect(chart.locator("canvas")).to_be_visible()

    page.locator("input[name=smoothing]").evaluate(
        "el => { el.value = '0.6'; el.dispatchEvent(new Event('input', { bubbles: true })) }"
    )
    expect(page).to_have_url(re.compile(r"smooth=0\.6"))
    expect(chart.locator(".u-legend")).to_have_count(0)  # one run: the readout, not a legend
    box = box_of(chart.locator(".u-over"))
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2)
    expect(chart.locator(".readout")).to_contain_text("smoothed")

    page.locator("label.toggle", has_text="Log scale").locator("input").check()
    expect(page).to_have_url(re.compile(r"log=1"))
    expect(chart.locator("canvas")).to_be_visible()

    page.get_by_role("button", name="Time since start").click()
    assert query(page)["x"] == ["relative"]
    expect(chart.locator("canvas")).to_be_visible()
    page.get_by_role("button", name="Step", exact=True).click()
    assert "x" not in query(page)

    # drag across the chart: the server sends the detail of that step range
    box = box_of(chart.locator(".u-over"))
    with page.expect_request(re.compile(r"/metrics/loss\?.*from_step=")) as zoomed:
        drag(page, box, 0.3, 0.6)
    assert "to_step=" in zoomed.value.url
    lo, hi = map(float, query(page)["zoom"][0].split(","))
    assert 40 < lo < hi < 160
    expect(chart).not_to_contain_text("225 points")
    expect(page.locator("#reset-zoom")).to_be_visible()
    # the zoom is in the link: a reload shows the same range
    page.reload()
    expect(page.locator("#reset-zoom")).to_be_visible()
    page.locator("#reset-zoom").click()
    expect(chart).to_contain_text("225 points")
    assert "zoom" not in query(page)


def test_non_finite_values_are_marked(page: Any, seeded: Seeded) -> None:
    page.goto(f"/projects/vision/runs/{seeded.report}/metrics")
    chart = page.locator("[data-metric='val/loss']")
    expect(chart.locator("canvas")).to_be_visible()
    expect(chart).to_contain_text("41 points")
    expect(chart.locator(".text-danger")).to_have_text(re.compile(r"1 NaN/inf"))


def test_resources_show_cpu_memory_disk_network_with_stage_bands(page: Any, seeded: Seeded, shot: Any) -> None:
    page.goto(f"/projects/vision/runs/{seeded.good}/resources")
    for panel in ("cpu", "memory", "disk", "network"):
        expect(page.locator(f"[data-panel={panel}] canvas").first).to_be_visible()
    expect(page.locator("[data-panel=memory]")).to_contain_text("limit 1.00 GiB")  # flightlog run --memory-limit 1G
    expect(page.locator("[data-panel=memory] .u-legend")).to_contain_text("limit")
    legend = page.locator(".stage-legend")
    expect(legend).to_contain_text("data_loading")
    expect(legend).to_contain_text("train")
    expect(page.locator(".resources-tab")).to_contain_text("data_wait ×225")  # per-batch stages go to the timeline
    expect(page.locator(".resources-tab")).to_contain_text("no GPU was visible")
    shot(page, "resources-stage-bands", full_page=False)
    cpu = page.locator("[data-panel=cpu] canvas").first
    with_bands = cpu.screenshot()
    page.locator("label.toggle", has_text="Stage bands").locator("input").uncheck()
    expect(page.locator("label.toggle", has_text="Stage bands").locator("input")).not_to_be_checked()
    page.wait_for_timeout(200)
    assert cpu.screenshot() != with_bands  # the bands are drawn behind the series


def test_timeline_shows_queue_startup_stages_and_the_completion_tail(page: Any, seeded: Seeded, shot: Any) -> None:
    page.goto(f"/projects/vision/runs/{seeded.good}/timeline")
    gantt = page.locator("svg.gantt")
    expect(gantt).to_be_visible()
    for row in (
        "queue wait",
        "startup",
        "attempt 1",
        "data_loading",
        "train",
        "data_wait",
        "train_step",
        "evaluation",
        "checkpoint",
        "completion tail",
    ):
        expect(gantt.locator(f"[data-row='{row}']")).to_have_count(1)
    per_batch = gantt.locator("[data-row=data_wait]")
    expect(per_batch).to_contain_text(re.compile(r"225× · .* · \d+%"))  # count, total time, share of its span
    expect(per_batch.locator("title")).to_contain_text("225 times")
    expect(gantt.locator("[data-row=evaluation] rect.gantt-bar")).to_have_count(3)
    expect(gantt.locator("[data-row='queue wait'] title")).to_contain_text("queued")
    table = page.locator(".stage-table")
    expect(table.locator("tr[data-stage=train_step]")).to_contain_text("225")
    shot(page, "timeline", full_page=False)


def test_gpu_utilization_and_memory_are_charted_per_gpu(page: Any, server: Any) -> None:
    """A GPU run's samples (the shape resources/gpu.py records from NVML; this machine has no GPU)."""
    run_id = "g" + "0" * 31
    store = server.app.state.store
    if not any(p["name"] == "gpu" for p in store.projects()):
        t0 = time.time() - 60
        samples = [
            {
                "time": t0 + i,
                "cpu_percent": 95.0,
                "rss_bytes": 2 << 30,
                "cpu_count": 8,
                "gpus": [
                    {
                        "index": g,
                        "name": "NVIDIA H100",
                        "uuid": f"GPU-{g}",
                        "utilization_percent": (90 if i % 10 > 2 else 5) - g * 20,
                        "memory_used_bytes": (30 + g * 10) << 30,
                        "memory_total_bytes": 80 << 30,
                        "power_watts": 350.0,
                        "temperature_c": 60,
                        "process_memory_bytes": (30 + g * 10) << 30,
                    }
                    for g in (0, 1)
                ],
            }
            for i in range(30)
        ]
        store.ingest(
            [
                {
                    "k": "run",
                    "r": run_id,
                    "w": "ui-test",
                    "s": 1,
                    "t": t0,
                    "project": "gpu",
                    "name": "h100-job",
                    "status": "succeeded",
                    "created": t0,
                    "started": t0,
                    "ended": t0 + 30,
                },
                {"k": "resources", "r": run_id, "w": "ui-test", "s": 2, "t": t0, "samples": samples},
            ]
        )
    page.goto(f"/projects/gpu/runs/{run_id}/resources")
    for panel in ("gpu-util", "gpu-mem"):
        expect(page.locator(f"[data-panel={panel}] canvas").first).to_be_visible()
    expect(page.locator("[data-panel=gpu-util] .u-legend")).to_contain_text("GPU 0")
    expect(page.locator("[data-panel=gpu-util] .u-legend")).to_contain_text("GPU 1")
    expect(page.locator("[data-panel=gpu-mem] .u-legend")).to_contain_text("total")
    expect(page.locator(".resources-tab")).not_to_contain_text("no GPU was visible")
    box = box_of(page.locator("[data-panel=gpu-util] .u-over"))
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
    expect(page.locator("[data-panel=gpu-util] .u-legend")).to_contain_text("%")


def test_a_resumed_runs_timeline_keeps_each_attempt_apart(page: Any, resumed: str, shot: Any) -> None:
    """`flightlog run --resume`: attempt 1 failed after a checkpoint, attempt 2 ran from it. The
    first step happened in attempt 1, long before attempt 2 started: each row sits in its attempt."""
    page.goto(f"/projects/resume/runs/{resumed}/timeline")
    gantt = page.locator("svg.gantt")
    expect(gantt.locator("[data-row='attempt 2']")).to_have_count(1)
    rows = gantt.locator("g.gantt-row").evaluate_all("els => els.map(e => [e.dataset.row, e.dataset.attempt])")
    assert rows == [
        ["attempt 1", "1"],
        ["startup", "1"],
        ["data_loading", "1"],
        ["checkpoints", "1"],
        ["attempt 2", "2"],
        ["data_loading", "2"],
        ["completion tail", "2"],
    ]
    expect(gantt.locator("[data-row='attempt 1']")).to_contain_text("exit 1")
    expect(gantt.locator("[data-row='attempt 2']")).to_contain_text("exit 0")
    bands = {n: box_of(gantt.locator(f".gantt-attempt-band[data-attempt='{n}'] rect").first) for n in ("1", "2")}
    assert bands["1"]["x"] + bands["1"]["width"] < bands["2"]["x"]
    for row, attempt in rows:
        band = bands[attempt]
        for shape in (
            gantt.locator(f"g.gantt-row[data-row='{row}'][data-attempt='{attempt}']")
            .locator(".gantt-bar, .gantt-marker")
            .all()
        ):
            box = box_of(shape)
            centre = box["x"] + box["width"] / 2
            assert band["x"] - 1 <= centre <= band["x"] + band["width"] + 1, (row, attempt, box, band)
            if not box["width"] < 14:  # a marker is centred on its instant; a bar lies inside its attempt
                assert band["x"] - 1 <= box["x"] and box["x"] + box["width"] <= band["x"] + band["width"] + 1, (
                    row,
                    attempt,
                    box,
                    band,
                )
    expect(page.locator(".card", has_text="Where the time went")).to_contain_text("2 attempts over")
    shot(page, "timeline-resumed", full_page=False)

    page.get_by_role("tab", name="Overview").click()
    summary = page.locator(".summary-card")

    def row(label: str) -> Any:
        return summary.locator(".kv-row", has=page.locator("dt", has_text=re.compile(f"^{label}$")))

    expect(row("First step")).to_contain_text("(attempt 1)")
    expect(row("Started")).to_contain_text("(attempt 2)")
    attempts = summary.locator(".attempt-list li")
    expect(attempts).to_have_count(2)
    expect(attempts.nth(0)).to_contain_text("exit 1")
    expect(attempts.nth(1)).to_contain_text("exit 0")
