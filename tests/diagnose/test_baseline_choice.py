"""The automatic baseline: pinned (a tag, the project's settings), else the last good run of
the same name, else the best comparable run (same script, same param keys) — never a run that
diagnosis flags (NaN, diverged) — and the report says which it chose and why. Real runs
recorded by the SDK in child processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from flightlog.client import Client
from tests.helpers import child_env, cli

TRAIN = """
import sys
import flightlog

lr, name = float(sys.argv[1]), sys.argv[2]
run = flightlog.init(project="vision", name=name, params={"lr": lr, "batch": 32})
for step in range(12):
    if lr > 10:  # diverges
        loss = 2.0 * 3.0 ** step
    else:
        loss = 2.0 / (step + 1) + lr
    run.log({"loss": loss, "val_loss": loss * 1.1}, step=step)
run.finish()
print(run.id)
"""


def _train(home: Path, lr: float, name: str, script: str = "train.py") -> str:
    path = home.parent / script
    path.write_text(TRAIN)
    proc = subprocess.run(
        [sys.executable, str(path), str(lr), name],
        env=child_env(home),
        cwd=home.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout.strip().splitlines()[-1]


def test_with_a_name_per_run_the_best_comparable_run_unflagged(home: Path) -> None:
    good = _train(home, 0.1, "run-1")
    best = _train(home, 0.05, "run-2")
    diverged = _train(home, 50, "run-3")  # "succeeded", with a loss ×10⁵: no reference
    _train(home, 0.01, "run-4", script="other.py")  # another script: not comparable
    run = _train(home, 0.2, "run-5")
    with Client(home) as c:
        report = c.diagnose(run)
    base = report["baseline"]
    assert base is not None and base["baseline"] == best, (base, good, best)
    assert base["chosen"] == "automatic" and base["choice"] == "comparable"
    # no repository here: the script is its absolute path (vision/train.py and speech/train.py are two scripts)
    script = home.parent / "train.py"
    assert base["reason"].startswith(f"comparable: same script {script}, same param keys, best val_loss (0.2383)"), (
        base["reason"]
    )
    assert base["script"] == str(script) and base["comparable_runs"] == 2  # run-1 and run-2
    assert {"run": diverged, "why": "its loss diverged", "flag": "diverged"} in base["skipped"]
    text = cli(home, "diagnose", run).stdout
    assert f"baseline {best} (comparable: same script {script}, same param keys, best val_loss" in " ".join(
        text.split()
    )


def test_a_diverged_run_of_the_same_name_is_skipped(home: Path) -> None:
    good = _train(home, 0.1, "nightly")
    diverged = _train(home, 50, "nightly")
    run = _train(home, 0.2, "nightly")
    with Client(home) as c:
        base = c.diagnose(run)["baseline"]
    assert base["baseline"] == good and base["choice"] == "same_name"
    assert "the most recent successful run of project 'vision' and name 'nightly'" in base["reason"]
    assert f"skipped 1 flagged run(s): {diverged[:12]}: its loss diverged" in base["reason"]


def test_a_pinned_run_by_tag_and_by_the_project_settings(home: Path) -> None:
    pinned = _train(home, 0.3, "run-a")
    latest = _train(home, 0.05, "run-b")
    run = _train(home, 0.2, "run-c")
    cli(home, "runs", "edit", pinned, "--tag", "baseline=true")
    with Client(home) as c:
        base = c.diagnose(run)["baseline"]
        assert base["baseline"] == pinned and base["choice"] == "pinned"
        assert base["reason"] == "pinned: tagged baseline=true"
        (home.parent / "flightlog.diagnose.yaml").write_text(f"projects:\n  vision:\n    baseline: {latest[:10]}\n")
        base = c.diagnose(run)["baseline"]
        assert base["baseline"] == latest and base["choice"] == "pinned"
        assert base["reason"] == f"pinned: the diagnosis settings of project 'vision' name it (baseline: {latest[:10]})"
        given = c.diagnose(run, baseline=pinned)["baseline"]
        assert given["choice"] == "given" and given["reason"] == "given with --baseline"
    (home.parent / "flightlog.diagnose.yaml").write_text("projects:\n  vision:\n    baseline: ffffffffff\n")
    failed = cli(home, "diagnose", run, check=False)
    assert failed.returncode != 0 and "pin baseline 'ffffffffff'" in failed.stderr and "diagnose.yaml" in failed.stderr
