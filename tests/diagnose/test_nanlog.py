"""Non-finite values read from the log text (``nan_loss`` without metrics); whole runs under
``flightlog run`` are in workloads/nan_loss (silent_divergence_exit0.py, val_loss_nan_keras_style.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from flightlog.client import Client
from flightlog.diagnose.nanlog import nonfinite_values
from flightlog.models import LogEvent
from tests.helpers import cli


def _event(text: str, fields: dict | None = None) -> LogEvent:
    return LogEvent(0.0, "stdout", 20, text, fields=fields)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("step 300 loss=nan ppl=nan", {"loss": "nan", "ppl": "nan"}),
        ("epoch 2 val_loss=nan", {"val_loss": "nan"}),
        ("{'loss': nan, 'grad_norm': nan, 'learning_rate': 1e-05}", {"loss": "nan"}),
        ('{"level": "info", "step": 24, "loss": "NaN"}', {"loss": "NaN"}),
        ("1875/1875 [====] - 3s 2ms/step - loss: nan - accuracy: 0.0987", {"loss": "nan"}),
        ("step 3 train/loss=-inf", {"train/loss": "-inf"}),
        ("Loss is NaN at step 12, stopping", {"Loss": "NaN"}),
        # issue 29: a print of f"step {step} loss {loss:.4f}", a space between key and value
        ("step 99 loss nan", {"loss": "nan"}),
        ("epoch 3 train_loss inf val_loss nan", {"train_loss": "inf", "val_loss": "nan"}),
    ],
)
def test_nonfinite_values_in_metric_lines(line: str, expected: dict[str, str]) -> None:
    assert nonfinite_values(_event(line)) == expected


@pytest.mark.parametrize(
    "line",
    [
        "loss=NaN guard enabled; will skip batches with NaN inputs",
        "checked 1000 rows: 0 NaN values",
        "loss nan checks enabled",
        "skipped 3 batches with loss nan or inf",
        "NaN guard: loss=nan skipped",
        "loss_scale: inf",  # mixed precision: routine
        "grad_norm=inf, skipping step",  # mixed precision: routine
        "step 12 loss=0.4213 val_loss=0.5120 lr=3e-4",
    ],
)
def test_ordinary_lines_print_no_nonfinite_value(line: str) -> None:
    assert nonfinite_values(_event(line)) == {}


def test_parsed_fields_count_too() -> None:
    assert nonfinite_values(_event("epoch done", {"loss": float("nan"), "acc": 0.5})) == {"loss": "nan"}


@pytest.mark.embedded_only("the same evidence over either transport")
def test_silent_divergence_under_flightlog_run(home: Path) -> None:
    """A script that only prints ``step N loss=… ppl=…``, diverges at step 300 and exits 0."""
    script = Path(__file__).parent / "workloads" / "nan_loss" / "silent_divergence_exit0.py"
    proc = cli(home, "run", "--project", "lm", "--", sys.executable, str(script))
    assert proc.returncode == 0 and "step 300 loss=nan ppl=nan" in proc.stdout
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        assert c.run(run).status == "succeeded"
        report = c.diagnose(run)
    top = report["findings"][0]
    assert top["category"] == "nan_loss" and top["confidence"] >= 0.8, report["findings"]
    assert report["kind"] == "software"
    assert "loss=nan at step 300" in top["summary"]
    assert any("loss printed as nan at step 300" in e["detail"] for e in top["evidence"])


@pytest.mark.embedded_only("the same evidence over either transport")
def test_space_separated_loss_nan_to_the_end_under_flightlog_run(home: Path) -> None:
    """``print(f"step {step} loss {loss:.4f}")`` printing ``nan`` from the first step to the last,
    exit 0 (issue 29): read as a NaN loss, not a healthy run."""
    script = Path(__file__).parent / "workloads" / "nan_loss" / "log_of_negative_spaced.py"
    proc = cli(home, "run", "--project", "lm", "--", sys.executable, str(script))
    assert proc.returncode == 0 and "step 99 loss nan" in proc.stdout
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        report = c.diagnose(run)
    assert report["findings"], report
    top = report["findings"][0]
    assert top["category"] == "nan_loss" and top["confidence"] >= 0.8, report["findings"]


def test_a_tree_learner_s_best_gain_of_minus_infinity_is_no_statistic(tmp_path: Path) -> None:
    """LightGBM prints "[Warning] No further splits with positive gain, best gain: -inf" whenever
    a tree has no split left, on healthy runs with small or well-fitted data: read as a statistic
    printed as -inf, it put a nan_loss hint (0.21) at the top of a healthy run's report (found on
    a complete run written for the purpose, issue 29)."""
    script = tmp_path / "gbm.py"
    script.write_text(
        "import lightgbm as lgb, numpy as np\n"
        "X = np.random.default_rng(0).normal(size=(120, 3))\n"
        "params = {'objective': 'binary', 'num_leaves': 31, 'min_data_in_leaf': 20, 'verbose': 1}\n"
        "lgb.train(params, lgb.Dataset(X, label=(X[:, 0] > 0).astype(float)), 20)\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "best gain: -inf" in ln]
    assert lines, proc.stdout
    assert all(nonfinite_values(_event(ln)) == {} for ln in lines), [nonfinite_values(_event(ln)) for ln in lines]


_TABLE_WITH_A_NAN_COLUMN = """\
import torch
from torch import nn
import flightlog

