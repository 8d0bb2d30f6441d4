"""Artifacts (browse, preview text/JSON/CSV/images, download, lineage graph) and the compare page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

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
