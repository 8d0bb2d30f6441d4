"""``loss_divergence``: a loss that explodes (plain numpy SGD at lr 50 against a baseline at
lr 0.1, real runs recorded by the SDK in child processes) is its own finding, ahead of the
plateau and the regression it brings with it, with the learning-rate change as evidence."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from flightlog.client import Client
from tests.helpers import child_env, cli

SGD = """
import sys
import numpy as np
import flightlog

lr = float(sys.argv[1])
rng = np.random.default_rng(0)
X = 0.3 * rng.normal(size=(256, 8))
y = X @ rng.normal(size=8) + 0.01 * rng.normal(size=256)
run = flightlog.init(project="regression", name=sys.argv[2], params={"lr": lr, "epochs": 30, "batch": 32})
w = np.zeros(8)
for step in range(30):
    i = rng.integers(0, 256, 32)
    err = X[i] @ w - y[i]
    run.log({"loss": float(np.mean(err ** 2))}, step=step)
    w -= lr * (X[i].T @ err) / 32
    if step % 3 == 2:
        run.log({"val_loss": float(np.mean((X @ w - y) ** 2))}, step=step)
run.finish()
print(run.id)
"""

OVERFIT = """
import flightlog
run = flightlog.init(project="regression", name="overfit")
for step in range(40):
    # improves for 10 evaluations, then gets steadily worse: overfitting, not a plateau
    val = 1.0 / (step + 1) + 0.3 if step < 10 else 0.39 + 0.02 * (step - 10)
    run.log({"val_loss": val}, step=step)
run.finish()
print(run.id)
"""


def _run(home: Path, code: str, *argv: str) -> str:
    script = home.parent / "train.py"
    script.write_text(code)
    proc = subprocess.run(
        [sys.executable, str(script), *argv],
        env=child_env(home),
        cwd=home.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout.strip().splitlines()[-1]


def c_diagnose(home: Path, run: str) -> dict:
    with Client(home) as c:
        return c.diagnose(run, auto_baseline=False)


def test_an_exploding_loss_is_a_divergence_ahead_of_plateau_and_regression(home: Path) -> None:
    base = _run(home, SGD, "0.1", "sgd-good")
    run = _run(home, SGD, "50", "sgd-bad")
    with Client(home) as c:
        given = c.diagnose(run, baseline=base)
        alone = c.diagnose(run, auto_baseline=False)
    top = given["findings"][0]
    assert top["category"] == "loss_divergence" and top["confidence"] >= 0.5, given["findings"]
    assert given["kind"] == "software"
    assert "loss diverged" in top["summary"] and "lr=50.0" in top["summary"]
    details = [e["detail"] for e in top["evidence"]]
    assert any("lr: 0.1 → 50.0" in d for d in details), details  # the change from the baseline is evidence
    others = {f["category"]: f["confidence"] for f in given["findings"][1:]}
    assert all(conf < top["confidence"] for conf in others.values())
    assert "loss_plateau" not in others  # a rising loss never is a plateau
    if "metric_regressed" in others:
        regressed = next(f for f in given["findings"] if f["category"] == "metric_regressed")
        text = regressed["summary"] + " ".join(e["detail"] for e in regressed["evidence"])
        assert "×" in text and not re.search(r"\d{4,}%", text), text  # a factor, not 4515864 %
    # without a baseline it is still the divergence, and still no plateau
    assert alone["findings"][0]["category"] == "loss_divergence"
    assert not any(f["category"] == "loss_plateau" for f in alone["findings"])
    assert not any(f["category"] == "loss_divergence" for f in c_diagnose(home, base)["findings"])


def test_a_rising_validation_loss_is_not_a_plateau(home: Path) -> None:
    run = _run(home, OVERFIT)
    report = c_diagnose(home, run)
    assert not any(f["category"] == "loss_plateau" for f in report["findings"]), report["findings"]


def test_factors_read_as_a_person_writes_them() -> None:
    from flightlog.diagnose.factors import factor_text

    assert factor_text(45158.64) == "×45,000"
    assert factor_text(3.1e8) == "×3.1·10⁸"
    assert factor_text(2.5) == "×2.5"
    assert factor_text(999_999) == "×1·10⁶"


NOISY = """
import sys
import numpy as np
import flightlog

rng = np.random.default_rng(int(sys.argv[1]))
explode = sys.argv[2] == "explode"
run = flightlog.init(project="lm", name=sys.argv[2], params={"lr": 3e-3 if explode else 3e-4})
for step in range(200):
    # warm-up from a high start down to a low; then, at the higher learning rate, the loss
    # runs away from that low by two orders of magnitude, with minibatch noise all along
    level = 6.0 * np.exp(-step / 15) + 0.25
    if explode and step >= 120:
        level = 0.25 * 1.06 ** (step - 120)
    run.log({"loss": level * float(np.exp(rng.normal(0, 0.8)))}, step=step)
run.finish()
print(run.id)
"""


def test_a_noisy_loss_that_runs_away_from_its_low_is_a_divergence(home: Path) -> None:
    """Issue #29: ×100 above where it had got to, though below where it started, and noisy."""
    bad = _run(home, NOISY, "1", "explode")
    healthy = _run(home, NOISY, "2", "steady")
    report = c_diagnose(home, bad)
    top = report["findings"][0]
    assert top["category"] == "loss_divergence" and top["confidence"] >= 0.5, report["findings"]
    assert "from its low" in top["summary"], top["summary"]
    calm = c_diagnose(home, healthy)
    assert not any(f["category"] == "loss_divergence" for f in calm["findings"]), calm["findings"]
    assert not any(f["confidence"] >= 0.5 for f in calm["findings"]), calm["findings"]


#: a script with no SDK call that prints its progress as many do, a space between each key and
#: its number (``step 41 loss 0.7032``): the loss falls for 40 steps, then runs away by three
#: orders of magnitude with noise, and the script ends 0
PRINTED = """
import random
import sys
random.seed(0)
loss, explode = 2.3, sys.argv[1] == "explode"
for step in range(60):
    loss = loss * 0.97 + random.uniform(-0.02, 0.02) if step < 40 or not explode else loss * 1.35 + random.uniform(0, 3)
    print(f"step {step} loss {loss:.4f}", flush=True)
print("training finished")
"""


def test_a_printed_loss_with_no_separator_that_runs_away_is_a_divergence(home: Path) -> None:
    """Issue #29: ``step 57 loss 915.6345`` was no metric (only ``loss=``/``loss:`` were read), so
    a run whose printed loss exploded from 0.7 to 1,600 closed on "succeeded" with no finding."""
    script = home.parent / "printed.py"
    script.write_text(PRINTED)
    reports = {}
    for how in ("explode", "steady"):
        proc = cli(home, "run", "--project", "printed", "--", sys.executable, str(script), how)
        assert proc.returncode == 0, proc.stderr
        run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
        with Client(home) as c:
            assert len(c.metric_history(run, "loss")) == 60
            reports[how] = c.diagnose(run, auto_baseline=False)
    top = reports["explode"]["findings"][0]
    assert top["category"] == "loss_divergence" and top["confidence"] >= 0.5, reports["explode"]["findings"]
    assert not any(f["confidence"] >= 0.5 for f in reports["steady"]["findings"]), reports["steady"]["findings"]
