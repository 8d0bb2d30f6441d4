"""The projects page and the runs table: filter language, sorting, columns, grouping, selection,
and smooth scrolling through thousands of runs."""

from __future__ import annotations

import random
import re
import time
from typing import Any
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import expect

from tests.ui.workloads import Seeded


def names(page: Any) -> list[str]:
    return page.locator(".runs-table .row[data-run] .run-name").all_inner_texts()


def query(page: Any) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def test_projects_page_lists_projects_with_run_counts(page: Any, shot: Any) -> None:
    page.goto("/")
    row = page.locator(".projects-table tr", has_text="sweep")
    expect(row).to_contain_text("37")
    expect(page.locator(".projects-table tr", has_text="vision")).to_be_visible()
    shot(page, "projects")
    row.get_by_role("link", name="sweep").click()
    expect(page).to_have_url(re.compile(r"/projects/sweep$"))
    expect(page.locator("#run-count")).to_have_text("37 runs")


def test_runs_table_shows_status_params_and_metrics_and_sorts(page: Any, shot: Any) -> None:
    page.goto("/projects/sweep")
    expect(page.locator(".runs-table .row[data-run]").first).to_be_visible()
    head = page.locator(".runs-table .row.head")
    for label in ("Status", "Name", "Started", "Duration", "lr", "optimizer", "acc", "loss"):
        expect(head).to_contain_text(label)
    expect(page.locator(".runs-table [data-status=failed]").first).to_be_visible()
    shot(page, "runs-table", full_page=False)

    page.locator("button.sort[data-sort='metrics.acc']").click()
    expect(page.locator(".runs-table .row[data-run] .run-name").first).to_have_text("sweep-35")
    assert query(page)["sort"] == ["-metrics.acc"]
    page.locator("button.sort[data-sort='metrics.acc']").click()
    expect(page.locator(".runs-table .row[data-run] .run-name").first).to_have_text("<img src=x onerror=alert(1)>")
    assert query(page)["sort"] == ["metrics.acc"]
    expect(page.locator(".runs-table .row.head [aria-sort=ascending]")).to_contain_text("acc")

    page.locator("button.sort[data-sort='name']").click()
    expect(page.locator(".runs-table .row[data-run] .run-name").first).to_have_text("<img src=x onerror=alert(1)>")
    page.locator("button.sort[data-sort='name']").click()
    expect(page.locator(".runs-table .row[data-run] .run-name").first).to_have_text("sweep-35")


def test_the_filter_language_filters_and_mistakes_show_inline(page: Any) -> None:
    page.goto("/projects/sweep")
    box = page.locator("#filter")
    box.fill("params.lr = 0.1 and status = 'failed'")
    box.press("Enter")
    expect(page.locator("#run-count")).to_have_text("2 runs")  # sweep-03 and sweep-24
    assert sorted(names(page)) == ["sweep-03", "sweep-24"]
    assert query(page)["filter"] == ["params.lr = 0.1 and status = 'failed'"]

    box.fill("stauts = 'failed'")
    box.press("Enter")
    error = page.locator("#filter-error")
    expect(error).to_contain_text("unknown field 'stauts' (did you mean 'status'?)")
    expect(error).to_contain_text("^")
    expect(box).to_have_attribute("aria-invalid", "true")

    box.fill("tags.team = 'nlp' and metrics.acc > 0.8")  # applied after a pause in typing, too
    expect(page.locator("#filter-error")).to_have_count(0)
    expect(page.locator("#run-count")).to_have_text("7 runs")
    assert all(int(n.split("-")[1]) % 2 == 1 for n in names(page))


def test_column_picker_adds_and_removes_columns(page: Any) -> None:
    page.goto("/projects/sweep")
    expect(page.locator(".runs-table .row[data-run]").first).to_be_visible()
    page.locator("#column-picker").click()
    page.locator("input[data-field='tags.team']").check()
    page.locator("input[data-field='params.`batch size`']").check()
    page.locator("input[data-field='metrics.loss']").uncheck()
    page.keyboard.press("Escape")
    expect(page.locator(".picker-pop")).to_have_count(0)
    head = page.locator(".runs-table .row.head")
    expect(head).to_contain_text("team")
    expect(head).to_contain_text("batch size")
    expect(head).not_to_contain_text("loss")
    cols = query(page)["cols"][0].split(",")
    assert "tags.team" in cols and "params.`batch size`" in cols and "metrics.loss" not in cols
    # sorting by a backquoted key goes through the filter language's quoting
    page.locator("button.sort[data-sort='params.`batch size`']").click()
    first = page.locator(".runs-table .row[data-run]").first
    expect(first).to_contain_text("128")


