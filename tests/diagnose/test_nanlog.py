"""Non-finite values read from the log text (``nan_loss`` without metrics); whole runs under
``flightlog run`` are in workloads/nan_loss (silent_divergence_exit0.py, val_loss_nan_keras_style.py)."""

from __future__ import annotations

import pytest

from flightlog.diagnose.nanlog import nonfinite_values
from flightlog.models import LogEvent


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
    ],
)
def test_nonfinite_values_in_metric_lines(line: str, expected: dict[str, str]) -> None:
    assert nonfinite_values(_event(line)) == expected


@pytest.mark.parametrize(
    "line",
    [
        "loss=NaN guard enabled; will skip batches with NaN inputs",
        "checked 1000 rows: 0 NaN values",
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
