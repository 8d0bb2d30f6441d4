"""Seconds from a stall to the hang finding, at the defaults (``FLIGHTLOG_HANG_*`` unset).

A 2-rank torchrun job on gloo takes a step every ~0.1 s; at step 20 rank 1 stops in its data
read (it writes the moment it stopped to a file first) while rank 0 waits in the next
all_reduce. The benchmark asks ``flightlog diagnose`` every 0.5 s until the report names rank
1 as the culprit of a hang, and prints how long after the stall that was — once under
``flightlog run`` (the runner's bootstrap watches the ranks) and once with ``flightlog.init()``
in each rank and no runner. The group timeout is 10 minutes (NCCL's default), the job is
released as soon as the finding is there.

With the defaults (a floor of 60 s, 10 × the usual step time) the finding should come about a
minute after the stall: the floor, the watch's look every second, the flush to the store.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import emit, machine

JOB = r"""
import datetime, os, sys, time
from pathlib import Path
import torch, torch.distributed as dist

signals = Path(os.environ["SIGNALS"])
run = None
if os.environ.get("USE_SDK") == "1":
    import flightlog
    run = flightlog.init(project="bench", name="hang")

def read_shard(rank, step):
    if rank == 1 and step == 20:
        (signals / "stalled").write_text(repr(time.time()))
        while not (signals / "release").exists():
            time.sleep(0.05)
    return torch.ones(4)

dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=10))
rank = dist.get_rank()
for step in range(25):
    x = read_shard(rank, step)
    dist.all_reduce(x)
    if run is not None:
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.1)
dist.destroy_process_group()
"""


def _measure(tmp: Path, runner: bool) -> dict[str, float | str | None]:
    home = tmp / ("home-runner" if runner else "home-sdk")
    signals = tmp / ("signals-runner" if runner else "signals-sdk")
    signals.mkdir()
    script = tmp / "job.py"
    script.write_text(JOB)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    env.update(FLIGHTLOG_HOME=str(home), SIGNALS=str(signals), FLIGHTLOG_CONSOLE="off")
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    command = [torchrun, "--nproc_per_node", "2", "--standalone", str(script)]
    if runner:
        command = [str(Path(sys.executable).with_name("flightlog")), "run", "--project", "bench", "--", *command]
    else:
        env["USE_SDK"] = "1"
    proc = subprocess.Popen(
        command, env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    os.environ["FLIGHTLOG_HOME"] = str(home)
    import flightlog

    found_at = None
    summary = None
    try:
        while proc.poll() is None:
            time.sleep(0.5)
            if not (signals / "stalled").exists():
                continue
            try:
                client = flightlog.Client(home=home)
                runs = client.runs(project="bench")
                report = client.diagnose(runs[0].id, auto_baseline=False) if runs else {"findings": []}
                client.close()
            except Exception:
                continue
            top = next((f for f in report["findings"] if f["category"] == "hang"), None)
            if top is not None and (top.get("culprit") or {}).get("rank") == 1:
                found_at = time.time()
                summary = top["summary"]
                break
    finally:
        (signals / "release").write_text("go")
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    stalled = float((signals / "stalled").read_text()) if (signals / "stalled").exists() else None
    return {
        "stall_to_finding_s": (found_at - stalled) if found_at and stalled else None,
        "summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", choices=("runner", "sdk"), help="measure one way only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="flightlog-bench-hang-") as tmp:
        runner = _measure(Path(tmp), runner=True) if args.only != "sdk" else None
        sdk = _measure(Path(tmp), runner=False) if args.only != "runner" else None
    emit(
        {
            "benchmark": "hang_latency",
            "machine": machine(),
            "defaults": {"FLIGHTLOG_HANG_MIN": 60, "FLIGHTLOG_HANG_FACTOR": 10, "FLIGHTLOG_HANG_MAX": 300},
            "flightlog_run": runner,
            "sdk_in_each_rank": sdk,
        }
    )


if __name__ == "__main__":
    main()
