"""Goodput of a real run whose queue wait, startup, data stall and retried attempt are known by
construction (the workload writes down its own clock), in `runs show`, the API of the Timeline
tab and `triage --goodput` with the project's price per hour."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import flightlog
from flightlog.server.testing import serve_in_thread
from flightlog.triage.goodput import goodput_report, run_goodput, summary_line
from tests.browser import open_page
from tests.helpers import child_env, cli

WORKLOAD = textwrap.dedent("""
    import json, os, sys, time
    attempt = int(os.environ["FLIGHTLOG_ATTEMPT"])
    clock = {"t0": time.time()}
    if attempt == 1:
        time.sleep(0.3)
        json.dump(clock, open(f"clock{attempt}.json", "w"))
        raise ConnectionRefusedError("feature store at 10.0.0.7:5432 refused the connection")
    import flightlog
    run = flightlog.init()
    time.sleep(0.5)  # the workload's own setup: startup
    clock["steps"] = time.time()
    for i in range(8):
        with run.stage("data_loading"):
            time.sleep(0.08)
        with run.stage("train_step"):
            time.sleep(0.04)
        run.log({"loss": 1.0 / (i + 1)}, step=i)
    clock["steps_end"] = time.time()
    json.dump(clock, open(f"clock{attempt}.json", "w"))
