"""Metrics read from real recorded output (``tests/capture/recorded/``): a framework's progress
lines give their metrics; a launcher's failure summary, process ids, ranks, exit codes, ports
and timestamps give none (issue 29: ``exitcode``, ``local_rank`` and ``pid`` had become a run's
metrics)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flightlog.capture.linemetrics import LineMetrics
from flightlog.capture.pipeline import CaptureConfig, CapturePipeline

RECORDED = Path(__file__).parent / "recorded"
#: what must never become a metric, whatever the output
IDENTITIES = {"pid", "exitcode", "exit_code", "local_rank", "rank", "port", "GLOBAL_RANK", "returncode", "code"}


def metrics_of(name: str) -> dict[str, list[float]]:
    lm = LineMetrics(hold=0)
    pipeline = CapturePipeline(CaptureConfig(env={}), metrics=lm)
    pipeline.feed("stderr", (RECORDED / name).read_bytes(), 1000.0)
    pipeline.close(1001.0)
    out: dict[str, list[float]] = {}
    for _, _, values in lm.take(2000.0, final=True):
        for key, value in values.items():
            out.setdefault(key, []).append(value)
    return out


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("torchrun_gloo_timeout.txt", {"loss"}),  # its ranks print `rank 0 step 3 loss 12.000`
        ("torchrun_record.txt", {"loss"}),
        ("torchrun_tee.txt", {"loss"}),
        ("elastic_logging_2023.txt", set()),
        ("accelerate_sigkill.txt", set()),
        ("deepspeed_launcher.txt", set()),
        ("deepspeed_oom.txt", set()),
        ("keras_fit.txt", {"accuracy", "loss", "val_accuracy", "val_loss"}),
        ("tqdm_bars.txt", {"loss", "lr"}),
        (
            "hf_trainer.txt",
            {
                "loss",
                "grad_norm",
                "learning_rate",
                "epoch",
                "eval_loss",
                "eval_runtime",
                "eval_samples_per_second",
                "eval_steps_per_second",
                "train_runtime",
                "train_samples_per_second",
                "train_steps_per_second",
                "train_loss",
            },
        ),
    ],
)
def test_progress_gives_its_metrics_and_nothing_else(name: str, expected: set[str]) -> None:
    names = set(metrics_of(name))
    assert names == expected
    assert not names & IDENTITIES


@pytest.mark.parametrize("name", ["lightning_ddp_rich.txt", "lightning_ddp_tqdm.txt"])
def test_lightning_s_bars_give_losses_and_no_identity(name: str) -> None:
    names = set(metrics_of(name))
    assert not names & IDENTITIES  # "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/2"
    if name.endswith("tqdm.txt"):
        assert {"train_loss", "val_loss"} <= names


def test_hugging_face_s_quoted_numbers_are_read_as_numbers() -> None:
    losses = metrics_of("hf_trainer.txt")["loss"]
    assert losses == [0.6946, 0.6924, 0.6918, 0.6942]
