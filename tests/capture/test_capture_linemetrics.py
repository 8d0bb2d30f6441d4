"""Metrics read from captured progress lines (issue 11): what counts, what never does, the caps."""

from __future__ import annotations

import math
from typing import Any

from flightlog.capture import CaptureConfig, CapturePipeline, LineMetrics


def points(*lines: bytes, **kw: Any) -> tuple[list[tuple[int, dict[str, float]]], LineMetrics]:
    metrics = LineMetrics(**kw)
    pipeline = CapturePipeline(CaptureConfig(env={}), metrics=metrics)
    now = 100.0
    for line in lines:
        pipeline.feed("stdout", line, now)
        now += 0.01
    pipeline.close(now)
    return [(step, values) for step, _, values in metrics.take(now, final=True)], metrics


def test_progress_lines_become_metrics_with_their_step() -> None:
    got, _ = points(
        b"step=10 loss=0.50 lr=1e-4\n",
        b"epoch 1 | step: 20 | loss: 0.25 | acc: 0.9\n",
        b"{'loss': 0.125, 'learning_rate': 5e-05, 'epoch': 0.5}\n",
        b"100%|#####| 10/10 [00:01<00:00, 9.5it/s, loss=0.1]\n",
        b"loss=nan\n",
        b"val_loss=-inf\n",
    )
    assert got[:2] == [(10, {"loss": 0.5, "lr": 1e-4}), (20, {"loss": 0.25, "acc": 0.9})]
    assert got[2] == (21, {"loss": 0.125, "learning_rate": 5e-05, "epoch": 0.5})  # no step key: the next step
    assert got[3] == (22, {"loss": 0.1})
    assert got[4][0] == 23 and math.isnan(got[4][1]["loss"])
    assert got[5] == (24, {"val_loss": -math.inf})


def test_structured_lines_give_their_numeric_fields() -> None:
    got, _ = points(
        b'{"level": "info", "msg": "train", "step": 3, "loss": 0.7, "tag": "x"}\n',
        b"level=info msg=eval step=4 val_acc=0.81\n",
        b'{"level": "info", "msg": "listening", "pid": 12, "port": 8080}\n',  # not progress
        '{"step": 5, "loss (train)": 0.5, "époché → x": 1}\n'.encode(),
    )
    assert got == [(3, {"loss": 0.7}), (4, {"val_acc": 0.81}), (5, {"loss_train_": 0.5, "époché_x": 1.0})]


def test_ordinary_text_tracebacks_secrets_and_redacted_values_make_no_metric() -> None:
    got, _ = points(
        b"retrying in: 5\n",
        b"loss=NaN guard enabled; will skip batches with NaN inputs\n",
        b"checked 1000 rows: 0 NaN values\n",
        b"listening on port: 8080\n",
        b"version=1.2.3 built at 10:30:00\n",
        b"epoch 3/10 done\n",
        b'Traceback (most recent call last):\n  File "t.py", line 3, in <module>\n    f(step=1, loss=2)\n'
        b"ValueError: step=5 loss=0.3 went wrong\n",
        b"pin_password=123456 db_pwd=987654 step=7\n",
        b"api_key: 12345678 token=42 step=8\n",
    )
    assert got == []


def test_names_are_capped_per_run_and_the_rest_counted() -> None:
    lines = [f"step={i} metric_{i}=1.0 loss=0.5\n".encode() for i in range(10)]
    got, metrics = points(*lines, max_names=4)
    assert metrics.names == {"loss", "metric_0", "metric_1", "metric_2"}
    assert metrics.stats["line_metric_names_dropped"] == 7
    assert all(set(values) <= metrics.names for _, values in got)


