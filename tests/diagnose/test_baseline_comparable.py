"""Baselines that are comparable (issue #29, item 4): the same script is the same path in the
repository, never the file name alone; a run with no params in common is not comparable;
flagged runs are skipped and counted; a metric regression leads only outside the spread of
three comparable runs (or against a pinned baseline), and never above the run's own finding.
Real runs recorded by the SDK in child processes, in a real git repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flightlog.client import Client
from tests.helpers import child_env, cli

TRAIN = """
import json, sys, time
import flightlog

args = json.loads(sys.argv[1])
run = flightlog.init(project="lab", name=args.get("name"), params=args.get("params", {"lr": 0.1, "batch": 32}))
final = args.get("val_loss", 0.3)
for step in range(10):
    loss = final * (1 + 0.1 * (9 - step))
    if args.get("nan") and step >= 6:
        loss = float("nan")
    run.log({"loss": loss, "val_loss": loss}, step=step)
time.sleep(args.get("tail_s", 0))
if args.get("fail"):
    raise RuntimeError("the data shard vanished")
run.finish()
print(run.id)
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo, check=True, capture_output=True
    )


@pytest.fixture
def repo(home: Path) -> Path:
    root = home.parent / "repo"
    for folder in ("vision", "speech"):
        (root / folder).mkdir(parents=True)
        (root / folder / "train.py").write_text(TRAIN)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "two projects, one file name")
    return root


