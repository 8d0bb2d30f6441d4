"""A run's overview: times and exit, the failure card, diagnosis findings, params, tags, notes,
runtime context, inputs and outputs."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
from playwright.sync_api import expect

from tests.ui.workloads import Seeded


def test_a_failed_run_shows_its_traceback(page: Any, seeded: Seeded, shot: Any) -> None:
    page.goto(f"/runs/{seeded.failed[:8]}")
    expect(page).to_have_url(
        re.compile(rf"/projects/vision/runs/{seeded.failed}$")
    )  # a prefix becomes the canonical link
    card = page.locator("#failure")
    expect(card.locator("#failure-exception")).to_have_text("FileNotFoundError")
    expect(card.locator("#failure-message")).to_contain_text("no CSV shards under")
    expect(card.locator(".chip")).to_have_text("missing file")
    frames = card.locator(".frame")
    expect(frames.first).to_contain_text("train.py:")
    expect(frames.first).to_contain_text("load")
    expect(frames.first.locator(".frame-code")).to_contain_text("raise FileNotFoundError")
    expect(card.locator("#failure-traceback")).to_be_hidden()
    card.get_by_text("Full traceback").click()
    expect(card.locator("#failure-traceback")).to_contain_text("Traceback (most recent call last)")
    card.get_by_text("Last log lines").click()
    expect(card.locator(".last-lines pre")).to_contain_text("FileNotFoundError: no CSV shards")
    expect(page.locator(".summary-card")).to_contain_text("exit code 1")
    shot(page, "failed-run-overview")
    card.get_by_role("link", name=re.compile("Warnings and errors")).click()
    expect(page).to_have_url(re.compile(r"/logs\?level=warning$"))
    expect(page.locator(".log-row").first).to_contain_text("FileNotFoundError")


def test_overview_shows_times_params_tags_context_and_inputs(page: Any, seeded: Seeded, server: Any) -> None:
    page.goto(f"/projects/vision/runs/{seeded.good}")
    summary = page.locator(".summary-card")
    for label in ("Created", "Queued", "Started", "First step", "Ended", "Duration", "Queue wait", "Exit"):
        expect(summary).to_contain_text(label)
    expect(summary).to_contain_text("exit code 0")
    expect(summary.locator(".kv-row", has_text="First step")).not_to_contain_text("—")
    expect(summary.locator(".tag")).to_have_text("owner=ci")
    params = page.locator("#params")
    expect(params.locator("tr", has_text="lr")).to_contain_text("0.5")
    expect(params.locator("tr", has_text="model.hidden")).to_contain_text("32")
    context = page.locator("#context")
    expect(context).to_contain_text("train.py")
    expect(context).to_contain_text("3.11")
    git = httpx.get(f"{server.url}/api/v1/runs/{seeded.good}/context").json().get("git")
    if git and git.get("commit"):  # the source tree is a git checkout
        expect(context.locator(".kv-row", has_text="Commit")).to_contain_text(git["commit"][:12])
    context.get_by_text(re.compile(r"\d+ installed packages")).click()
    expect(context.locator(".packages")).to_contain_text("numpy")
    io = page.locator("#io")
    expect(io.locator(".io-list").first).to_contain_text("moons")
    expect(io).to_contain_text("model.json")
    expect(io).to_contain_text("used by")  # the eval run read this model
    expect(page.locator(".outcome, .card", has_text="Latest metrics")).to_contain_text("val_acc")
    summary.locator(".tag").click()
    expect(page).to_have_url(re.compile(r"/projects/vision\?filter="))
    expect(page.locator("#run-count")).to_have_text("3 runs")  # the training runs, the failed one too


def test_add_a_note_from_the_ui(page: Any, seeded: Seeded, server: Any) -> None:
    page.goto(f"/projects/vision/runs/{seeded.report}")
    notes = page.locator("#notes")
    expect(notes).to_contain_text("calibration looks off on the val split")  # written by the SDK
    notes.locator("textarea[name=note]").fill("hypothesis: the val split drifted <i>again</i>")
    notes.locator("input[name=author]").fill("ana")
    notes.get_by_role("button", name="Add note").click()
    expect(notes.locator(".note").last).to_contain_text("hypothesis: the val split drifted <i>again</i>")
    expect(notes.locator(".note").last).to_contain_text("ana")
    expect(notes.locator("textarea[name=note]")).to_have_value("")
    stored = httpx.get(f"{server.url}/api/v1/runs/{seeded.report}/notes").json()["notes"]
    assert stored[-1]["text"] == "hypothesis: the val split drifted <i>again</i>" and stored[-1]["author"] == "ana"
    page.reload()
    expect(notes.locator(".note").last).to_contain_text("ana")  # the author's name is remembered too
    expect(notes.locator("input[name=author]")).to_have_value("ana")


def test_diagnosis_findings_show_on_the_overview(page: Any, seeded: Seeded, server: Any) -> None:
    answer = httpx.get(f"{server.url}/api/v1/runs/{seeded.failed}/diagnosis", timeout=60)
    assert answer.status_code == 200, answer.text
    report = answer.json()
    top = report["findings"][0]["category"]
    page.goto(f"/projects/vision/runs/{seeded.failed}")
    card = page.locator("#diagnosis")
    expect(card.locator(".finding").first).to_have_attribute("data-category", top)
    expect(card.locator(".finding").first).to_contain_text(top.replace("_", " "))
    expect(card.locator(".finding").first.locator(".finding-summary")).not_to_be_empty()


def test_firing_alerts_show_on_the_runs_table_and_the_run(page: Any, seeded: Seeded, server: Any) -> None:
    """The server evaluates tests/ui/conftest.py's ALERT_RULES: every failed sweep run fires
    `sweep-failed`; the failed training run's diagnosis fires (and at once resolves) `broken-environment`."""
    # the server's alert loop, however slow the machine: no clock here (pytest's timeout bounds it)
    firing: list[dict[str, Any]] = []
    while len(firing) < 5:
        firing = httpx.get(f"{server.url}/api/v1/alerts", params={"state": "firing", "project": "sweep"}).json()[
            "alerts"
        ]
        time.sleep(0.2)
    assert len(firing) == 5, firing
    page.goto("/projects/sweep")
    expect(page.locator(".runs-table .alert-chip").first).to_be_visible()
    banner = page.locator(".alert-banner")
    expect(banner).to_contain_text("5 runs have firing alerts")
    banner.get_by_role("button", name="show them").click()
    expect(page.locator("#run-count")).to_have_text("5 runs")
    assert "id in (" in page.locator("#filter").input_value()
    expect(page.locator(".runs-table .alert-chip")).to_have_count(5)
    expect(page.locator(".runs-table [data-status=failed]")).to_have_count(5)
    failed_row = page.locator(f".row[data-run='{firing[0]['run_id']}']")
    expect(failed_row.locator(".alert-chip")).to_have_attribute(
        "title", re.compile("critical · sweep-failed: sweep/sweep-")
    )

    while not httpx.get(f"{server.url}/api/v1/alerts", params={"run": seeded.failed}).json()["alerts"]:
        time.sleep(0.2)  # the diagnosis alert: pytest's timeout says when it never came
    page.goto(f"/projects/vision/runs/{seeded.failed}")
    card = page.locator("#alerts")
    expect(card.locator(".alert")).to_have_count(1)
    expect(card.locator(".alert")).to_have_attribute("data-state", "resolved")
    expect(card).to_contain_text("broken-environment")
    expect(card).to_contain_text("missing_file")
    card.get_by_text(re.compile(r"History \(\d+\)")).click()
    expect(card.locator(".alert-history tr").first).to_contain_text("broken-environment")
    page.goto(f"/projects/vision/runs/{seeded.good}")
    expect(page.locator("#params")).to_be_visible()
    expect(page.locator("#alerts")).to_have_count(0)  # no alert about this run: no card