run = flightlog.init(params={"lr": 0.01})
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
rows = []
for epoch in range(3):
    skipped = 0
    for step in range(50):
        x = torch.randn(16, 4)
        loss = nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
        if not torch.isfinite(loss):
            skipped += 1
            continue
        opt.zero_grad(); loss.backward(); opt.step()
    run.log({"loss": loss.item()}, step=epoch)
    rows.append((epoch, loss.item(), skipped))
print(f"{'epoch':>5} | {'train loss':>10} | {'skipped (loss: nan)':>19}")
for e, l, s in rows:
    print(f"{e:>5} | {l:>10.4f} | {s:>19}")
"""


@pytest.mark.embedded_only("the same evidence over either transport")
def test_a_loss_stored_finite_to_the_end_outweighs_one_printed_nan(home: Path, tmp_path: Path) -> None:
    """A healthy run whose summary table names a column "skipped (loss: nan)" while the loss it
    logged with the SDK stayed finite at every point: the header was read as the loss printed
    NaN to the end, nan_loss 0.85 on a run that succeeded. Found on a complete run written for
    the purpose (issue 29); the stored loss is what the loss was."""
    script = tmp_path / "summary_table.py"
    script.write_text(_TABLE_WITH_A_NAN_COLUMN)
    proc = cli(home, "run", "--project", "lm", "--", sys.executable, str(script))
    assert proc.returncode == 0 and "skipped (loss: nan)" in proc.stdout, proc.stderr
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        report = c.diagnose(run)
    alarms = [f for f in report["findings"] if f["confidence"] >= 0.5]
    assert not alarms, alarms


_SPACED_NAN_THEN_EXIT_1 = """\
import sys
import numpy as np

w = np.array([0.5, -2.0])
for step in range(0, 60, 10):
    with np.errstate(invalid="ignore"):
        loss = float(np.log(w @ np.array([1.0, step / 10.0])))  # the log of a negative quantity
    print(f"step {step} loss {loss:.4f}", flush=True)
if not np.isfinite(loss):
    sys.exit(1)
"""


@pytest.mark.embedded_only("the runner's own line")
def test_the_runner_s_line_reads_a_space_separated_nan_loss(home: Path, tmp_path: Path) -> None:
    """A loop printing ``step 50 loss nan`` (a space, no ``=``) to its end, then exiting 1 with no
    traceback: the diagnosis read it (nanlog), but the failure's line rules did not, and
    ``flightlog run`` ended with "no clear cause, a hint: code_error". Found on a complete run
    written for the purpose (issue 29)."""
    script = tmp_path / "train.py"
    script.write_text(_SPACED_NAN_THEN_EXIT_1)
    proc = cli(home, "run", "--project", "lm", "--", sys.executable, str(script), check=False)
    assert proc.returncode == 1 and "step 50 loss nan" in proc.stdout, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "looks like nan_loss" in last, last


GIVES_UP_ON_A_NAN_LOSS = """
import math
for epoch in range(8):
    loss = 10.0 ** (10 * epoch) if epoch < 3 else (math.inf if epoch < 7 else math.nan)
    print(f"epoch {epoch} loss={loss:.4g}", flush=True)
    if math.isnan(loss):
        raise ValueError(f"loss is {loss} at epoch {epoch}; not saving weights")
"""


@pytest.mark.embedded_only("the same evidence over either transport")
def test_the_last_non_finite_value_quoted_is_the_printed_one(home: Path, tmp_path: Path) -> None:
    """Regression (issue 29): a script that raised on its NaN loss had its evidence say "loss
    never printed a finite value again (last: raise ValueError(f"loss is {loss} …"))": the source
    line of the ``raise`` in the traceback, not the last value the run printed."""
    script = tmp_path / "gd.py"
    script.write_text(GIVES_UP_ON_A_NAN_LOSS)
    proc = cli(home, "run", "--project", "gd", "--", sys.executable, str(script), check=False)
    assert proc.returncode == 1 and "epoch 7 loss=nan" in proc.stdout, proc.stderr
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        report = c.diagnose(run, auto_baseline=False)
    details = [e["detail"] for f in report["findings"] for e in f["evidence"]]
    never = [d for d in details if "never printed a finite value again" in d]
    assert never and all("(last: epoch 7 loss=nan)" in d for d in never), details
