"""A run that exits 0 with its loss, or its gradient norm, NaN to the end stays ``succeeded`` (the
process did) but its closing line says so, quoting the line, and its diagnosis leads with
``nan_loss`` (issue 29). Before, ``flightlog run`` closed on "run … succeeded in 0.2s" and only
``flightlog diagnose`` said it. The runner judges from the last lines it holds in memory: a
statistic undefined on its data (``'eval_pearson': nan``) or one infinite gradient norm under a
loss scaler is no word of it. Real scripts under ``flightlog run``."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from flightlog.client import Client
from flightlog.diagnose.nanlog import ended_nonfinite
from tests.diagnose.test_nan_not_the_loss import HF_STYLE
from tests.helpers import cli

pytestmark = pytest.mark.embedded_only("the runner's own output, whatever store it writes to")

#: a plain loop whose loss goes NaN for its last steps, printed as ``f"loss {loss}"``
PLAIN_LOOP = """
for step in range(1, 41):
    loss = 2.0 / step if step < 30 else float("nan")
    print(f"step {step} loss {loss}", flush=True)
print("done")
"""

#: Transformers 5's Trainer at a learning rate far too high: ``grad_norm`` NaN from the first step
#: to the end, the loss it logs finite (``logging_nan_inf_filter``), and the run exits 0
TRAINER_GRADIENTS_NAN = """
print({'loss': '3.319e+05', 'grad_norm': 'nan', 'learning_rate': '1e+04', 'epoch': '0.5'}, flush=True)
for k in range(2, 13):
    print({'loss': '0', 'grad_norm': 'nan', 'learning_rate': '1e+04', 'epoch': str(k / 2)}, flush=True)
print({'train_runtime': '2.1', 'train_samples_per_second': '182', 'train_loss': '2.766e+04', 'epoch': '6'}, flush=True)
"""

#: a GLUE STS-B run on a tiny evaluation split: the Pearson correlation of constant predictions is
#: undefined, printed ``nan`` at every evaluation, while the loss trains on finite
UNDEFINED_STATISTIC = HF_STYLE

#: one bad batch skipped (its loss NaN once, finite after), and a loss scaler's infinite gradient
#: norm every seventh step, as mixed precision prints it
RECOVERED = """
for step in range(1, 41):
    loss = float("nan") if step == 20 else 2.0 / step
    print(f"step={step} loss={loss} grad_norm={'inf' if step % 7 == 0 else 1.0}", flush=True)
"""


def test_a_loss_that_ends_nan_is_said_by_the_closing_line_and_the_diagnosis(home: Path) -> None:
    proc, report = _run_and_diagnose(home, "loop.py", PLAIN_LOOP)
    assert proc.returncode == 0, proc.stderr[-600:]
    closing = _closing_line(proc.stderr)
    assert " succeeded in " in closing, closing
    assert "; but its loss ended NaN (step 40 loss nan): flightlog diagnose " in closing, closing
    assert report["status"] == "succeeded"
    top = report["findings"][0]
    assert top["category"] == "nan_loss" and top["confidence"] >= 0.5, report["findings"]
    assert any("step 40 loss nan" in e["detail"] for e in top["evidence"]), top["evidence"]


def test_a_gradient_norm_nan_to_the_end_is_said_though_the_logged_loss_is_finite(home: Path) -> None:
    proc, report = _run_and_diagnose(home, "lr_typo.py", TRAINER_GRADIENTS_NAN)
    closing = _closing_line(proc.stderr)
    assert proc.returncode == 0 and "; but its grad_norm ended NaN ({'loss': '0', 'grad_norm': 'nan'" in closing, (
        closing
    )
    top = report["findings"][0]
    assert top["category"] == "nan_loss" and top["confidence"] >= 0.5, report["findings"]


@pytest.mark.parametrize(("name", "text"), [("sts_b.py", UNDEFINED_STATISTIC), ("skipped.py", RECOVERED)])
def test_no_word_of_it_when_the_loss_ended_finite(home: Path, name: str, text: str) -> None:
    proc, _ = _run_and_diagnose(home, name, text)
    closing = _closing_line(proc.stderr)
    assert proc.returncode == 0 and " succeeded in " in closing and "ended" not in closing, closing


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["step 9 loss=0.3", "step 10 loss=nan"], ("loss", "nan", "step 10 loss=nan")),
        (["{'train_loss': inf}"], ("train_loss", "inf", "{'train_loss': inf}")),
        (["step 10 loss=nan", "step 11 loss=0.3"], None),  # it came back finite
        (["step 10 val_loss=nan"], None),  # an evaluation's, undefined on an empty split
        (["step 10 loss=0.2 loss_scale=inf"], None),  # mixed precision's bookkeeping
        (["grad_norm=1.0", "grad_norm=nan", "grad_norm=nan"], None),  # two prints: not yet "to the end"
        (["grad_norm=nan"] * 3, ("grad_norm", "nan", "grad_norm=nan")),
    ],
)
def test_which_last_lines_end_non_finite(lines: list[str], expected: tuple[str, str, str] | None) -> None:
    assert ended_nonfinite(lines) == expected


def _run_and_diagnose(home: Path, name: str, text: str) -> tuple[Any, dict[str, Any]]:
    script = home.parent / name
    script.write_text(text)
    proc = cli(home, "run", "--", sys.executable, str(script), check=False, timeout=120, process=True)
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        return proc, c.diagnose(run, auto_baseline=False)


def _closing_line(stderr: str) -> str:
    return next((ln for ln in reversed(stderr.splitlines()) if ln.startswith("flightlog: run ")), stderr[-400:])