def _train(home: Path, repo: Path, script: str, check: bool = True, **args: object) -> str:
    proc = subprocess.run(
        [sys.executable, script, json.dumps(args)],
        env=child_env(home),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip().splitlines()[-1]
    return ""


def _finding(report: dict, category: str) -> dict | None:
    return next((f for f in report["findings"] if f["category"] == category), None)


@pytest.mark.embedded_only("the choice reads runs through Client; test_baseline_choice.py covers the transports")
def test_the_same_file_name_in_another_folder_is_not_the_same_script(home: Path, repo: Path) -> None:
    for i, value in enumerate((0.20, 0.21, 0.20)):
        _train(home, repo, "speech/train.py", name=f"speech-{i}", val_loss=value)
    run = _train(home, repo, "vision/train.py", name="vision-1", val_loss=0.5)
    with Client(home) as c:
        report = c.diagnose(run)
    assert report["baseline"] is None, report["baseline"]
    choice = report["baseline_choice"]
    assert choice["run"] is None and choice["script"] == "vision/train.py"
    regressed = _finding(report, "metric_regressed")
    assert regressed is None, regressed
    assert not any(f["confidence"] >= 0.5 for f in report["findings"]), report["findings"]
    # a run of the same path is comparable
    again = _train(home, repo, "vision/train.py", name="vision-2", val_loss=0.5)
    with Client(home) as c:
        base = c.diagnose(again)["baseline"]
    assert base["baseline"] == run and "same script vision/train.py" in base["reason"], base


@pytest.mark.embedded_only("the choice reads runs through Client; test_baseline_choice.py covers the transports")
def test_a_run_with_no_params_in_common_is_not_comparable(home: Path, repo: Path) -> None:
    _train(home, repo, "vision/train.py", name="nightly", params={"optimizer.kind": "adam"})
    run = _train(home, repo, "vision/train.py", name="nightly", params={"lr": 0.1})
    with Client(home) as c:
        report = c.diagnose(run)
    assert report["baseline"] is None
    assert "no params in common" in report["baseline_choice"]["reason"], report["baseline_choice"]


@pytest.mark.embedded_only("the choice reads runs through Client; test_baseline_choice.py covers the transports")
def test_flagged_runs_are_skipped_and_counted_by_why(home: Path, repo: Path) -> None:
    for _ in range(3):
        _train(home, repo, "vision/train.py", check=False, name="nightly", fail=True)
    for _ in range(2):
        _train(home, repo, "vision/train.py", name="nightly", nan=True)
    run = _train(home, repo, "vision/train.py", name="nightly")
    with Client(home) as c:
        report = c.diagnose(run)
        assert report["baseline"] is None
        choice = report["baseline_choice"]
        assert choice["reason"].startswith("5 earlier runs of this name, all flagged: 3 failed, 2 nan_loss"), choice
        assert choice["flagged"] == {"failed": 3, "nan_loss": 2}
        text = " ".join(cli(home, "diagnose", run).stdout.split())
        assert "5 earlier runs of this name, all flagged: 3 failed, 2 nan_loss" in text


@pytest.mark.embedded_only("the choice reads runs through Client; test_baseline_choice.py covers the transports")
def test_triage_never_takes_a_flagged_run_as_the_last_good_one(home: Path, repo: Path) -> None:
    for _ in range(2):
        _train(home, repo, "vision/train.py", name="nightly", nan=True)
    _train(home, repo, "vision/train.py", check=False, name="nightly", fail=True)
    from flightlog.triage.report import triage_report

    with Client(home) as c:
        onset = triage_report(c, project="lab")["groups"][0]["onset"]
    assert onset["last_good"] is None, onset
    assert "2 earlier runs of this name, all flagged: 2 nan_loss" in onset["summary"], onset


@pytest.mark.embedded_only("the choice reads runs through Client; test_baseline_choice.py covers the transports")
def test_a_regression_within_the_spread_of_comparable_runs_is_a_hint(home: Path, repo: Path) -> None:
    for i, value in enumerate((0.30, 0.46, 0.36, 0.41)):  # run-to-run noise of ±20 %
        _train(home, repo, "vision/train.py", name=f"v{i}", val_loss=value)
    run = _train(home, repo, "vision/train.py", name="v9", val_loss=0.44)  # 47 % above the best, inside the spread
    with Client(home) as c:
        report = c.diagnose(run)
    regressed = _finding(report, "metric_regressed")
    assert regressed is None or regressed["confidence"] < 0.5, regressed
    assert report["baseline"]["comparable_runs"] == 4
    if regressed is not None:
        details = " ".join(e["detail"] for e in regressed["evidence"])
        assert "within the spread of 4 comparable runs" in details, details


@pytest.mark.embedded_only("the choice reads runs through Client; test_baseline_choice.py covers the transports")
def test_a_regression_outside_the_spread_leads_and_one_run_is_not_enough(home: Path, repo: Path) -> None:
    _train(home, repo, "vision/train.py", name="v0", val_loss=0.30)
    lone = _train(home, repo, "vision/train.py", name="v1", val_loss=0.45)
    with Client(home) as c:
        report = c.diagnose(lone)
    regressed = _finding(report, "metric_regressed")
    assert regressed is not None and regressed["confidence"] < 0.5, report["findings"]
    assert "only 1 comparable run" in " ".join(e["detail"] for e in regressed["evidence"])
    for i, value in enumerate((0.30, 0.31, 0.29)):
        _train(home, repo, "vision/train.py", name=f"w{i}", val_loss=value)
    run = _train(home, repo, "vision/train.py", name="w9", val_loss=0.60)  # beyond every one of them
    with Client(home) as c:
        report = c.diagnose(run)
    top = report["findings"][0]
    assert top["category"] == "metric_regressed" and top["confidence"] >= 0.5, report["findings"]
    details = " ".join(e["detail"] for e in top["evidence"])
    assert "outside the spread of 5 comparable runs (0.29–0.45)" in details, details


@pytest.mark.embedded_only("the choice reads runs through Client; test_baseline_choice.py covers the transports")
def test_a_regression_never_outranks_the_run_s_own_slow_completion(home: Path, repo: Path) -> None:
    base = _train(home, repo, "vision/train.py", name="v0", val_loss=0.30)
    cli(home, "runs", "edit", base, "--tag", "baseline=true")
    run = _train(home, repo, "vision/train.py", name="v1", val_loss=0.9, tail_s=2.5)
    with Client(home) as c:
        report = c.diagnose(run)
    cats = [f["category"] for f in report["findings"]]
    assert "slow_completion" in cats and "metric_regressed" in cats, report["findings"]
    assert cats.index("slow_completion") < cats.index("metric_regressed"), report["findings"]
    assert report["findings"][0]["category"] == "slow_completion"