def test_the_diagnosis_shows_the_runbook_and_the_rightsizing_its_next_step_points_to(
    page: Any, oom: str, server: Any, shot: Any
) -> None:
    report = httpx.get(f"{server.url}/api/v1/runs/{oom}/diagnosis", timeout=60).json()
    assert report["findings"][0]["category"] == "oom_killed"
    page.goto(f"/projects/oom/runs/{oom}")
    card = page.locator("#diagnosis")
    finding = card.locator(".finding").first
    expect(finding).to_have_attribute("data-category", "oom_killed")
    step = finding.locator(".next-steps li", has_text="rightsizing section")
    expect(step).to_be_visible()
    entry = card.locator("#runbook [data-entry=killed-at-memory-limit]")
    expect(entry).to_contain_text("Killed at the memory limit")
    expect(entry).to_contain_text("matched category oom_killed")
    expect(entry.locator("li").first).to_contain_text(report["runbook"][0]["advice"][0])
    step.get_by_role("button", name="rightsizing ↓").click()
    rightsizing = card.locator("#rightsizing")
    expect(rightsizing).to_be_in_viewport()
    expect(rightsizing).to_contain_text(f"request {report['rightsizing']['request']['memory']}")
    expect(rightsizing).to_contain_text("the limit was 128 MiB")
    expect(rightsizing.locator("[data-flag=killed_at_limit]")).to_contain_text("killed for memory")
    shot(card, "diagnosis-runbook-rightsizing")


def test_a_healthy_run_shows_its_rightsizing_too(page: Any, seeded: Seeded) -> None:
    page.goto(f"/projects/vision/runs/{seeded.good}")  # ran with --memory-limit 1G and used a few dozen MiB
    rightsizing = page.locator("#diagnosis #rightsizing")
    expect(rightsizing.locator("[data-flag=over_provisioned]")).to_contain_text("asked for 1.0GiB")
    expect(rightsizing).to_contain_text("the limit was 1.00 GiB")
