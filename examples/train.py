"""A small, realistic training job: a two-layer numpy classifier on a generated dataset.

Uses the flightlog SDK the way a training script would: params, per-step metrics, stages
(data loading, per-batch train steps, evaluation, checkpoint), structured logs, an input
manifest, checkpoints and a model artifact. Runs standalone or under `flightlog run`.

    python examples/train.py --data .flightlog-demo/data --epochs 5
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import time
from pathlib import Path

import numpy as np

import flightlog

log = logging.getLogger("trainer")


def make_dataset(root: Path, rows: int = 6000, shards: int = 6, seed: int = 0) -> None:
    """Generated, not downloaded: two noisy interleaved moons, split in CSV shards."""
    if root.exists() and any(root.glob("*.csv")):
        return
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    t = rng.uniform(0, np.pi, rows)
    label = rng.integers(0, 2, rows)
    x = np.where(label == 0, np.cos(t), 1 - np.cos(t)) + rng.normal(0, 0.15, rows)
    y = np.where(label == 0, np.sin(t), 0.5 - np.sin(t)) + rng.normal(0, 0.15, rows)
    region = rng.choice(["eu", "us", "apac"], rows, p=[0.5, 0.3, 0.2])
    for s in range(shards):
        with open(root / f"shard-{s:02d}.csv", "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["x", "y", "region", "label"])
            for i in range(s, rows, shards):
                writer.writerow([f"{x[i]:.5f}", f"{y[i]:.5f}", region[i], int(label[i])])


def load(root: Path) -> tuple[np.ndarray, np.ndarray]:
    files = sorted(root.glob("*.csv"))
    if not files:
        raise FileNotFoundError(f"no CSV shards under {root}")
    rows = []
    for path in files:
        with open(path, newline="") as f:
            for rec in csv.DictReader(f):
                rows.append((float(rec["x"]), float(rec["y"]), int(rec["label"])))
    data = np.array(rows)
    return data[:, :2], data[:, 2].astype(int)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path(".flightlog-demo/data"))
    parser.add_argument("--out", type=Path, default=Path(".flightlog-demo/out"))
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--no-generate", action="store_true", help="do not create the dataset when it is missing")
    parser.add_argument("--slow-loader", type=float, default=0.0, help="seconds of simulated I/O per batch")
    args = parser.parse_args()

    logging.basicConfig(level=logging.INFO, handlers=[flightlog.logging_handler()])
    run = flightlog.init(
        project="demo",
        name="moons-mlp",
        params={
            "lr": args.lr,
            "epochs": args.epochs,
            "model": {"hidden": args.hidden, "activation": "tanh"},
            "batch_size": args.batch_size,
            "data": str(args.data),
        },
    )
    with run.stage("data_loading"):
        if not args.no_generate:
            make_dataset(args.data)
        x, y = load(args.data)
        run.log_input(args.data, name="moons")
        log.info("loaded %d rows", len(x), extra={"rows": len(x), "features": x.shape[1]})
    rng = np.random.default_rng(1)
    order = rng.permutation(len(x))
    split = int(0.8 * len(x))
    train_idx, val_idx = order[:split], order[split:]
    w1 = rng.normal(0, 1, (2, args.hidden))
    b1 = np.zeros(args.hidden)
    w2 = rng.normal(0, 1, args.hidden)
    b2 = 0.0
    step = 0
    args.out.mkdir(parents=True, exist_ok=True)
    with run.stage("train"):
        for epoch in range(args.epochs):
            rng.shuffle(train_idx)
            for start in range(0, len(train_idx), args.batch_size):
                with run.stage("data_wait"):
                    if args.slow_loader:
                        time.sleep(args.slow_loader)
                    batch = train_idx[start : start + args.batch_size]
                    xb, yb = x[batch], y[batch]
                with run.stage("train_step"):
                    h = np.tanh(xb @ w1 + b1)
                    p = 1 / (1 + np.exp(-(h @ w2 + b2)))
                    loss = float(-np.mean(yb * np.log(p + 1e-9) + (1 - yb) * np.log(1 - p + 1e-9)))
                    grad = (p - yb) / len(yb)
                    gh = np.outer(grad, w2) * (1 - h**2)
                    w2 -= args.lr * h.T @ grad
                    b2 -= args.lr * grad.sum()
                    w1 -= args.lr * xb.T @ gh
                    b1 -= args.lr * gh.sum(axis=0)
                run.log({"loss": loss, "lr": args.lr}, step=step)
                step += 1
            with run.stage("evaluation"):
                hv = np.tanh(x[val_idx] @ w1 + b1)
                pv = 1 / (1 + np.exp(-(hv @ w2 + b2)))
                acc = float(np.mean((pv > 0.5) == y[val_idx]))
                run.log({"val_acc": acc, "epoch": epoch}, step=step)
            log.info("epoch %d done", epoch, extra={"epoch": epoch, "val_acc": round(acc, 4), "loss": round(loss, 4)})
            if acc < 0.6 and epoch >= 2:
                log.warning("validation accuracy is low", extra={"val_acc": acc})
            with run.stage("checkpoint"):
                ckpt = args.out / f"ckpt-epoch{epoch}.npz"
                np.savez(ckpt, w1=w1, b1=b1, w2=w2, b2=b2)
                run.checkpoint(ckpt, step=step)
    model = args.out / "model.json"
    model.write_text(json.dumps({"w1": w1.tolist(), "b1": b1.tolist(), "w2": w2.tolist(), "b2": b2}))
    run.log_artifact(model, kind="model")
    run.note(f"final val_acc={acc:.3f} with lr={args.lr}")
    print(f"done: val_acc={acc:.3f} after {step} steps")
    run.finish()


if __name__ == "__main__":
    main()
