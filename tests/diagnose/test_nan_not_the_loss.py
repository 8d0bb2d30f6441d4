"""A NaN that is not the loss (issue #29): an evaluation statistic that is undefined on its
subset (a correlation over constant predictions, an AUC over one class) printed or logged as
``nan`` while the loss trains on, finite, is at most a hint — never ``nan_loss`` at 0.5 or
more on a healthy run. A loss that goes NaN still is. Real runs under ``flightlog run`` and
with the SDK, in child processes."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from flightlog.client import Client
from tests.helpers import cli, run_script

#: the Hugging Face Trainer's log lines, as a GLUE STS-B run on a tiny eval split prints them:
#: the Pearson correlation of constant predictions is undefined
HF_STYLE = """
import math
for epoch in range(1, 7):
    for k in range(4):
        step = (epoch - 1) * 4 + k + 1
        print({'loss': round(1.2 / step + 0.1, 4), 'grad_norm': 3.1, 'learning_rate': 5e-05, 'epoch': epoch - 1 + k / 4}, flush=True)
    print({'eval_loss': round(0.9 / epoch + 0.2, 4), 'eval_pearson': float('nan'), 'eval_spearmanr': float('nan'),
           'eval_runtime': 0.41, 'epoch': float(epoch)}, flush=True)
print("Training completed.")
"""

SDK_SUBSET_AUC = """
import flightlog
run = flightlog.init(project="clf", name="rare-class")
for step in range(20):
    run.log({"loss": 1.0 / (step + 1), "val_loss": 1.1 / (step + 1)}, step=step)
    if step % 5 == 4:
        # the rare class's slice had one label this time: its AUC is undefined
        run.log({"val/auc_rare": float("nan") if step < 15 else 0.71, "val/auc": 0.8 + 0.01 * step}, step=step)
run.finish()
print(run.id)
"""

SDK_LOSS_NAN = """
import flightlog
run = flightlog.init(project="clf", name="diverged")
for step in range(20):
    loss = float("nan") if step >= 12 else 1.0 / (step + 1)
    run.log({"loss": loss, "val/auc": 0.8}, step=step)
run.finish()
print(run.id)
"""


@pytest.mark.embedded_only("the same evidence over either transport")
def test_an_evaluation_statistic_printed_as_nan_is_not_a_nan_loss(home: Path) -> None:
    proc, report = _printed_and_diagnosed(home, "sts_b.py", HF_STYLE, "glue", baseline=True)
    assert proc.returncode == 0 and "'eval_pearson': nan" in proc.stdout
    nan = next((f for f in report["findings"] if f["category"] == "nan_loss"), None)
    assert nan is None or nan["confidence"] < 0.5, report["findings"]
    assert not any(f["confidence"] >= 0.5 for f in report["findings"]), report["findings"]
    assert report["kind"] == "none"


def test_a_subset_statistic_logged_as_nan_is_a_hint_and_a_nan_loss_still_leads(home: Path) -> None:
    run = run_script(home, SDK_SUBSET_AUC).stdout.split()[-1]
    bad = run_script(home, SDK_LOSS_NAN).stdout.split()[-1]
    with Client(home) as c:
        report = c.diagnose(run, auto_baseline=False)
        diverged = c.diagnose(bad, auto_baseline=False)
    nan = next((f for f in report["findings"] if f["category"] == "nan_loss"), None)
    assert nan is not None and nan["confidence"] < 0.5, report["findings"]
    assert "the loss stayed finite" in nan["summary"], nan["summary"]
    top = diverged["findings"][0]
    assert top["category"] == "nan_loss" and top["confidence"] >= 0.8, diverged["findings"]


#: Transformers 5's Trainer at a learning rate a thousand times too high: the gradients go NaN at
#: the first step and stay NaN; the loss it logs does not (``logging_nan_inf_filter`` replaces a
#: NaN loss by the mean of the earlier ones: ``'0'`` once they are reset), and the run ends 0
HF_GRADIENTS_NAN = """
print({'loss': '3.319e+05', 'grad_norm': 'nan', 'learning_rate': '1e+04', 'epoch': '0.5'}, flush=True)
for k in range(2, 13):
    print({'loss': '0', 'grad_norm': 'nan', 'learning_rate': '1e+04', 'epoch': str(k / 2)}, flush=True)
print({'train_runtime': '2.1', 'train_samples_per_second': '182', 'train_loss': '2.766e+04', 'epoch': '6'}, flush=True)
"""


@pytest.mark.embedded_only("the same evidence over either transport")
def test_gradients_that_stay_nan_are_the_run_s_nan_though_the_logged_loss_is_finite(home: Path) -> None:
    """A gradient norm NaN from one step to the end is the training's NaN, not an evaluation
    statistic undefined on its data: read as ``loss_plateau`` 0.72 ("stayed within 0–0") with
    ``nan_loss`` at 0.20 on a real Trainer run (issue 29)."""
    proc, report = _printed_and_diagnosed(home, "lr_typo.py", HF_GRADIENTS_NAN, "lm", baseline=False)
    assert proc.returncode == 0 and "'grad_norm': 'nan'" in proc.stdout
    top = report["findings"][0]
    assert top["category"] == "nan_loss" and top["confidence"] >= 0.5, report["findings"]
    assert "the weights, are NaN" in top["evidence"][0]["detail"], top


def _printed_and_diagnosed(
    home: Path, name: str, text: str, project: str, *, baseline: bool
) -> tuple[Any, dict[str, Any]]:
    """``text`` as a script under ``flightlog run``, and its run's diagnosis."""
    script = home.parent / name
    script.write_text(text)
    proc = cli(home, "run", "--project", project, "--", sys.executable, str(script))
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        return proc, c.diagnose(run, auto_baseline=baseline)
