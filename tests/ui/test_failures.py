"""The Failures page in a real browser over real runs: two causes of failure among runs that
succeeded, the biggest cause first with its sparkline, its onset and links that open its runs;
the nav entry and the window in the URL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

import flightlog
from tests.browser import open_page

QUIET: dict[str, Any] = {"quiet": True, "resources": False, "console": False}


def read_shard(root: Path, i: int) -> None:
    with open(root / str(uuid.uuid4()) / f"shard-{i}.csv"):
        pass


def lookup_user(data: Path, i: int) -> None:
    """A column the data does not have (a KeyError through pandas: the data's, unambiguously —
    a KeyError on an empty dict of the script's own reads either way)."""
    import pandas as pd

    pd.read_csv(data)[f"user_{i}"]


def _run(data: Path, fail: Any = None) -> str:
    run = flightlog.init(project="nightly", name="train", **QUIET)
    run.log_input(data)
    try:
        if fail is not None:
            fail()
    except Exception as exc:
        run.fail(exc)
    else:
        run.finish()
    return run.id


@pytest.fixture(scope="module")
def failures(tmp_path_factory: pytest.TempPathFactory, clean_env: None, built_ui: Path) -> Iterator[tuple[Any, dict]]:
    from flightlog.server.testing import serve_in_thread

    root = tmp_path_factory.mktemp("failures")
    home = root / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLIGHTLOG_HOME", str(home))
        mp.setenv("FLIGHTLOG_CONSOLE", "off")
        data = root / "data.csv"
        data.write_text("x\n1\n")
        good = [_run(data) for _ in range(2)]
        data.write_text("x\n1\n2\n")
        shards = [_run(data, lambda i=i: read_shard(root, i)) for i in range(5)]
        _run(data)
        keys = [_run(data, lambda i=i: lookup_user(data, i * 7919)) for i in range(2)]
    with serve_in_thread(home) as running:
        yield running, {"good": good, "shards": shards, "keys": keys}


def test_the_failures_page_shows_causes_with_sparklines_onsets_and_runs(browser: Any, failures: Any, shot: Any) -> None:
    server, runs = failures
    with open_page(browser, server.url) as page:
        page.goto(server.url + "/projects/nightly")
        page.locator("#nav-failures").click()  # the nav entry keeps the project
        expect(page).to_have_url(server.url + "/failures?project=nightly")
        expect(page.locator("#failures-summary")).to_contain_text("7 failures")
        groups = page.locator(".failure-group")
        expect(groups).to_have_count(2)
        first = groups.nth(0)
        expect(first).to_have_attribute("data-category", "missing_file")  # the biggest cause first
        expect(first.locator(".count")).to_have_text("5 runs")
        expect(first.locator(".signature")).to_contain_text("FileNotFoundError")
        expect(first.locator(".signature")).to_contain_text("test_failures.py:read_shard")
        expect(first.locator(".signature")).not_to_contain_text("shard-")  # masked
        expect(first.locator(".sparkline rect.bar:not(.bar-zero)")).to_have_count(1)  # all on one day
        expect(first.locator(".onset li[data-kind='data']")).to_contain_text("data.csv")
        expect(groups.nth(1)).to_have_attribute("data-category", "data_error")
        shot(page, "failures")
        first.locator(".group-run").first.click()  # the newest run of the cause
        expect(page).to_have_url(f"{server.url}/projects/nightly/runs/{runs['shards'][-1]}")
        page.go_back()
        page.get_by_role("button", name="1 day").click()
        expect(page).to_have_url(server.url + "/failures?project=nightly&since=1d")
        expect(groups).to_have_count(2)


def test_an_oom_group_shows_the_memory_figure_triage_prints(browser: Any, oom: str, server: Any) -> None:
    """Issue #29: the peak and the limit of an out-of-memory group, the figure of every report."""
    from flightlog.client import Client
    from flightlog.triage.report import triage_report

    with Client(server.home) as c:
        group = next(g for g in triage_report(c, project="oom")["groups"] if g["category"] == "oom_killed")
    memory = group["memory"]
    assert memory and memory["limit_bytes"] == 128 * 1024 * 1024, memory
    with open_page(browser, server.url) as page:
        page.goto(server.url + "/failures?project=oom")
        card = page.locator(".failure-group[data-category='oom_killed']")
        expect(card.locator(".memory")).to_have_text(memory["text"])
