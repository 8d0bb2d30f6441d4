"""What the hang watch costs a rank of a distributed job, against the same loop in one process.

The loop (W1's: 5 metrics per step with ``run.log``, plus a ``data_loading`` stage per step) runs
in fresh processes, alternated, best of the rounds:

* ``single`` — a plain process (no launcher variables);
* ``rank`` — the same process as rank 1 of 2 (``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``,
  ``TORCHELASTIC_RUN_ID``, as torchrun sets them), with the hang watch at its defaults;
* ``rank_no_watch`` — the same rank with ``FLIGHTLOG_HANG_WATCH=off`` (what the watch itself costs).

Each prints the in-loop cost per point and the process's CPU seconds from ``init()`` to
``finish()``. Also measured once: one sample of the collectives' entry times (the Flight
Recorder dumped and read, with 2,000 entries), which a rank takes every
``FLIGHTLOG_COLLECTIVE_SAMPLE`` seconds (60 by default), and the watch thread's CPU over an
idle 20 s.

Prints one JSON object with the ratios rank / single.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from _common import emit, machine

LOOP = r"""
import json, os, sys, time
import flightlog
steps = int(sys.argv[1])
run = flightlog.init(project="bench", name="rank", resources=True)
log, stage = run.log, run.stage
cpu0 = time.process_time()
t0 = time.perf_counter()
for i in range(steps):
    with stage("data_loading"):
        x = i * 0.001
    log({"loss": 1.0 / (i + 1), "acc": x, "lr": 0.1, "grad_norm": x * 2, "throughput": 1000.0 + x}, step=i)
t1 = time.perf_counter()
run.finish()
print(json.dumps({"loop_s": t1 - t0, "per_point_us": (t1 - t0) / (steps * 5) * 1e6, "cpu_s": time.process_time() - cpu0}))
"""

SAMPLE = r"""
import json, os, time
os.environ["TORCH_FR_BUFFER_SIZE"] = "2000"
import torch, torch.distributed as dist
from flightlog.resources.agent.stacks import flight_recorder_raw, normalize_flight_recorder
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % int(os.environ["PORT"]), world_size=1, rank=0)
x = torch.ones(4)
for _ in range(2500):
    dist.all_reduce(x)
best = float("inf")
for _ in range(20):
    t0 = time.perf_counter()
    data = normalize_flight_recorder(flight_recorder_raw(), 0, max_entries=100_000)
    best = min(best, time.perf_counter() - t0)
dist.destroy_process_group()
print(json.dumps({"sample_ms": best * 1000, "entries": data["total"]}))
"""


def _env(home: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLIGHTLOG_", "RANK", "LOCAL_RANK", "WORLD_SIZE"))}
    env.update(FLIGHTLOG_HOME=home, FLIGHTLOG_QUIET="1", FLIGHTLOG_CONSOLE="off", **extra)
    return env


RANK = {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "bench"}


def _loop(env: dict[str, str], steps: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", LOOP, str(steps)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _watch_cpu(home: str) -> dict[str, float]:
    """The CPU of a process that only has a run open (resource sampling off) for 20 s, with and without the watch."""
    code = (
        "import json, time, flightlog\n"
        "run = flightlog.init(project='bench', name='idle', resources=True)\n"
        "c0 = time.process_time(); time.sleep(20); c1 = time.process_time()\n"
        "run.finish(); print(json.dumps({'cpu_s': c1 - c0}))\n"
    )
    out = {}
    for name, extra in (("watch_on", {}), ("watch_off", {"FLIGHTLOG_HANG_WATCH": "off"})):
        env = _env(home, **RANK, **extra)
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        out[name] = json.loads(proc.stdout.strip().splitlines()[-1])["cpu_s"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    modes = {
        "single": {},
        "rank": dict(RANK),
        "rank_no_watch": {**RANK, "FLIGHTLOG_HANG_WATCH": "off"},
    }
    rounds: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="flightlog-bench-ranks-") as home:
        for r in range(args.rounds):
            order = list(modes) if r % 2 == 0 else list(reversed(modes))
            for mode in order:
                env = _env(
                    home, **{**modes[mode], "TORCHELASTIC_RUN_ID": f"bench-{mode}-{r}"} if mode != "single" else {}
                )
                rounds[mode].append(_loop(env, args.steps))
        best = {m: {k: min(x[k] for x in rs) for k in rs[0]} for m, rs in rounds.items()}
        env = _env(home, PORT=str(29_000 + os.getpid() % 1000))
        sample = subprocess.run([sys.executable, "-c", SAMPLE], env=env, capture_output=True, text=True)
        sample_out = json.loads(sample.stdout) if sample.returncode == 0 else {"error": sample.stderr[-500:]}
        idle = _watch_cpu(home)
    emit(
        {
            "benchmark": "hang_watch_overhead",
            "machine": machine(),
            "steps": args.steps,
            "rounds": args.rounds,
            "best": best,
            "ratio_rank_to_single": {
                "per_point": best["rank"]["per_point_us"] / best["single"]["per_point_us"],
                "cpu": best["rank"]["cpu_s"] / best["single"]["cpu_s"],
            },
            "ratio_watch_on_to_off": {
                "per_point": best["rank"]["per_point_us"] / best["rank_no_watch"]["per_point_us"],
                "cpu": best["rank"]["cpu_s"] / best["rank_no_watch"]["cpu_s"],
            },
            "collective_sample": sample_out,
            "idle_20s_cpu_s": idle,
        }
    )


if __name__ == "__main__":
    main()