def test_grouping_by_a_param_puts_runs_under_headers(page: Any) -> None:
    page.goto("/projects/sweep?group=params.optimizer")
    groups = page.locator(".runs-table .group-row")
    expect(groups).to_have_count(3)  # <b>bold?</b>, adam, sgd
    texts = groups.all_inner_texts()
    assert any("adam" in t and "18 runs" in t for t in texts), texts
    assert any("<b>bold?</b>" in t for t in texts), texts
    adam = page.locator(".runs-table .group-row", has_text="adam")
    expect(adam).to_contain_text("x̄")  # the group's mean of each metric column
    before = page.locator(".runs-table .row[data-run]").count()
    adam.locator("button.group-toggle").click()
    expect(adam.locator("button.group-toggle")).to_have_attribute("aria-expanded", "false")
    assert page.locator(".runs-table .row[data-run]").count() < before
    assert query(page)["group"] == ["params.optimizer"]


def test_selected_runs_open_the_compare_page(page: Any, seeded: Seeded) -> None:
    page.goto("/projects/vision")
    compare = page.locator("#compare-button")
    expect(compare).to_be_disabled()
    page.locator(f".row[data-run='{seeded.good}'] input[type=checkbox]").check()
    page.locator(f".row[data-run='{seeded.other}'] input[type=checkbox]").check()
    expect(compare).to_have_text("Compare (2)")
    compare.click()
    expect(page).to_have_url(
        re.compile(re.escape(f"/projects/vision/compare?runs={seeded.good}%2C{seeded.other}") + "$")
    )
    expect(page.locator("tr[data-param='lr']")).to_have_attribute("data-differs", "true")


def test_ten_thousand_runs_scroll_smoothly_with_server_paging(page: Any, server: Any) -> None:
    """A big project: the table sizes itself from the run count, keeps only the rows in view in
    the page, and fetches the pages the user scrolls to."""
    fill_big_project(server.app.state.store, runs=10_000)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "/api/v1/runs?" in r.url else None)
    started = time.perf_counter()
    page.goto("/projects/big")
    expect(page.locator(".runs-table .row[data-run]").first).to_be_visible()
    first_rows = time.perf_counter() - started
    expect(page.locator("#run-count")).to_have_text("10,000 runs")
    rendered = page.locator(".runs-table .row[data-run], .runs-table .row.placeholder").count()
    assert rendered < 80, f"{rendered} rows in the DOM: the list is not virtualized"
    assert len(requests) == 1 and "limit=100" in requests[0]
    page.locator(".runs-table").evaluate("el => { el.scrollTop = el.scrollHeight }")
    expect(page.locator(".runs-table .row[data-run] .run-name", has_text="big-00000")).to_be_visible()
    assert any("offset=99" in r for r in requests), requests  # a page near the end, not the ones in between
    assert len(requests) <= 4, requests
    page.locator("button.sort[data-sort='metrics.m0']").click()
    expect(page.locator(".runs-table .row[data-run]").first).to_be_visible()
    assert first_rows < 5, first_rows


def fill_big_project(store: Any, runs: int) -> None:
    from array import array

    from flightlog.schema.values import encode_series

    if any(p["name"] == "big" for p in store.projects()):
        return
    rng = random.Random(5)
    t0 = time.time() - runs
    batch: list[dict[str, Any]] = []
    for i in range(runs):
        rid = f"b{i:07d}{rng.getrandbits(96):024x}"
        rec = {"r": rid, "w": "ui-test", "t": t0 + i}
        batch += [
            {
                **rec,
                "k": "run",
                "s": 1,
                "project": "big",
                "name": f"big-{i:05d}",
                "status": rng.choice(["succeeded", "failed"]),
                "created": t0 + i,
                "started": t0 + i,
                "ended": t0 + i + 60,
                "host": "gpu-1",
            },
            {**rec, "k": "params", "s": 2, "data": {"lr": rng.choice([0.1, 0.01]), "seed": i}},
            {
                **rec,
                "k": "metrics",
                "s": 3,
                "attempt": 1,
                "series": {"m0": encode_series(array("q", [0]), array("d", [t0 + i]), array("d", [rng.random()]))},
            },
        ]
        if len(batch) >= 6000:
            store.ingest(batch)
            batch = []
    store.ingest(batch)
