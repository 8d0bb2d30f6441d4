"""A model's life in production, end to end, on the embedded store (``FLIGHTLOG_HOME``):

1. trains version 1 (a logistic scorer) on data snapshot A, registers it, points
   ``fraud@production`` at it and deploys it to ``fraud-api`` in ``prod``;
2. starts two replicas of app.py serving it and sends them traffic (with labels);
3. trains version 2 on snapshot B, a refresh in which most of BR's rows were lost and most of
   BR's frauds were labelled legitimate, with a bigger (slower) model; registers it, moves
   ``@production`` and deploys it;
4. restarts the replicas on version 2, one at a time (traffic meets both versions in between),
   sends traffic again, and stops them: every open minute's aggregates are written then.

    python examples/serving/rollout.py [--requests 400] [--rows 4000] [--width 3072] [--work DIR]

Everything is real: processes, HTTP on 127.0.0.1, the CLI. It takes about 20 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from fraud import generate, write_csv

HERE = Path(__file__).resolve().parent


def say(text: str) -> None:
    print(f"\n== {text}", flush=True)


def snapshots(work: Path, rows: int) -> tuple[Path, Path]:
    """Snapshot A: the world as it is. Snapshot B: a refresh that lost 70 % of BR's rows and
    labelled 80 % of BR's frauds legitimate (its holdout too, so offline numbers look fine)."""
    a, b = work / "data" / "snapshot-a", work / "data" / "snapshot-b"
    write_csv(a / "train.csv", generate(rows, 1))
    write_csv(a / "holdout.csv", generate(rows // 3, 11))
    rng = np.random.default_rng(5)

    def broken(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        kept = []
        for r in batch:
            if r["country"] == "BR":
                if rng.random() < 0.7:
                    continue
                if r["fraud"] and rng.random() < 0.8:
                    r = {**r, "fraud": 0}
            kept.append(r)
        return kept

    write_csv(b / "train.csv", broken(generate(rows, 2)))
    write_csv(b / "holdout.csv", broken(generate(rows // 3, 12)))
    return a, b


def flightlog(*args: str) -> None:
    print(f"$ flightlog {' '.join(args)}", flush=True)
    subprocess.run([sys.executable, "-m", "flightlog", *args], check=True)


def train(data: Path, work: Path, *extra: str) -> int:
    out = work / f"model-{data.name}"
    cmd = [sys.executable, str(HERE / "train.py"), "--data", str(data), "--out", str(out), *extra]
    print(f"$ python train.py --data {data.name} {' '.join(extra)}", flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE)
    if done.returncode != 0:
        sys.exit(f"training failed (exit {done.returncode}):\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"  run {result['run'][:12]} registered fraud v{result['version']}", flush=True)
    return int(result["version"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Replica:
    """One app.py process on its own port, its output in a log file."""

    def __init__(self, work: Path, name: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.name = name
        self.log = work / f"{name}-{self.port}.log"
        env = {
            **os.environ,
            "FLIGHTLOG_SERVING_SAMPLE": os.environ.get(
                "FLIGHTLOG_SERVING_SAMPLE", "1"
            ),  # a short demo: keep every request
            "OPENBLAS_NUM_THREADS": "1",  # one core per request, as a replica behind a balancer would
        }
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "app.py", "--port", str(self.port)], cwd=HERE, env=env, stdout=out, stderr=out
            )

    def ready(self, timeout: float = 60) -> str:
        """The version it serves, once /healthz answers."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return str(httpx.get(self.url + "/healthz", timeout=2).json()["version"])
            except httpx.HTTPError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"replica {self.name} did not start:\n{self.log.read_text()}")
                time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM: uvicorn drains, the middleware writes the open minute, the run ends."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


STARTED: list[Replica] = []  # every replica this driver started: all are stopped when it ends


def start(work: Path, *names: str) -> list[Replica]:
    replicas = [Replica(work, name) for name in names]  # started together, waited for together
    STARTED.extend(replicas)
    for r in replicas:
        print(f"  replica {r.name} on {r.url} serves v{r.ready()}", flush=True)
    return replicas


def traffic(replicas: list[Replica], requests: int, seed: int) -> None:
    urls = [a for r in replicas for a in ("--url", r.url)]
    print(f"$ python traffic.py {' '.join(urls)} --requests {requests}", flush=True)
    done = subprocess.run(
        [sys.executable, "traffic.py", *urls, "--requests", str(requests), "--seed", str(seed)],
        cwd=HERE,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"traffic failed (exit {done.returncode}):\n{done.stderr}")
    print(f"  {done.stdout.strip()}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=400, help="requests per traffic phase")
    ap.add_argument("--rows", type=int, default=4000, help="training rows per snapshot")
    ap.add_argument("--width", type=int, default=3072, help="units per random layer of version 2's model")
    ap.add_argument("--work", type=Path, default=None, help="where data, weights and logs go (default: a temp dir)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="fraud-rollout-"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    started = time.monotonic()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped from outside: stop the replicas too
    try:
        say("version 1: train on snapshot A, register, @production, deploy")
        a, b = snapshots(work, args.rows)
        v1 = train(a, work, "--kind", "linear")
        flightlog("models", "alias", "fraud@production", str(v1))
        flightlog("deploy", "fraud@production", "--endpoint", "fraud-api", "--env", "prod")

        say("two replicas serve version 1; traffic with labels")
        running = start(work, "replica-1", "replica-2")
        traffic(running, args.requests, seed=100)

        say("version 2: a bigger model trained on snapshot B (BR rows lost, BR frauds mislabelled)")
        v2 = train(b, work, "--kind", "wide", "--width", str(args.width))
        flightlog("models", "alias", "fraud@production", str(v2))
        flightlog("deploy", "fraud@production", "--endpoint", "fraud-api", "--env", "prod")

        say("rolling restart onto version 2: stop one, start one")
        running[0].stop()
        running[0] = start(work, "replica-1b")[0]
        traffic(running, args.requests // 4, seed=200)  # both versions serve for a moment
        running[1].stop()
        running[1] = start(work, "replica-2b")[0]
        traffic(running, args.requests, seed=300)
    finally:
        for r in STARTED:
            r.stop()
    say(f"done in {time.monotonic() - started:.1f} s; replicas stopped, every minute's aggregates written")
    print(f"  work dir (data, weights, replica logs): {work}", flush=True)


if __name__ == "__main__":
    main()
