"""`make demo`: a realistic small training job on the embedded store, then what flightlog shows.

1. trains a numpy classifier under `flightlog run` (the SDK inside records params, metrics,
   stages, structured logs, an input manifest, checkpoints and a model);
2. runs a second job that fails (its data path is wrong), so there is a failure to look at;
3. prints what the CLI shows about both;
4. runs a pipeline (examples/pipeline: prepare -> validate -> train -> evaluate -> publish) whose
   train step loses its connection once and is retried from its checkpoint, then runs it again:
   every step is a cache hit; then where to look next;
5. models in production (examples/serving): trains and registers fraud v1, deploys it to two
   replicas of a Starlette API and sends traffic with labels; then v2, a bigger model trained on a
   snapshot that lost one country's rows, rolled out replica by replica; prints the registry,
   the deployment, the serving stats and the deployment's diagnosis;
6. a distributed job (examples/distributed: torchrun, two ranks on gloo, CPU) whose rank 1 gets
   stuck in its data read: the hang is found while it happens (a short threshold through the
   documented FLIGHTLOG_HANG_* settings), then the ranks and the diagnosis — rank 1 is the
   culprit, with its line and the collective it never entered; rank 0 only waited;
7. at a terminal, serves the web UI on these runs until Ctrl-C (`flightlog ui`); from a script,
   prints that command instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from flightlog.config import discover_home

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FLIGHTLOG = str(BIN / "flightlog")
HOME = Path(os.environ.get("FLIGHTLOG_HOME") or discover_home(ROOT))  # the store every command here finds
WORK = ROOT / ".flightlog-demo"
UI = "http://127.0.0.1:8765"  # `flightlog ui`'s default address (it prints another when that port is busy)


def banner(text: str) -> None:
    print(f"\n\033[1m── {text} {'─' * max(0, 70 - len(text))}\033[0m", flush=True)


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    print(f"$ flightlog {' '.join(args)}", flush=True)
    proc = subprocess.run([FLIGHTLOG, *args], env=ENV, cwd=ROOT, text=True)
    if check and proc.returncode != 0:
        sys.exit(f"demo step failed: flightlog {' '.join(args)}")
    return proc


def capture(*args: str) -> str:
    return subprocess.run([FLIGHTLOG, *args], env=ENV, cwd=ROOT, text=True, capture_output=True, check=True).stdout


ENV = {**os.environ, "FLIGHTLOG_HOME": str(HOME)}


def main() -> None:
    shutil.rmtree(WORK / "out", ignore_errors=True)
    shutil.rmtree(WORK / "data-v2", ignore_errors=True)  # the "refreshed" dataset that never arrived
    train = [sys.executable, "examples/train.py", "--data", str(WORK / "data"), "--out", str(WORK / "out")]
    banner("1. a training run under `flightlog run`")
    sh("run", "--project", "demo", "--name", "moons-mlp", "--tag", "owner=demo", "--", *train, "--epochs", "6")
    good = json.loads(capture("runs", "ls", "--project", "demo", "--limit", "1", "--format", "json"))[0]["id"]

    banner("2. the same job pointed at the wrong data directory: it fails")
    sh(
        "run",
        "--project",
        "demo",
        "--name",
        "moons-mlp",
        "--tag",
        "owner=demo",
        "--",
        *train[:2],
        "--data",
        str(WORK / "data-v2"),
        "--out",
        str(WORK / "out"),
        "--no-generate",
        check=False,
    )
    bad = json.loads(capture("runs", "ls", "--project", "demo", "--limit", "1", "--format", "json"))[0]["id"]

    banner("3. what flightlog shows")
    sh("runs", "ls", "--project", "demo", "-c", "params.lr,metrics.val_acc,metrics.loss")
    sh("runs", "show", good[:8])
    sh("metrics", good[:8])
    sh("logs", good[:8], "--tail", "5")
    sh("logs", bad[:8], "--level", "error")
    if "diagnose" in capture("--help"):
        sh("diagnose", bad[:8], check=False)

    pipe_run, cached_run = pipeline_part()
    models_part()
    hung = distributed_part()

    banner("where to look")
    print(f"""  store:        {HOME}   (FLIGHTLOG_HOME)
  runs:         {FLIGHTLOG} runs ls --project demo
  the good run: {FLIGHTLOG} runs show {good[:8]}     (metrics: flightlog metrics {good[:8]} val_acc)
  the failure:  {FLIGHTLOG} runs show {bad[:8]}     (logs: flightlog logs {bad[:8]} --level error)
  a pipeline:   {FLIGHTLOG} pipeline show {pipe_run[:8]}   (its re-run, all cache hits: {cached_run[:8]};
                in the web UI: project pipeline-demo, the run's Pipeline tab)
  models:       {FLIGHTLOG} models show fraud     (deployment: flightlog deployments show fraud-api --env prod;
                serving: flightlog serving stats fraud-api, flightlog serving predictions fraud-api --limit 20;
                the deployment's page, with the web UI up: {UI}/deployments/fraud-api?env=prod;
                the example: examples/serving/README.md)""")
    if hung:
        print(f"""  distributed:  {FLIGHTLOG} ranks {hung[:8]} --stacks   (the diagnosis: flightlog diagnose {hung[:8]};
                rank 1's logs: flightlog logs {hung[:8]} --rank 1; in the web UI: project distributed-demo,
                the run's Timeline tab has a lane per rank; the example: examples/distributed/README.md)""")
    print(
        "  docs:         docs/quickstart.md, docs/cli.md, docs/runner.md, docs/pipelines.md, docs/models.md, docs/ui.md,"
    )
    print("                docs/distributed.md")

    serve = [FLIGHTLOG, "ui", "--home", str(HOME), "--project", "demo"]
    if not sys.stdin.isatty():  # a script or CI: say how, and finish
        print(f"  web UI:       {' '.join(serve)}")
        return
    banner("7. the web UI on these runs (Ctrl-C stops it)")
    server = subprocess.Popen(serve, env=ENV, cwd=ROOT)
    while server.poll() is None:
        try:
            server.wait()
        except KeyboardInterrupt:
            pass  # the server got the same Ctrl-C and is stopping; the demo ends with it


def distributed_part() -> str | None:
    """examples/distributed/hang.py under `flightlog run -- torchrun`: rank 1 hangs, rank 0 waits;
    then the ranks and the diagnosis. The id of its run, or None without torch."""
    torchrun = BIN / "torchrun"
    banner("6. a distributed job: torchrun, 2 ranks on gloo; rank 1 gets stuck in its data read")
    if not torchrun.exists():
        print("  (torch is not installed in this environment: see examples/distributed/README.md)", flush=True)
        return None
    # a short hang threshold through the documented settings, and a short group timeout: seconds, not minutes
    hang = {"FLIGHTLOG_HANG_MIN": "1", "FLIGHTLOG_HANG_MAX": "30"}
    job = [
        "--",
        str(torchrun),
        "--nproc_per_node",
        "2",
        "--standalone",
        "examples/distributed/hang.py",
        "--timeout",
        "5",
    ]
    args = ["run", "--project", "distributed-demo", "--name", "ddp-hang", *job]
    print(f"$ {' '.join(f'{k}={v}' for k, v in hang.items())} flightlog {' '.join(args)}", flush=True)
    subprocess.run([FLIGHTLOG, *args], env={**ENV, **hang}, cwd=ROOT)  # it fails: rank 0 times out waiting
    runs = json.loads(capture("runs", "ls", "--project", "distributed-demo", "--limit", "1", "--format", "json"))
    run = str(runs[0]["id"])
    sh("ranks", run[:8])
    sh("diagnose", run[:8], "--no-baseline", check=False)
    return run


def pipeline_part() -> tuple[str, str]:
    """Run the example pipeline twice in a fresh copy: a retried step, then all cache hits."""
    work = WORK / "pipeline"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(ROOT / "examples" / "pipeline", work, ignore=shutil.ignore_patterns("data", "model", "published"))
    flaky = work / ".flaky-once"  # the train step fails once (a lost connection) while this file is missing
    spec = str(work / "pipeline.yaml")
    banner("4. a pipeline: train loses its connection once and is retried from its checkpoint")
    print(f"$ flightlog pipeline run {spec}", flush=True)
    subprocess.run(
        [FLIGHTLOG, "pipeline", "run", spec], env={**ENV, "FLIGHTLOG_DEMO_FLAKY": str(flaky)}, cwd=ROOT, check=True
    )
    runs = json.loads(capture("pipeline", "ls", "--name", "moons", "--limit", "1", "--format", "json"))
    first = runs[0]["id"]
    sh("pipeline", "show", first[:8])
    print("\n  the same pipeline again: nothing changed, so every step is reused", flush=True)
    sh("pipeline", "run", spec)
    second = json.loads(capture("pipeline", "ls", "--name", "moons", "--limit", "1", "--format", "json"))[0]["id"]
    sh("pipeline", "show", second[:8])
    return first, second


def models_part() -> None:
    """The serving example's rollout (v1 on two replicas, then v2 replica by replica), then what
    the registry, the deployment and the serving evidence show."""
    banner("5. models in production: fraud v1 deployed, then v2 rolled out (examples/serving)")
    print("$ python examples/serving/rollout.py", flush=True)
    work = WORK / "serving"
    subprocess.run([sys.executable, "examples/serving/rollout.py", "--work", str(work)], env=ENV, cwd=ROOT, check=True)
    print("\n  what the registry, the deployment and its replicas recorded", flush=True)
    sh("models", "show", "fraud")
    sh("models", "alias", "fraud@production", "--history")
    sh("deployments", "show", "fraud-api", "--env", "prod")
    sh("serving", "stats", "fraud-api", "--since", "10m")
    args = ("diagnose", "--deployment", "fraud-api", "--env", "prod")
    print(f"$ flightlog {' '.join(args)}", flush=True)
    diagnosis = subprocess.run([FLIGHTLOG, *args], env=ENV, cwd=ROOT, text=True, capture_output=True)
    if diagnosis.returncode == 2:  # click's usage error: this flightlog has no deployment diagnosis yet
        print("  (this flightlog cannot diagnose a deployment yet; `flightlog diagnose RUN` takes a run)", flush=True)
    else:  # a diagnosis that finds something may exit non-zero: the demo goes on either way
        print(diagnosis.stdout + diagnosis.stderr, end="", flush=True)


if __name__ == "__main__":
    main()
