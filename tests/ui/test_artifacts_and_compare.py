"""Artifacts (browse, preview text/JSON/CSV/images, download, lineage graph) and the compare page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.ui.workloads import Seeded


def test_artifacts_browse_and_preview_each_kind(page: Any, seeded: Seeded, shot: Any) -> None:
    page.goto(f"/projects/vision/runs/{seeded.report}/artifacts")
    table = page.locator(".artifact-table")
    expect(table.locator("tbody tr")).to_have_count(5)
    expect(table.locator("tr[data-artifact='model.json']")).to_contain_text("input")
    preview = page.locator("#preview")

    table.get_by_role("button", name="summary.txt").click()
    expect(page).to_have_url(re.compile(r"path=summary\.txt"))
    expect(preview.locator("[data-preview=text]")).to_have_text("accuracy 0.93\nline two <script>alert(1)</script>\n")
    assert preview.locator("script").count() == 0

    table.get_by_role("button", name="metrics.json").click()
    expect(preview.locator("[data-preview=json]")).to_contain_text('"per_class": {\n    "a": 0.9')

    table.get_by_role("button", name="predictions.csv").click()
    csv = preview.locator("[data-preview=csv]")
    expect(csv.locator("thead th")).to_have_text(["id", "label", "score"])
    expect(csv.locator("tbody tr")).to_have_count(3)
    expect(csv.locator("tbody tr").nth(2).locator("td").nth(1)).to_have_text("bird, small")

    table.get_by_role("button", name="confusion.png").click()
    img = preview.locator(".preview-image img")
    expect(img).to_have_attribute("src", re.compile(r"^blob:"))
    page.wait_for_function("img => img.complete && img.naturalWidth === 24", arg=img.element_handle())
    shot(page, "artifacts")

    table.get_by_role("button", name="model.json").click()  # recorded by log_input: content not uploaded
    expect(preview).to_contain_text("not uploaded")


def test_download_an_artifact(page: Any, seeded: Seeded) -> None:
    page.goto(f"/projects/vision/runs/{seeded.report}/artifacts?path=metrics.json")
    with page.expect_download() as info:
        page.locator(".artifact-table tr[data-artifact='metrics.json']").get_by_role("link", name="Download").click()
    assert info.value.suggested_filename == "metrics.json"
    assert '"accuracy": 0.93' in Path(info.value.path()).read_text()


def test_lineage_graph_links_producers_and_consumers(page: Any, seeded: Seeded) -> None:
    page.goto(f"/projects/vision/runs/{seeded.report}/artifacts")
    graph = page.locator("svg.lineage")
    expect(graph.locator(".lineage-self")).to_contain_text("eval-report")
    expect(graph.locator(".lineage-input")).to_contain_text("model.json")
    producer = graph.locator(".lineage-run", has_text="moons-mlp")
    expect(producer).to_contain_text("made it")
    expect(graph.locator(".lineage-output")).to_have_count(4)
    expect(graph.locator("path.lineage-edge")).to_have_count(6)
    producer.click()
    expect(page).to_have_url(re.compile(rf"/projects/vision/runs/{seeded.good}$"))
    page.get_by_role("tab", name="Artifacts").click()
    graph = page.locator("svg.lineage")
    expect(graph.locator(".lineage-run", has_text="eval-report")).to_contain_text("used it")
    expect(graph.locator(".lineage-output", has_text="checkpoint")).to_have_count(3)
    expect(graph.locator(".lineage-output", has_text="model.json")).to_have_count(1)


def test_compare_page_highlights_what_differs(page: Any, seeded: Seeded, shot: Any) -> None:
    page.goto(f"/projects/vision/compare?runs={seeded.good},{seeded.other},{seeded.failed}")
    params = page.locator("#compare-params")
    lr = params.locator("tr[data-param=lr]")
    expect(lr).to_have_attribute("data-differs", "true")
    expect(lr).to_have_class(re.compile(r"\bdiff\b"))
    expect(lr.locator("td.changed")).to_have_text(["0.1"])
    expect(params.locator("tr[data-param=batch_size]")).to_have_attribute("data-differs", "false")
    expect(params).to_contain_text("differ")
    params.locator("label.toggle", has_text="Only differences").locator("input").check()
    expect(params.locator("tr[data-param=batch_size]")).to_have_count(0)
    expect(params.locator("tr[data-param=lr]")).to_be_visible()

    metrics = page.locator("#compare-metrics")
    chart = metrics.locator("[data-metric=loss]")
    expect(chart.locator("canvas")).to_be_visible()
    expect(chart.locator(".u-legend")).to_contain_text(seeded.good[:8])
    expect(chart.locator(".u-legend")).to_contain_text(seeded.other[:8])
    expect(metrics.locator("tr[data-metric=val_acc] .delta")).to_have_count(1)

    expect(page.locator("#compare-stages tr[data-stage=data_loading] td")).to_have_count(3)
    expect(page.locator("#compare-resources")).to_contain_text("RSS peak")
    inputs = page.locator("#compare-inputs tr[data-input=moons]")
    expect(inputs).to_have_attribute("data-differs", "true")  # the failed run never read its data
    expect(page.locator("#compare-context tr[data-context=command]")).to_have_attribute("class", re.compile("diff"))
    shot(page, "compare")

    page.locator(".compare-run", has_text=seeded.other[:8]).get_by_role("button", name="Make baseline").click()
    expect(page).to_have_url(re.compile(rf"runs={seeded.other}%2C"))
    expect(page.locator("#compare-params tr[data-param=lr] td.changed")).to_have_text(["0.5", "0.5"])
    page.locator(".compare-run", has_text=seeded.failed[:8]).get_by_role("button", name=re.compile("remove")).click()
    expect(page.locator(".compare-run")).to_have_count(2)


OVERFLOWING = """() => {
    const out = [];
    const doc = document.documentElement;
    if (doc.scrollWidth > doc.clientWidth) out.push(`the page scrolls sideways: ${doc.scrollWidth} > ${doc.clientWidth}`);
    for (const el of document.querySelectorAll(".compare-page .card, .compare-page .table-wrap, .compare-page .chart-card")) {
        const box = el.getBoundingClientRect();
        const name = el.id || el.closest(".card")?.id || el.className;
        if (el.scrollWidth > el.clientWidth + 1) out.push(`${name}: content ${el.scrollWidth}px wide in ${el.clientWidth}px`);
        if (box.right > doc.clientWidth) out.push(`${name}: ends at ${box.right}px, past ${doc.clientWidth}px`);
    }
    return out;
}"""


@pytest.mark.parametrize("which", ["vision", "edges"])
def test_compare_panels_fit_three_runs_at_1280_pixels(page: Any, seeded: Seeded, edges: list[str], which: str) -> None:
    runs = [seeded.good, seeded.other, seeded.failed] if which == "vision" else edges
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/projects/{which}/compare?runs={','.join(runs)}")
    expect(page.locator(".compare-run")).to_have_count(3)
    expect(page.locator("#compare-context tr[data-context=command]")).to_be_visible()
    expect(page.locator("#compare-metrics .metric-chart canvas").first).to_be_visible()
    assert page.evaluate(OVERFLOWING) == []


def series_pixels(chart: Any, color: str) -> int:
    """Pixels of the chart's canvas in a series' color (the color of its swatch)."""
    return int(
        chart.locator("canvas").evaluate(
            """(canvas, color) => {
        const [r, g, b] = color.match(/\\d+/g).map(Number);
        const px = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 0; i < px.length; i += 4)
            if (px[i + 3] > 200 && Math.abs(px[i] - r) < 8 && Math.abs(px[i + 1] - g) < 8 && Math.abs(px[i + 2] - b) < 8) n++;
        return n;
    }""",
            color,
        )
    )


def test_a_metric_logged_once_per_run_is_drawn_as_points_in_compare(page: Any, edges: list[str], shot: Any) -> None:
    page.goto(f"/projects/edges/compare?runs={','.join(edges)}")
    chart = page.locator(".metric-chart[data-metric=final_acc]")
    expect(chart).to_contain_text("3 points")
    expect(chart.locator("canvas")).to_be_visible()
    page.wait_for_timeout(300)  # the chart draws on the next animation frame
    for i in range(3):
        color = page.locator(".compare-run .swatch").nth(i).evaluate("el => getComputedStyle(el).backgroundColor")
        assert series_pixels(chart, color) > 20, f"run {i}'s only point is not drawn ({color})"
    shot(chart, "compare-single-point")


def test_a_metric_up_to_1e195_has_y_labels(page: Any, edges: list[str], shot: Any) -> None:
    for url in (
        f"/projects/edges/runs/{edges[0]}/metrics",
        f"/projects/edges/compare?runs={','.join(edges)}",
        f"/projects/edges/runs/{edges[0]}/metrics?log=1",
    ):
        page.goto(url)
        chart = page.locator(".metric-chart[data-metric=huge]")
        expect(chart.locator("canvas")).to_be_visible()
        expect(chart.locator(".uplot")).to_have_attribute("data-y-ticks", re.compile(r"e\+1\d\d"))
        ticks = chart.locator(".uplot").get_attribute("data-y-ticks").split(" | ")
        assert len([t for t in ticks if t]) >= 3, ticks
        expect(chart).to_contain_text("log scale")
        # an ordinary metric keeps its linear axis and plain labels
        loss = page.locator(".metric-chart[data-metric=loss] .uplot")
        expect(loss).to_have_attribute("data-y-ticks", re.compile(r"0\.\d"))
    shot(page.locator(".metric-chart[data-metric=huge]"), "huge-metric")


def test_one_run_is_compared_with_the_baseline_diagnose_chooses(page: Any, seeded: Seeded) -> None:
    """Issue #29: the compare page asks the server for the baseline (the one choice of
    `flightlog diagnose`, `flightlog compare` and triage) and says why that run."""
    from flightlog.client import Client
    from flightlog.diagnose.selection import baseline_for

    with Client(seeded.home) as c:
        choice = baseline_for(c, c.run(seeded.failed))
    assert choice.run is not None, choice.reason
    page.goto(f"/projects/vision/compare?runs={seeded.failed}")
    expect(page.locator("#baseline-reason")).to_contain_text(choice.reason[:60])
    head = page.locator("thead tr").first
    expect(head.locator("th.run-col").nth(0)).to_contain_text(choice.run.id[:8])
    expect(head.locator("th.run-col").nth(0).locator(".chip")).to_have_text("baseline")
    expect(head.locator("th.run-col").nth(1)).to_contain_text(seeded.failed[:8])


def test_one_run_without_a_baseline_says_why(page: Any, seeded: Seeded) -> None:
    from flightlog.client import Client
    from flightlog.diagnose.selection import baseline_for

    with Client(seeded.home) as c:
        first = c.runs(project="vision", order_by="created", limit=1)[0]
        choice = baseline_for(c, first)
    assert choice.run is None
    page.goto(f"/projects/vision/compare?runs={first.id}")
    expect(page.locator("#baseline-none")).to_contain_text(f"No baseline for run {first.id[:8]}")
    expect(page.locator("#baseline-none")).to_contain_text(choice.reason[:40])
