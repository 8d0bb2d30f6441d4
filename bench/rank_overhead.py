"""The per-rank cost of recording (issue 28): W1's loop in a process that is a rank of a
distributed job, against the same loop in a plain process.

A rank does a little more than a plain process: `init()` reads its launcher's environment and
looks its job's run up in the store (the run a job key names), its writer record carries its
identity, the store keeps its row (heartbeat, last step). None of that is on `run.log`'s path.
Each round runs both in fresh processes (alternating which goes first), 100,000 steps x 5
metrics; prints the best round of each and the ratios rank / plain (1.0: the same cost).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from _common import emit, machine

STEPS = 100_000
LOOP = """
import json, sys, time
t0 = time.perf_counter()
import flightlog
run = flightlog.init(project="bench", name="rank", resources=False)
t1 = time.perf_counter()
log = run.log
steps = int(sys.argv[1])
for i in range(steps):
    x = i * 0.001
    log({"loss": 1.0 / (i + 1), "acc": x, "lr": 0.1, "grad_norm": x * 2, "throughput": 1000.0 + x})
t2 = time.perf_counter()
run.finish()
t3 = time.perf_counter()
print(json.dumps({"init_s": t1 - t0, "loop_s": t2 - t1, "finish_s": t3 - t2, "run": run.id}))
"""
RANK_ENV = {
    "RANK": "0",
    "LOCAL_RANK": "0",
    "WORLD_SIZE": "2",
    "LOCAL_WORLD_SIZE": "2",
    "GROUP_RANK": "0",
    "MASTER_ADDR": "127.0.0.1",
    "MASTER_PORT": "29500",
    "TORCHELASTIC_RUN_ID": "bench-rank-overhead",
    "TORCHELASTIC_RESTART_COUNT": "0",
}


def one(kind: str, steps: int, round_no: int) -> dict[str, float]:
    home = tempfile.mkdtemp(prefix=f"flightlog-bench-rank-{kind}-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_") and k not in RANK_ENV}
    env.update(FLIGHTLOG_HOME=home, FLIGHTLOG_QUIET="1", FLIGHTLOG_CONSOLE="off")
    if kind == "rank":
        env.update(RANK_ENV, TORCHELASTIC_RUN_ID=f"bench-{round_no}")
    out = subprocess.run([sys.executable, "-c", LOOP, str(steps)], env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    if kind == "rank":  # the run is the job's, with its rank row
        check = subprocess.run(
            [
                sys.executable,
                "-c",
                "import flightlog,sys;print(len(flightlog.Client().ranks(sys.argv[1])))",
                str(result["run"]),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert check.stdout.strip() == "1", check.stdout
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"plain": [], "rank": []}
    for i in range(args.rounds):
        order = ("plain", "rank") if i % 2 == 0 else ("rank", "plain")
        for kind in order:
            runs[kind].append(one(kind, args.steps, i))
    points = args.steps * 5
    best = {
        kind: {
            "init_ms": round(min(r["init_s"] for r in rs) * 1000, 1),
            "in_loop_us_per_point": round(min(r["loop_s"] for r in rs) / points * 1e6, 3),
            "finish_s": round(min(r["finish_s"] for r in rs), 3),
        }
        for kind, rs in runs.items()
    }
    emit(
        {
            "workload": f"W1 as a rank of a 2-rank torchrun job vs a plain process: {args.steps:,} steps x 5 metrics",
            "machine": machine(),
            "plain": best["plain"],
            "rank": best["rank"],
            "ratios_rank_over_plain": {
                key: round(best["rank"][key] / best["plain"][key], 2) if best["plain"][key] else None
                for key in best["plain"]
            },
            "rounds": {
                kind: [{k: round(v, 4) for k, v in r.items() if k != "run"} for r in rs] for kind, rs in runs.items()
            },
        }
    )


if __name__ == "__main__":
    main()
