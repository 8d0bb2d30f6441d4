"""Train the fraud scorer on one data snapshot and register it as the next version of ``fraud``.

    python train.py --data DIR [--kind linear|wide] [--width 3072]

DIR holds ``train.csv`` and ``holdout.csv`` (rollout.py writes them). The run keeps what the
live comparisons need: the snapshot as its input, a profile of the training data, and an
evaluation per country on the holdout. Prints one JSON line: the run and the version.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from fraud import COLUMNS, fit, read_csv

import flightlog
from flightlog.data import profile

PROJECT = "fraud"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True, help="the snapshot: train.csv and holdout.csv")
    ap.add_argument("--kind", choices=["linear", "wide"], default="linear")
    ap.add_argument("--width", type=int, default=3072, help="units per random layer of the wide model")
    ap.add_argument("--out", type=Path, default=Path("model"), help="where the weights are written")
    args = ap.parse_args()

    params = {"kind": args.kind, "data": args.data.name, **({"width": args.width} if args.kind == "wide" else {})}
    run = flightlog.init(project=PROJECT, name=f"train fraud ({args.kind})", params=params, tags={"example": "serving"})
    run.log_input(args.data, name=f"data/{args.data.name}")
    train, holdout = read_csv(args.data / "train.csv"), read_csv(args.data / "holdout.csv")
    run.log_profile("train", profile(args.data / "train.csv", columns=list(COLUMNS[:-1])))
    with run.stage("train"):
        started = time.perf_counter()
        model = fit(train, kind=args.kind, width=args.width)
        run.log({"train_seconds": time.perf_counter() - started, "train_rows": len(train)})
    with run.stage("evaluate"):
        y = np.array([r["fraud"] for r in holdout])
        predicted = (model.predict(holdout) > 0.5).astype(int)
        run.log({"holdout_acc": float(np.mean(predicted == y))})
        run.log_eval(y, predicted, cohorts={"country": np.array([r["country"] for r in holdout])})
    path = args.out / "model.npz"
    model.save(path)
    run.log_artifact(path, name="model/model.npz")
    version = run.register_model(
        "model/model.npz", "fraud", description=f"{args.kind} scorer on {args.data.name}", tags={"kind": args.kind}
    )
    print(json.dumps({"run": run.id, "version": version.version}), flush=True)
    run.finish()


if __name__ == "__main__":
    main()
