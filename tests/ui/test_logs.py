"""The logs view: filters (level, stream, component, attempt), search with highlights, collapsed
tracebacks, jump to a time, download, paging through many lines, and live follow over SSE."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
from playwright.sync_api import expect

from tests.ui.workloads import Seeded, start_live

ROWS = ".log-list .log-row"


def query(page: Any) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def messages(page: Any) -> list[str]:
    return page.locator(f"{ROWS} .log-msg").all_inner_texts()


def test_log_filters_narrow_the_events(page: Any, seeded: Seeded) -> None:
    page.goto(f"/projects/vision/runs/{seeded.report}/logs")
    expect(page.locator(ROWS)).to_have_count(11)
    page.locator("select[name=level]").select_option("warning")
    expect(page.locator(ROWS)).to_have_count(3)
    assert query(page)["level"] == ["warning"]
    assert {r.get_attribute("data-level") for r in page.locator(ROWS).all()} == {"warning", "error"}
    page.locator("select[name=level]").select_option("")

    page.locator(".segmented button[data-stream=stderr]").click()
    expect(page.locator(ROWS)).to_have_count(2)
    assert {r.get_attribute("data-stream") for r in page.locator(ROWS).all()} == {"stderr"}
    page.locator(".segmented button[data-stream=stderr]").click()
    expect(page.locator(ROWS)).to_have_count(11)

    page.locator("input[name=component]").fill("data.loader")
    page.locator("input[name=component]").press("Enter")
    expect(page.locator(ROWS)).to_have_count(2)
    assert query(page)["component"] == ["data.loader"]
    page.locator("input[name=component]").fill("")
    page.locator("input[name=component]").press("Enter")

    page.locator("select[name=attempt]").select_option("1")
    expect(page.locator(ROWS)).to_have_count(3)
    assert messages(page)[0].startswith("attempt 1 starting")
    page.locator("select[name=attempt]").select_option("2")
    expect(page.locator(ROWS)).to_have_count(8)


def test_search_highlights_and_tracebacks_expand(page: Any, seeded: Seeded, shot: Any) -> None:
    page.goto(f"/projects/vision/runs/{seeded.report}/logs")
    expect(page.locator(ROWS)).to_have_count(11)
    tb = page.locator(f"{ROWS}.tb")
    expect(tb).to_have_count(1)
    expect(tb).to_contain_text("ConnectionRefusedError")
    expect(tb).to_contain_text("(traceback, 4 lines)")
    expect(tb.locator(".log-full")).to_have_count(0)
    tb.locator(".log-expand").click()
    expect(tb.locator(".log-full")).to_contain_text("Traceback (most recent call last):")
    expect(tb.locator(".log-full")).to_contain_text('raise ConnectionRefusedError(111, "Connection refused')
    shot(page, "logs", full_page=False)

    page.locator("input[name=q]").fill("feature store")
    page.locator("input[name=q]").press("Enter")
    expect(page.locator(ROWS)).to_have_count(2)
    expect(page.locator(f"{ROWS} mark").first).to_have_text("feature store")
    assert query(page)["q"] == ["feature store"]

    page.locator("input[name=q]").fill("shards|1200")
    page.locator("input[name=q]").press("Enter")
    expect(page.locator(ROWS)).to_have_count(0)  # literal text: no event says "shards|1200"
    page.locator("input[name=regex]").check()
    expect(page.locator(ROWS)).to_have_count(2)
    expect(page.locator(f"{ROWS} mark")).to_have_text(["shards", "1200"])


def test_log_text_is_never_markup(page: Any, seeded: Seeded) -> None:
    page.goto(f"/projects/vision/runs/{seeded.report}/logs")
    row = page.locator(ROWS, has_text="stays text")
    expect(row.locator(".log-msg")).to_have_text("<b>not bold</b><img src=x onerror=alert(1)> stays text")
    assert page.locator(".log-list b, .log-list img").count() == 0


def test_jump_to_a_time_then_load_earlier(page: Any, seeded: Seeded, server: Any) -> None:
    events = httpx.get(f"{server.url}/api/v1/runs/{seeded.report}/logs").json()["events"]
    target = next(e for e in events if e["message"] == "calibration error is high")["time"]
    page.goto(f"/projects/vision/runs/{seeded.report}/logs")
    expect(page.locator(ROWS)).to_have_count(11)
    page.locator("input[name=jump]").fill(target)
    page.locator("form.jump button").click()
    assert query(page)["since"]
    later = [e for e in events if e["time"] >= target]
    expect(page.locator(ROWS)).to_have_count(len(later))
    assert "attempt 1 starting" not in " ".join(messages(page))
    page.locator("#load-earlier").click()
    expect(page.locator(ROWS)).to_have_count(11)
    assert any(m.startswith("attempt 1 starting") for m in messages(page))
    page.get_by_role("button", name="From the start").click()
    assert "since" not in query(page)


def test_download_the_logs(page: Any, seeded: Seeded) -> None:
    page.goto(f"/projects/vision/runs/{seeded.report}/logs?level=info")
    expect(page.locator(ROWS)).to_have_count(10)
    with page.expect_download() as info:
        page.locator("#download-logs").click()
    download = info.value
    assert download.suggested_filename.startswith("eval-report-") and download.suggested_filename.endswith(".log")
    text = Path(download.path()).read_text(encoding="utf-8")
    assert "report written" in text and "opened 6 shards" not in text  # the filters apply
    assert "Traceback (most recent call last)" in text


def test_thousands_of_lines_page_in_and_stay_virtualized(page: Any, seeded: Seeded) -> None:
    pages: list[str] = []
    page.on("request", lambda r: pages.append(r.url) if "/logs?" in r.url else None)
    page.goto(f"/projects/vision/runs/{seeded.chatty}/logs")
    expect(page.locator(".log-status")).to_contain_text("1,000 events shown of 5,000 recorded")
    assert page.locator(ROWS).count() < 100
    for _ in range(10):
        page.locator(".log-list").evaluate("el => { el.scrollTop = el.scrollHeight }")
        if page.locator(ROWS, has_text="line 04999").count():
            break
        page.wait_for_timeout(150)
    expect(page.locator(ROWS, has_text="line 04999")).to_be_visible()
    expect(page.locator(".log-status")).to_contain_text("5,000 events shown")
    assert page.locator(ROWS).count() < 100
    assert any("cursor=" in u for u in pages)


def test_logs_follow_a_running_run_live(page: Any, seeded: Seeded, server: Any, shot: Any) -> None:
    """`flightlog run` (and the SDK inside) ship to the server over HTTP while the page follows the
    run's SSE stream: new log lines, new metric points, and the final status."""
    proc, stop = start_live(seeded.home, seeded.work, url=server.url)
    try:
        run_id = None
        deadline = time.monotonic() + 30
        while run_id is None and time.monotonic() < deadline:
            runs = httpx.get(
                f"{server.url}/api/v1/runs", params={"project": "live", "filter": "status = 'running'"}
            ).json()["runs"]
            run_id = runs[0]["id"] if runs else None
            time.sleep(0.1)
        assert run_id, "the live run never showed up"
        page.goto(f"/projects/live/runs/{run_id}/logs")
        expect(page.locator(".run-title .status")).to_have_text("running")
        expect(page.locator(".log-status .live")).to_be_visible()
        expect(page.locator("label.toggle", has_text="Follow").locator("input")).to_be_checked()
        expect(page.locator(ROWS).first).to_contain_text("tick")
        first_count = page.locator(ROWS).count()
        seen = int(re.findall(r"tick (\d+)", " ".join(messages(page)))[-1])
        expect(page.locator(ROWS, has_text=f"tick {seen + 20}")).to_be_visible(
            timeout=20_000
        )  # arrived without a reload
        assert page.locator(ROWS).count() > first_count
        shot(page, "logs-live", full_page=False)
        # the chart of a running run grows too (metric points over the same stream)
        page.get_by_role("tab", name="Metrics").click()
        head = page.locator("[data-metric=ticks] .metric-head")
        expect(head).to_contain_text("points")
        before = int(re.search(r"([\d,]+) points", head.inner_text()).group(1).replace(",", ""))  # type: ignore[union-attr]
        expect(head).not_to_contain_text(f"{before:,} points", timeout=20_000)
        page.get_by_role("tab", name="Logs").click()
        stop.touch()
        expect(page.locator(ROWS, has_text="live run done")).to_be_visible(timeout=20_000)
        expect(page.locator(".run-title .status")).to_have_text("succeeded", timeout=20_000)
    finally:
        stop.touch()
        proc.wait(timeout=60)
