"""A distributed run's page (issue 28): a lane per rank on the timeline (its steps, its stages, a
hang, its first error, its exit), the ranks' table, the logs of one rank, and the diagnosis with
the culprit first and its victims folded under it. The run is a real 2-rank torchrun job on gloo
whose rank 1 got stuck in its data read (tests/ui/workloads.py: make_distributed)."""

from __future__ import annotations

import re
from typing import Any

import httpx
from playwright.sync_api import expect


def test_the_timeline_has_a_lane_per_rank_with_steps_stages_hang_first_error_and_exit(
    page: Any, distributed: str, server: Any, shot: Any
) -> None:
    page.goto(f"/projects/dist/runs/{distributed}/timeline")
    lanes = page.locator("#rank-lanes .rank-lane")
    expect(lanes).to_have_count(2)
    zero, one = page.locator('.rank-lane[data-rank="0"]'), page.locator('.rank-lane[data-rank="1"]')
    for lane in (zero, one):
        # three steps (0, 1, 2) before rank 1 got stuck; their data_loading spans; the hang
        expect(lane.locator(".rank-step")).to_have_count(3)
        assert lane.locator('.rank-stage[data-stage="data_loading"]').count() >= 3
        expect(lane.locator(".rank-hang").first).to_be_attached()
        expect(lane.locator(".rank-exit-mark")).to_have_count(1)
    expect(zero).to_have_attribute("data-state", "failed")
    expect(zero.locator(".rank-first-error")).to_have_count(1)
    expect(zero.locator(".rank-first-error title")).to_contain_text("Timed out waiting")
    expect(one).to_have_attribute("data-state", "killed")
    expect(one.locator(".rank-first-error")).to_have_count(0)  # stopped by torchrun: no error of its own
    expect(one.locator(".rank-lane-state")).to_have_text("killed · SIGTERM")
    expect(one.locator(".rank-exit-mark title")).to_contain_text("SIGTERM")
    # the hang band is drawn before the first error: found while it happened, before the timeout
    band = one.locator(".rank-hang").first.bounding_box()
    error = zero.locator(".rank-first-error").bounding_box()
    assert band is not None and error is not None and band["x"] < error["x"]
    shot(page.locator("#rank-lanes"), "distributed-rank-lanes")


def test_the_overview_names_the_culprit_first_with_its_victims_folded_and_the_ranks_table(
    page: Any, distributed: str, shot: Any
) -> None:
    page.goto(f"/projects/dist/runs/{distributed}")
    # the failure card's traceback is rank 0's timeout: the card says whose failure it really is
    note = page.locator("#failure-culprit")
    expect(note).to_have_attribute("data-rank", "1")
    expect(note).to_contain_text("The error above is rank 0's: it only waited for rank 1.")
    finding = page.locator('#diagnosis .finding[data-category="hang"]').first
    expect(finding).to_be_visible()
    culprit = finding.locator(".culprit")
    expect(culprit).to_have_attribute("data-rank", "1")
    expect(culprit).to_contain_text("rank 1")
    expect(culprit.locator(".culprit-where")).to_contain_text(re.compile(r"job\.py:\d+"))
    expect(culprit).to_contain_text("read_shard")
    expect(culprit).to_contain_text("all_reduce #4")
    shot(page.locator("#diagnosis"), "distributed-diagnosis")
    victims = culprit.locator("details.victims")
    expect(victims.locator("summary")).to_have_text("rank 0 only waited for it (victims)")
    expect(victims.locator('.victim[data-rank="0"]')).to_be_hidden()  # folded under the culprit
    victims.locator("summary").click()
    expect(victims.locator('.victim[data-rank="0"]')).to_contain_text("Timed out waiting")
    # the culprit comes before anything about its victims
    assert page.locator("#diagnosis .finding").first.get_attribute("data-category") == "hang"
    table = page.locator("#ranks")
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(table.locator('tr[data-rank="0"]')).to_contain_text("failed")
    expect(table.locator('tr[data-rank="0"] .rank-exit')).to_have_text("exit 1")
    expect(table.locator('tr[data-rank="0"] .rank-error')).to_contain_text("Timed out waiting")
    expect(table.locator('tr[data-rank="1"] .rank-exit')).to_have_text("SIGTERM")
    expect(table.locator('tr[data-rank="1"]')).to_contain_text("culprit")
    expect(table.locator('tr[data-rank="1"] td').nth(4)).to_have_text("2")  # its last step
    shot(page, "distributed-run-overview")
    _shoot_between(page, "#diagnosis", "#ranks", "distributed-run")  # docs/images/distributed-run.png
    table.locator('tr[data-rank="1"]').get_by_role("link", name="logs").click()
    expect(page).to_have_url(re.compile(r"/logs\?rank=1$"))
    expect(page.locator("select[name=rank]")).to_have_value("1")


def test_ranks_that_failed_alike_are_named_together_with_no_culprit(
    page: Any, distributed_alike: str, shot: Any
) -> None:
    """Issue 28: both ranks failed to open their shards: the failure card and the diagnosis name
    them together, and neither is marked the culprit nor the other its victim."""
    page.goto(f"/projects/dist-alike/runs/{distributed_alike}")
    note = page.locator("#failure-culprit")
    expect(note).to_have_attribute("data-alike", "0,1")
    expect(note).to_contain_text("ranks 0 and 1 failed alike")
    finding = page.locator("#diagnosis .finding").first
    expect(finding).to_have_attribute("data-category", "missing_file")
    block = finding.locator(".culprit")
    expect(block).to_have_attribute("data-alike", "0,1")
    expect(block).to_contain_text("none caused it")
    expect(block).to_contain_text("read_shard")
    expect(block.locator("details.victims")).to_have_count(0)
    expect(page.locator("#ranks tr.rank-culprit")).to_have_count(0)
    shot(page.locator("#diagnosis"), "distributed-alike")


def test_the_logs_of_one_rank(page: Any, distributed: str, server: Any) -> None:
    page.goto(f"/projects/dist/runs/{distributed}/logs")
    rank = page.locator("select[name=rank]")
    expect(rank.locator("option")).to_have_count(3)  # all, 0, 1
    expect(page.locator(".log-row .log-rank[data-rank='0']").first).to_be_attached()
    rank.select_option("0")
    expect(page).to_have_url(re.compile(r"rank=0"))
    rows = page.locator(".log-row")
    expect(rows.first).to_be_visible()
    expect(page.locator(".log-row", has_text="Timed out waiting").first).to_be_visible()
    expect(page.locator("#rank-logs-note")).to_contain_text(
        "torchrun --tee 3"
    )  # why a plain script's prints are not a rank's
    shown = page.locator(".log-row .log-rank").all_inner_texts()
    assert shown and set(shown) == {"r0"}, shown
    api = httpx.get(f"{server.url}/api/v1/runs/{distributed}/logs", params={"rank": 0, "limit": 1000}).json()
    assert len(api["events"]) == rows.count()


def _shoot_between(page: Any, first: str, last: str, name: str) -> None:
    """A screenshot from the top of ``first`` to the bottom of ``last`` (test-artifacts/ui/NAME.png)."""
    from tests.ui.conftest import ARTIFACTS

    top, bottom = page.locator(first).bounding_box(), page.locator(last).bounding_box()
    assert top is not None and bottom is not None
    scroll = page.evaluate("window.scrollY")
    clip = {"x": 0, "y": top["y"] + scroll - 8, "width": page.viewport_size["width"],
            "height": bottom["y"] + bottom["height"] - top["y"] + 16}  # fmt: skip
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), clip=clip, full_page=True)
