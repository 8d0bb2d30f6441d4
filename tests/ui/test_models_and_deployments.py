"""The Models and Deployments pages in headless Chromium against a real server, over a model
registered from real training runs, an alias moved back and forth, a deployment rolled from v1
to v2, and real serving processes (two v1 replicas, one v2 replica that ended, one v2 replica
still serving) — tests/serving/deployed.py."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog.client import Client
from flightlog.server.testing import serve_in_thread
from flightlog.serving.reading import predictions, replicas
from tests.browser import open_page
from tests.serving.conftest import poll
from tests.serving.deployed import ALERT_RULES, LIVE_REQUESTS, Deployed, deploy_with_traffic


@dataclass
class Story:
    url: str
    deployed: Deployed


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory, clean_env: None, built_ui: Path) -> Iterator[Story]:
    deployed = deploy_with_traffic(tmp_path_factory.mktemp("deploy-ui") / "home", live=True)
    try:
        with Client(deployed.home) as client:  # the live replica's run reaches the store with its first beat
            poll(lambda: any(r["state"] == "serving" for r in replicas(client, "fraud-api")), timeout=60)
            # and its sampled records (written every 0.2 s) for the drift panel
            poll(lambda: len(predictions(client, "fraud-api")) >= 80 + 40 + LIVE_REQUESTS, timeout=60)
        (deployed.home / "alerts.yaml").write_text(ALERT_RULES)  # the server evaluates them in the background
        with serve_in_thread(deployed.home) as server:
            yield Story(server.url, deployed)
    finally:
        deployed.stop()


def test_the_models_list_and_a_models_page_with_versions_aliases_and_lineage(
    browser: Any, story: Story, shot: Any
) -> None:
    from playwright.sync_api import expect

    with open_page(browser, story.url) as page:
        page.goto("/models")
        row = page.locator('.models-table tr[data-model="fraud"]')
        expect(row).to_contain_text("fraud-team")
        expect(row).to_contain_text("v2")
        expect(row.locator('.chip-alias[data-alias="production"]')).to_have_text("@production → v2")
        expect(row.locator('.chip-alias[data-alias="staging"]')).to_have_text("@staging → v2")
        shot(page, "models-list")

        row.locator("a", has_text="fraud").first.click()
        expect(page).to_have_url(f"{story.url}/models/fraud?project=fraud-team")
        expect(page.locator(".model-description")).to_have_text("card fraud scorer")
        expect(page.locator("#about")).to_contain_text("team=risk")
        versions = page.locator(".versions-table tbody tr")
        expect(versions).to_have_count(2)
        v1, v2 = (
            page.locator('.versions-table tr[data-version="1"]'),
            page.locator('.versions-table tr[data-version="2"]'),
        )
        expect(v1).to_contain_text(story.deployed.runs[1][:8])
        expect(v2).to_contain_text(story.deployed.runs[2][:8])
        expect(v2).to_contain_text("model/weights.npz")
        expect(v2.locator(".chip-alias")).to_have_count(2)  # production and staging
        expect(v1.locator(".chip-alias")).to_have_count(0)
        # production: set to 1, moved to 2 (registering v2 with --alias), back to 1, forward to 2
        moves = page.locator('.alias-history tr[data-alias="production"] .alias-move')
        expect(moves).to_have_count(4)
        expect(moves.nth(0)).to_have_text("v1 → v2")  # newest first
        expect(moves.nth(1)).to_have_text("v2 → v1")
        expect(moves.nth(3)).to_have_text("set → v1")
        expect(page.locator('.alias-history tr[data-alias="production"]').first).to_contain_text("root")
        lineage = page.locator('.lineage-row[data-version="2"]')
        expect(lineage.locator(".lineage-input")).to_contain_text("data/train.csv")
        expect(lineage.locator(".lineage-run")).to_contain_text("train fraud v2")
        expect(lineage.locator(".lineage-run")).to_contain_text("succeeded")
        shot(page, "model-page")


def test_the_deployment_timeline_shows_the_rollout_the_replica_lanes_and_the_charts(
    browser: Any, story: Story, shot: Any
) -> None:
    from playwright.sync_api import expect

    with open_page(browser, story.url) as page:
        page.goto("/deployments")
        row = page.locator('.deployments-table tr[data-endpoint="fraud-api"]')
        expect(row).to_contain_text("prod")
        expect(row.locator("td").nth(2)).to_contain_text("fraud v2")  # a version, never read as an alias
        expect(row).not_to_contain_text("fraud@v2")
        expect(row.locator("td").nth(3)).to_have_text("1")  # serving
        expect(row.locator("td").nth(4)).to_have_text("3")  # gone
        shot(page, "deployments-list")

        row.locator("a", has_text="fraud-api").click()
        expect(page.locator(".deployment-page h1")).to_contain_text("fraud-api")
        marker = page.locator(".rollout-marker")
        expect(marker).to_have_count(1)
        expect(marker).to_have_attribute("data-from", "1")
        expect(marker).to_have_attribute("data-to", "2")
        expect(marker.locator("text")).to_contain_text("v1 → v2 at")
        expect(marker.locator("text")).to_contain_text("on 2 replicas")  # the ended v2 replica and the live one
        lanes = page.locator(".replica-lane")
        expect(lanes).to_have_count(4)
        expect(page.locator('.replica-lane[data-version="1"][data-state="gone"]')).to_have_count(2)
        expect(page.locator('.replica-lane[data-version="2"][data-state="gone"]')).to_have_count(1)
        expect(page.locator('.replica-lane[data-version="2"][data-state="serving"]')).to_have_count(1)
        expect(page.locator(".replica-lane.gone .gone-mark")).to_have_count(3)
        # a lane runs from its replica's start to its end: the v1 lanes end before the v2 ones begin
        boxes = {
            v: [page.locator(f'.replica-lane[data-version="{v}"] rect').nth(i).bounding_box() for i in range(n)]
            for v, n in (("1", 2), ("2", 2))
        }
        assert max(b["x"] + b["width"] for b in boxes["1"]) <= min(b["x"] for b in boxes["2"]) + 2, boxes
        for panel in ("p99", "error-rate", "requests"):
            chart = page.locator(f'.serving-charts [data-panel="{panel}"]')
            expect(chart.locator("canvas")).to_have_count(1)
            expect(chart.locator(".u-legend")).to_contain_text("v1")
            expect(chart.locator(".u-legend")).to_contain_text("v2")
        # latencies are rounded for people (1.23 ms), never 1.2345678
        head = page.locator('.serving-charts [data-panel="p99"] .metric-head').inner_text()
        shown = re.findall(r"v\d+ (\d+(?:\.\d+)?) ms", head)
        assert len(shown) == 2 and all(len(n.partition(".")[2]) <= 2 for n in shown), head
        p99 = page.locator('.serving-charts [data-panel="p99"] .uplot')
        expect(p99).to_have_attribute("data-y-ticks", re.compile(r"\d ms"))
        ticks = [t for t in (p99.get_attribute("data-y-ticks") or "").split(" | ") if t]
        assert ticks and all(re.fullmatch(r"\d+(\.\d{1,2})? m?s", t) for t in ticks), ticks
        expect(page.locator(".desired-history tbody tr")).to_have_count(2)
        card = page.locator("#deployment-diagnosis")  # the way back (GET …/diagnosis), first on the page
        expect(card).to_have_count(1)
        expect(card.locator(".diagnosis-headline")).to_contain_text("v2")
        # the server's rule fired on v2's errors: a marker on the timeline and a line in the list
        # (once the background evaluation has run: the page is read again then)
        timeline = f"{story.url}/api/v1/deployments/fraud-api/timeline"
        poll(lambda: httpx.get(timeline, timeout=30).json()["alerts"], timeout=60, every=0.5)
        page.reload()
        expect(page.locator('.alert-marker[data-rule="fraud-errors"]')).to_have_count(1)
        expect(page.locator("#deployment-alerts li")).to_contain_text("fraud-errors")
        expect(page.locator("#deployment-alerts li")).to_contain_text("v2")
        shot(page, "deployment-timeline")


def test_the_deployment_page_answers_per_version_and_shows_live_drift(browser: Any, story: Story, shot: Any) -> None:
    from playwright.sync_api import expect

    with open_page(browser, story.url) as page:
        page.goto("/deployments/fraud-api?env=prod&project=fraud-team")
        table = page.locator("#version-stats")
        v1, v2 = table.locator('tr[data-version="1"]'), table.locator('tr[data-version="2"]')
        expect(v1.locator('[data-col="requests"]')).to_have_text("80")  # two replicas' 40 each, merged
        expect(v1.locator('[data-col="error_rate"]')).to_have_text("0%")
        expect(v2.locator('[data-col="error_rate"]')).to_have_text("10%")  # one request in ten raised
        expect(v2.locator('[data-col="error_types"]')).to_contain_text("ValueError")
        expect(v2.locator('[data-col="client_error_rate"]')).to_have_text("0%")
        p50 = [float(t.split()[0]) for t in table.locator('[data-col="p50_ms"]').all_inner_texts()]
        assert p50[1] > p50[0], p50  # v2 sleeps 4 ms, v1 1 ms
        # the charts' headers give each version's figure over its window: the table's
        head = page.locator('.serving-charts [data-panel="p99"] .metric-head').inner_text()
        for v, row in (("1", v1), ("2", v2)):
            window_p99 = row.locator('[data-col="p99_ms"]').inner_text()
            assert f"v{v} {window_p99}" in head, head
        # live drift: v2's live amounts (0..39, then 0..199) against its training data's (0..119)
        panel = page.locator("#drift-panel")
        v2_drift = panel.locator('.drift-version[data-version="2"]')
        expect(v2_drift.locator('tr[data-feature="amount"][data-test="ks"]')).to_have_attribute("data-drifted", "true")
        expect(v2_drift.locator('tr[data-feature="amount"] .training-dist')).to_contain_text("mean 59.5")
        expect(v2_drift.locator('tr[data-feature="amount"] .live-dist')).to_contain_text("mean")
        expect(v2_drift.locator('tr[data-feature="country"]')).to_have_count(0)  # hashed: not on the allow-list
        expect(v2_drift).to_contain_text("of failed requests left out")
        v1_drift = panel.locator('.drift-version[data-version="1"]')
        expect(v1_drift.locator(".drift-note")).to_contain_text("fewer than 200")
        shot(page, "deployment-versions-and-drift")


def test_replicas_are_out_of_the_runs_table_and_link_to_their_deployment(browser: Any, story: Story, shot: Any) -> None:
    from playwright.sync_api import expect

    with open_page(browser, story.url) as page:
        page.goto("/projects/fraud-team")
        rows = page.locator(".runs-table .row[data-run] .run-name")
        expect(rows).to_have_count(2)  # the two training runs; the replicas are runs of kind serving
        expect(page.locator("#run-count")).to_have_text("2 runs")
        expect(rows.first).to_contain_text("train fraud v")
        page.get_by_label("Serving replicas").check()
        expect(page).to_have_url(re.compile(r"serving=1"))
        expect(rows).to_have_count(6)
        expect(page.locator("#run-count")).to_have_text("6 runs")
        page.locator(".runs-table .row[data-run]", has_text="serve fraud-api@prod").first.locator("a").first.click()
        link = page.locator("#deployment-link")
        expect(link).to_contain_text("fraud-api (prod)")
        expect(page.locator("#serving-diagnosis")).to_contain_text("Serving replica of fraud-api (prod)")
        expect(page.locator("#diagnosis")).not_to_contain_text("training step")
        expect(page.locator("#diagnosis .finding[data-category=slow_completion]")).to_have_count(0)
        shot(page, "replica-run")
        replica_url = page.url
        # a replica's life is its traffic, not training hours: a replica that ended has no goodput
        # card on its timeline, which a training run's has
        with Client(story.deployed.home) as client:
            ended = next(r["run_id"] for r in replicas(client, "fraud-api") if r["state"] == "gone")
        page.goto(f"/projects/fraud-team/runs/{story.deployed.runs[2]}/timeline")
        expect(page.locator(".goodput")).to_be_visible()
        page.goto(f"/projects/fraud-team/runs/{ended}/timeline")
        expect(page.locator(".timeline-tab")).to_be_visible()
        page.wait_for_load_state("networkidle")
        expect(page.locator(".goodput")).to_have_count(0)
        page.goto(replica_url)
        link.click()
        expect(page.locator(".deployment-page h1")).to_contain_text("fraud-api")
