"""The MLflow protocol: the real MLflow client against `flightlog server` and `mlflow server`.

Both servers run on this machine in this run with the defaults a user gets: `flightlog server`
(its embedded SQLite store, no flags beyond a port and a home) and `mlflow server
--backend-store-uri sqlite:///...` from .bench-venv (its default 4 uvicorn workers). The
client side is bench/peer_mlflow_protocol.py in .bench-venv, the same code for both:

- seeding: N runs (10 params, 5 metrics, 2 tags each, the same logical data for both servers)
  through the REST API, `runs/create` + `runs/log-batch`, by 8 client threads;
- ingest: `MlflowClient.log_batch` of 1,000 metrics (10 names x 100 steps) into one run,
  REPEATS timed calls;
- search: `MlflowClient.search_runs` over the N runs with the filter
  `metrics.acc > 0.5 and params.opt = 'adam'` and `order_by=["metrics.loss ASC"]`, with the
  client's default `max_results` (1,000 rows back) and with `max_results=50`;
- the wire: the same 1,000-row search as one plain `runs/search` request, its JSON decoded but
  not turned into MLflow's `Run` entities (the client's own share, the same for both servers,
  is about 300 ms of a 1,000-row `search_runs` on a 2-core machine).

The measuring client runs ROUNDS times against each server, alternating which goes first.
Figures are medians over every timed call; ratios are MLflow's time / flightlog's.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from _common import PEER_PYTHON, emit, machine

FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))
CLIENT = Path(__file__).with_name("peer_mlflow_protocol.py")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(url: str, proc: subprocess.Popen[Any], deadline_s: float = 300) -> None:
    """Poll the server's health route (flightlog's `/healthz`, MLflow's `/health`) until it answers."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server at {url} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the server at {url} did not answer /health within {deadline_s} s")


def _client(url: str, *args: str) -> dict[str, Any]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/tmp"),
        "MLFLOW_TRACKING_URI": url,
        "MLFLOW_ENABLE_ASYNC_LOGGING": "false",
    }
    proc = subprocess.run([str(PEER_PYTHON), str(CLIENT), *args], capture_output=True, text=True, timeout=3600, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"the MLflow client failed against {url}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10_000, help="runs seeded for the search")
    parser.add_argument("--rounds", type=int, default=3, help="measuring clients per server, alternated")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per client and operation")
    args = parser.parse_args()
    if not PEER_PYTHON.exists():
        raise SystemExit(f"no MLflow environment: run `make bench-venv` first ({PEER_PYTHON} missing)")

    work = Path(tempfile.mkdtemp(prefix="flightlog-bench-mlflow-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLIGHTLOG_", "MLFLOW_"))}
    flightlog = subprocess.Popen(
        [FLIGHTLOG, "server", "--port", "0", "--home", str(work / "flightlog")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert flightlog.stdout is not None
    fl_url = flightlog.stdout.readline().split("listening on ")[1].split()[0]
    port = _free_port()
    (work / "mlflow").mkdir()
    mlflow = subprocess.Popen(
        [
            str(PEER_PYTHON.with_name("mlflow")),
            "server",
            "--backend-store-uri",
            f"sqlite:///{work}/mlflow/mlflow.db",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        cwd=work / "mlflow",
        env={**env, "PATH": f"{PEER_PYTHON.parent}:/usr/bin:/bin"},
        stdout=subprocess.DEVNULL,
        stderr=(work / "mlflow" / "server.log").open("w"),  # read it when the server does not come up
    )
    ml_url = f"http://127.0.0.1:{port}"
    servers = {"flightlog": fl_url, "mlflow": ml_url}
    try:
        _wait_healthy(fl_url + "/healthz", flightlog)
        _wait_healthy(ml_url + "/health", mlflow)
        seeded = {name: _client(url, "seed", "bench", str(args.runs)) for name, url in servers.items()}
        rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in servers}
        for r in range(args.rounds):
            order = list(servers) if r % 2 == 0 else list(reversed(servers))
            for name in order:
                rounds[name].append(_client(servers[name], "measure", seeded[name]["experiment_id"], str(args.repeats)))
    finally:
        for proc in (flightlog, mlflow):
            proc.terminate()
            proc.wait(timeout=60)

    figures: dict[str, dict[str, Any]] = {}
    for name, results in rounds.items():
        batch = [t for res in results for t in res["log_batch_s"]]
        search = [t for res in results for t in res["search_s"]]
        top = [t for res in results for t in res["search_top50_s"]]
        wire = [t for res in results for t in res["search_wire_s"]]
        figures[name] = {
            "seed_runs_s": seeded[name]["seed_s"],
            "log_batch_1000_ms": _ms(batch),
            "log_batch_metrics_per_s": round(1000 / statistics.median(batch)),
            "search_runs_ms": _ms(search),
            "search_rows": results[-1]["search_rows"],
            "search_wire_ms": _ms(wire),
            "search_wire_rows": results[-1]["search_wire_rows"],
            "search_top50_ms": _ms(top),
            "search_top50_rows": results[-1]["search_top50_rows"],
            "m0_points_stored": results[-1]["m0_points_stored"],
        }
    fl, ml = figures["flightlog"], figures["mlflow"]
    emit(
        {
            "benchmark": "mlflow_protocol",
            "runs": args.runs,
            "rounds": args.rounds,
            "repeats": args.repeats,
            "search_filter": "metrics.acc > 0.5 and params.opt = 'adam'",
            "search_order_by": ["metrics.loss ASC"],
            "flightlog": fl,
            "mlflow": ml,
            "ratio_ingest": round(ml["log_batch_1000_ms"] / fl["log_batch_1000_ms"], 1),
            "ratio_search": round(ml["search_runs_ms"] / fl["search_runs_ms"], 1),
            "ratio_search_top50": round(ml["search_top50_ms"] / fl["search_top50_ms"], 1),
            "ratio_search_wire": round(ml["search_wire_ms"] / fl["search_wire_ms"], 1),
            "ratio_seed": round(ml["seed_runs_s"] / fl["seed_runs_s"], 1),
            "targets": {"ingest": 5, "search": 10},
            "mlflow_version": rounds["mlflow"][-1]["mlflow_version"],
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
