"""The app around the pages: signing in with a token, light and dark mode, deep links, and
workload values that stay text everywhere."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.ui.workloads import Seeded


@pytest.fixture(scope="module")
def auth_server(seeded: Seeded) -> Any:
    from flightlog.server.testing import serve_in_thread

    with serve_in_thread(seeded.home, auth=True) as running:
        yield running


def test_sign_in_with_a_token_keeps_it_in_an_httponly_cookie(browser: Any, auth_server: Any, shot: Any) -> None:
    reader = auth_server.token("reader", name="ui-test")
    context = browser.new_context(base_url=auth_server.url, viewport={"width": 1200, "height": 800})
    page = context.new_page()
    try:
        page.goto("/projects/sweep")
        form = page.locator(".signin-form")
        expect(form).to_be_visible()
        shot(page, "sign-in")
        page.locator("#token").fill("flt_not-a-real-token")
        form.get_by_role("button", name="Sign in").click()
        expect(form.locator(".form-error")).to_contain_text("not valid")
        page.locator("#token").fill(reader)
        form.get_by_role("button", name="Sign in").click()
        expect(page.locator("#run-count")).to_have_text("37 runs")  # back on the page the link named
        expect(page).to_have_url(re.compile(r"/projects/sweep$"))
        expect(page.locator(".who")).to_contain_text("reader")
        cookies = {c["name"]: c for c in context.cookies()}
        assert cookies["flightlog_session"]["httpOnly"] and cookies["flightlog_session"]["sameSite"] == "Strict"
        assert "flightlog_session" not in page.evaluate("document.cookie")
        # a reader cannot write: adding a note says so instead of failing silently
        page.goto("/projects/vision")
        page.locator(".runs-table .run-link").first.click()
        page.locator("textarea[name=note]").fill("from a reader")
        page.get_by_role("button", name="Add note").click()
        expect(page.locator("#notes .form-error")).to_contain_text("reader")
        page.get_by_role("button", name="Sign out").click()
        expect(page.locator(".signin-form")).to_be_visible()
        page.reload()
        expect(page.locator(".signin-form")).to_be_visible()
    finally:
        context.close()


def test_dark_mode_is_readable_and_remembered(page: Any, shot: Any) -> None:
    page.goto("/projects/sweep")
    expect(page.locator(".runs-table .row[data-run]").first).to_be_visible()
    toggle = page.locator("#theme-toggle")
    html = page.locator("html")
    expect(html).to_have_attribute("data-theme", "light")  # headless Chromium prefers light
    toggle.click()  # system → light
    toggle.click()  # light → dark
    expect(html).to_have_attribute("data-theme", "dark")
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    fg = page.evaluate("getComputedStyle(document.body).color")
    assert luminance(bg) < 0.1 < 0.6 < luminance(fg), (bg, fg)
    shot(page, "runs-table-dark", full_page=False)
    page.reload()
    expect(html).to_have_attribute("data-theme", "dark")
    page.goto(f"{page.url.split('/projects')[0]}/projects/vision")
    expect(html).to_have_attribute("data-theme", "dark")
    toggle.click()  # dark → system
    expect(html).to_have_attribute("data-theme", "light")


def test_dark_mode_follows_the_system(browser: Any, server: Any, seeded: Seeded) -> None:
    context = browser.new_context(base_url=server.url, color_scheme="dark")
    page = context.new_page()
    try:
        page.goto(f"/projects/vision/runs/{seeded.good}/metrics")
        expect(page.locator("html")).to_have_attribute("data-theme", "dark")
        expect(page.locator("[data-metric=loss] canvas")).to_be_visible()
    finally:
        context.close()


def luminance(css: str) -> float:
    r, g, b = (int(v) / 255 for v in re.findall(r"\d+", css)[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_deep_links_open_the_view_they_name(page: Any, seeded: Seeded) -> None:
    page.goto(
        "/projects/sweep?filter=tags.team+%3D+%27vision%27&sort=-metrics.acc&group=params.lr&cols=params.lr,metrics.acc"
    )
    expect(page.locator("#filter")).to_have_value("tags.team = 'vision'")
    expect(page.locator("#group-by")).to_have_value("params.lr")
    expect(page.locator(".runs-table .group-row")).to_have_count(3)
    expect(page.locator(".runs-table .row.head")).not_to_contain_text("optimizer")
    expect(page.locator(".runs-table .row.head [aria-sort=descending]")).to_contain_text("acc")

    page.goto(f"/projects/vision/runs/{seeded.report}/logs?level=error&q=column")
    expect(page.locator("select[name=level]")).to_have_value("error")
    expect(page.locator("input[name=q]")).to_have_value("column")
    expect(page.locator(".log-list .log-row")).to_have_count(1)

    page.goto(f"/projects/vision/runs/{seeded.good}/metrics?x=relative&log=1&smooth=0.5")
    expect(page.locator(".segmented button.on")).to_have_text("Time since start")
    expect(page.locator("label.toggle", has_text="Log scale").locator("input")).to_be_checked()

    page.goto(f"/projects/vision/runs/{seeded.report}/artifacts?path=predictions.csv")
    expect(page.locator("#preview [data-preview=csv]")).to_be_visible()

    # back and forward move between views
    page.go_back()
    expect(page.locator("input[name=smoothing]")).to_have_value("0.5")
    page.go_forward()
    expect(page.locator("#preview [data-preview=csv]")).to_be_visible()

    page.goto("/no/such/page")
    expect(page.locator("h1")).to_have_text("Not found")
    page.goto("/runs/ffffffffffff")
    expect(page.locator(".error-box")).to_contain_text("ffffffffffff")


def test_workload_values_are_text_in_the_table_and_the_run_page(page: Any) -> None:
    page.goto("/projects/sweep?sort=metrics.acc")
    first = page.locator(".runs-table .row[data-run]").first
    expect(first.locator(".run-name")).to_have_text("<img src=x onerror=alert(1)>")
    expect(first).to_contain_text("<b>bold?</b>")
    assert page.locator(".runs-table img, .runs-table b").count() == 0
    first.locator(".run-link").click()
    expect(page.locator("#run-name")).to_have_text("<img src=x onerror=alert(1)>")
    expect(page.locator(".summary-card .tag")).to_have_text("team=<script>alert(2)</script>")
    expect(page.locator("#params")).to_contain_text("<b>bold?</b>")
    assert page.locator("main img, main b, main script").count() == 0


def test_the_page_s_first_request_starts_inline_under_the_policy_and_the_app_takes_its_answer(page: Any) -> None:
    """The inline script (frontend/vite.config.ts) runs under the page's Content-Security-Policy
    (named there by its SHA-256) and asks for the runs table's first page while the app's code
    loads; the app takes that answer instead of asking again: one request for the URL."""
    asked: list[str] = []
    refused: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/api/v1/runs?" in r.url else None)
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto("/projects/vision")
    expect(page.locator(".runs-table .row[data-run]").first).to_be_visible()
    assert page.evaluate("window.__flightlogPrefetch instanceof Map"), "the inline script did not run"
    assert page.evaluate("window.__flightlogPrefetch.size") == 0, "the app did not take the prefetched answer"
    assert len(asked) == 1 and "project=vision" in asked[0], asked
    assert not refused, refused