""")


@pytest.mark.embedded_only("runs a real workload under the runner; the measure is transport-independent")
def test_goodput_shares_of_a_run_with_known_queue_startup_stall_and_retry(home: Path, tmp_path: Path) -> None:
    (tmp_path / "work.py").write_text(WORKLOAD)
    (tmp_path / "flightlog.yaml").write_text("price_per_hour: 36\nprojects:\n  gp: {currency: EUR}\n")
    queued = time.time() - 1.0
    env = child_env(home, FLIGHTLOG_QUEUED_AT=f"{queued:.3f}")
    args = ["run", "--project", "gp", "--retries", "1", "--retry-delay", "0.2s", "--", sys.executable, "work.py"]
    proc = cli(home, *args, env=env)
    assert proc.returncode == 0, proc.stderr
    one, two = (json.loads((tmp_path / f"clock{n}.json").read_text()) for n in (1, 2))

    client = flightlog.Client()
    info = client.runs("gp")[0]
    doc = run_goodput(client, info.id)
    seconds, total = doc["seconds"], doc["wall_seconds"]
    # the attempts' bounds as the runner recorded them (a warm runner's process predates its attempt)
    spans = {s.name: s.spans[0] for s in client.stages(info.id) if s.name.startswith("attempt ")}
    first, last = spans["attempt 1"], spans["attempt 2"]
    assert first.start < one["t0"] < first.end < last.start < two["t0"]
    expected = {
        "queued": first.start - queued,
        "retried": last.start - first.start,
        "startup": two["steps"] - last.start,  # the interpreter, flightlog.init() and the 0.5 s of setup
        "data_stall": 8 * 0.08,
        "productive": two["steps_end"] - two["steps"] - 8 * 0.08,  # the train steps' 8 x 0.04 s and the loop
    }
    for category, want in expected.items():  # each within a few percent of the whole
        assert abs(seconds[category] - want) / total < 0.03, (category, seconds, expected, total)
    assert seconds["queued"] >= 1.0 and seconds["retried"] >= 0.3 + 0.1 and seconds["startup"] >= 0.5
    assert seconds["wind_down"] / total < 0.1 and seconds["checkpoint"] == seconds["gpu_idle"] == 0
    assert 2.5 < total < 10 and doc["goodput"] == pytest.approx(seconds["productive"] / total)
    assert doc["attempts"] == 2 and doc["gpus"] == 0 and doc["gpu_hours"] == 0
    assert doc["summary"].startswith(f"goodput {doc['goodput']:.0%}: ") and "retried" in doc["summary"]
    assert doc["currency"] == "EUR" and doc["cost"] == pytest.approx((total - seconds["queued"]) / 3600 * 36)

    shown = cli(home, "runs", "show", info.id[:12]).stdout
    assert f"goodput     {doc['summary']}" in shown, shown
    card = json.loads(cli(home, "runs", "show", info.id[:12], "--format", "json").stdout)
    assert card["goodput"]["summary"] == doc["summary"]

    report = json.loads(cli(home, "triage", "--goodput", "--project", "gp", "--format", "json").stdout)
    assert report["runs"] == 1 and report["top_wasters"][0]["run"] == info.id
    assert report["seconds"]["retried"] == pytest.approx(seconds["retried"], abs=0.05)
    text = cli(home, "triage", "--goodput", "--project", "gp").stdout
    assert "runs that wasted the most" in text and "data stalls" in text, text


def test_summary_line_names_the_biggest_wastes_first() -> None:
    line = summary_line({"productive": 71, "startup": 12, "data_stall": 9, "retried": 8, "queued": 0.1})
    assert line == "goodput 71%: 12% startup, 9% data stalls, 8% retried"
    assert summary_line({}) == "goodput -: no time recorded"


def test_bad_input_is_a_clear_message(home: Path) -> None:
    client = flightlog.Client()
    with flightlog.init(project="known"):
        pass
    bad = cli(home, "triage", "--goodput", "--project", "nope", check=False)
    assert bad.returncode == 1 and "no project 'nope'" in bad.stderr and "known" in bad.stderr
    bad = cli(home, "triage", "--goodput", "-p", "known", "--since", "last tuesday", check=False)
    assert bad.returncode == 1 and "invalid --since 'last tuesday'" in bad.stderr
    bad = cli(home, "triage", "--goodput", "-p", "known", "--pipeline", "nightly", check=False)
    assert bad.returncode == 1 and "no runs of pipeline 'nightly'" in bad.stderr
    later = time.time() + 1.0  # a window that opens after the project's only run was created
    empty = goodput_report(client, project="known", since=later, pipeline=None)
    assert empty["runs"] == 0 and empty["message"] == "no runs in project 'known' in that time"


@pytest.mark.embedded_only("serves the embedded store it ran on")
def test_the_api_and_the_timeline_tab_show_the_goodput_line(home: Path, browser: Any) -> None:
    with flightlog.init(project="ui") as run:
        time.sleep(0.2)  # startup
        for i in range(4):
            with run.stage("data_loading"):
                time.sleep(0.05)
            with run.stage("train_step"):
                time.sleep(0.05)
            run.log({"loss": 1.0 / (i + 1)}, step=i)
    with serve_in_thread(home) as server:
        doc = httpx.get(f"{server.url}/api/v1/runs/{run.id[:10]}/goodput").json()
        assert doc["run"] == run.id and doc["seconds"]["startup"] >= 0.2 and doc["seconds"]["data_stall"] > 0.1
        assert doc["summary"].startswith("goodput ") and "startup" in doc["summary"]
        missing = httpx.get(f"{server.url}/api/v1/runs/nope/goodput")
        assert missing.status_code == 404 and missing.json()["error"]["code"]

        from playwright.sync_api import expect

        with open_page(browser, server.url) as page:  # fails, never skips, without Chromium
            page.goto(f"/projects/ui/runs/{run.id}/timeline")
            expect(page.locator(".goodput-summary")).to_have_text(doc["summary"])
            expect(page.locator('.goodput-bar [data-category="data_stall"]')).to_have_count(1)


@pytest.mark.embedded_only("runs a real pipeline")
def test_a_pipelines_goodput_sums_its_steps_and_counts_a_retried_step_as_retried(home: Path, tmp_path: Path) -> None:
    flaky = "import os, sys, time\nif not os.path.exists('once'):\n    open('once', 'w').close(); time.sleep(0.3); sys.exit(3)\n"
    (tmp_path / "flaky.py").write_text(flaky)
    pipe = flightlog.Pipeline("gp-pipe", workdir=tmp_path)
    pipe.add("prepare", [sys.executable, "-c", "pass"])
    pipe.add(
        "train", [sys.executable, "flaky.py"], needs=["prepare"], retries=1, retry_on=["code_error"], retry_delay=0.1
    )
    result = pipe.run(quiet=True)
    assert result.status == "succeeded" and len(result.steps["train"].attempts) == 2
    client = flightlog.Client()
    doc = run_goodput(client, result.run_id)
    failed_attempt = client.run(result.steps["train"].attempts[0]["run"])
    assert doc["steps"] == 3 and doc["seconds"]["retried"] >= 0.3
    assert doc["seconds"]["retried"] == pytest.approx(run_goodput(client, failed_attempt.id)["wall_seconds"], rel=0.01)
    assert run_goodput(client, failed_attempt.id)["seconds"]["retried"] == pytest.approx(
        run_goodput(client, failed_attempt.id)["wall_seconds"]
    )
    report = goodput_report(client, project=None, since=None, pipeline="gp-pipe")
    assert report["runs"] == 3 and report["pipelines"]["gp-pipe"]["runs"] == 3
    assert report["seconds"]["retried"] == pytest.approx(doc["seconds"]["retried"], rel=0.01)