def test_points_are_held_and_names_the_sdk_claims_are_never_handed_over() -> None:
    metrics = LineMetrics(hold=1.0)
    pipeline = CapturePipeline(CaptureConfig(env={}), metrics=metrics)
    pipeline.feed("stdout", b"step=1 loss=0.5 acc=0.1\n", 10.0)
    pipeline.feed("stdout", b"step=2 loss=0.4 acc=0.2\nnext\n", 10.6)
    asked: list[int] = []

    def claimed() -> set[str]:
        asked.append(1)
        return {"loss"}  # the workload logs loss with the SDK

    assert metrics.take(10.7, claimed=claimed) == []
    assert metrics.take(11.2, claimed=claimed) == [(1, 10.0, {"acc": 0.1})]
    assert metrics.take(20.0, final=True, claimed=claimed) == [(2, 10.6, {"acc": 0.2})]
    assert len(asked) == 1  # asked once, when the names were new
    assert metrics.stats["line_metric_names_sdk"] == 1


def test_a_flood_of_progress_lines_is_sampled_but_every_nan_is_read() -> None:
    lines = [f"step={i} loss=0.5\n".encode() for i in range(5000)]
    lines[4321] = b"step=4321 loss=nan\n"
    got, metrics = points(b"".join(lines), max_rate=100)  # all 5000 lines within one second
    steps = [step for step, _ in got]
    assert 100 < len(steps) < 1500 and steps[:100] == list(range(100))
    assert 4321 in steps and math.isnan(dict(got)[4321]["loss"])
    assert metrics.stats["line_metrics_sampled_out"] == 5000 - len(steps)


def test_a_printed_dict_of_settings_makes_no_metric() -> None:
    """Regression (issue 29): scikit-learn's search printed ``best {'C': 0.1, 'l1_ratio': 0.5,
    'solver': 'saga'} 0.99`` and ``runs show`` listed ``C`` and ``l1_ratio`` as metrics; a dict
    with a non-numeric value and no training quantity is settings, a progress dict stays."""
    got, _ = points(
        b"best {'C': 0.1, 'l1_ratio': 0.5, 'solver': 'saga'} 0.99\n",
        b"{'alpha': 0.01, 'fit_intercept': True, 'max_iter': 200}\n",
        b"{'loss': 0.3, 'epoch': 1}\n",
        b"{'loss': '0.6924', 'grad_norm': '1.5', 'epoch': '0.5'}\n",
        b"{'step': 4, 'phase': 'train', 'loss': 0.2}\n",
    )
    assert [values for _, values in got] == [
        {"loss": 0.3},
        {"loss": 0.6924, "grad_norm": 1.5, "epoch": 0.5},
        {"loss": 0.2},
    ], got


def test_a_loss_printed_with_a_space_before_its_number_is_read() -> None:
    """``step 57 loss 915.63``: no ``=`` or ``: `` between a key and its number (issue 29: such a
    run's exploding loss was no metric, and no finding)."""
    got, _ = points(
        b"step 57 loss 915.6345\n",
        b"Epoch 3 loss 0.52 acc 0.81\n",
        b"iter 100: loss 2.3456, time 120.5ms, mfu 30.2%\n",  # nanoGPT
        b"| epoch 004 | loss 12.341 | ppl 5189.3 | wps 5000 | lr 0.0005 | gnorm 1.2 |\n",  # fairseq
        b"2026-01-01 10:00:00 INFO step 7 train loss 0.25 lr 1e-4\n",
        b"best val loss 0.3124 at epoch 5\n",
        b"step 11 loss nan\n",
    )
    assert got[:6] == [
        (57, {"loss": 915.6345}),
        (3, {"loss": 0.52, "acc": 0.81}),
        (100, {"loss": 2.3456}),
        (4, {"loss": 12.341, "ppl": 5189.3, "lr": 0.0005, "gnorm": 1.2}),
        (7, {"train_loss": 0.25, "lr": 1e-4}),
        (5, {"val_loss": 0.3124}),  # the split's word names it: never a point of the training loss
    ]
    assert got[6][0] == 11 and math.isnan(got[6][1]["loss"])


def test_prose_with_a_number_after_a_word_is_no_metric() -> None:
    got, _ = points(
        b"retrying 3 times after loss of connection\n",
        b"step 3 of 10: loss computed\n",
        b"the loss 3 was too high, lowering lr\n",
        b"Loss 0.5 at 10:30\n",
        b"rank 0 step 2 world 4 loss\n",
        b"epoch 3 done in 12 s, no loss logged\n",
    )
    assert got == []
