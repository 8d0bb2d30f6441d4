"""An MLflow 2.x client on `flightlog server`: the protocol is served to the clients teams still run.

The client is mlflow-skinny 2.22.5 (the last 2.x release) in a venv of its own,
.mlflow2-venv (`make mlflow2-venv`, pinned and idempotent), which `make test` builds before the
suite, as it builds .bench-venv for the 3.x tests: never skipped (the fixture fails without it). It runs the same script as the
3.x round trip (``clients/tracking.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from flightlog.server.testing import RunningServer, serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("clients") / "tracking.py"
pytestmark = pytest.mark.timeout(600)  # the real MLflow 2 client: seconds alone, more on two busy cores


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path / "server", auth=True) as srv:
        yield srv


def test_an_mlflow_2x_client_logs_searches_and_reads_back(mlflow2_python: Path, server: RunningServer) -> None:
    proc = subprocess.run(
        [str(mlflow2_python), str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": os.environ.get("HOME", "/tmp"),
            "MLFLOW_TRACKING_URI": server.url,
            "MLFLOW_TRACKING_TOKEN": server.token("writer"),
            "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
            "MLFLOW_ENABLE_ASYNC_LOGGING": "false",
        },
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert subprocess.run(
        [str(mlflow2_python), "-c", "import mlflow; print(mlflow.__version__)"], capture_output=True, text=True
    ).stdout.startswith("2.")
    r0 = out["r0"]
    assert out["experiment_id"] == out["by_name"] != "0"
    assert r0["params"] == {"lr": "0.1", "batch": "32", "opt": "adam"} and r0["metrics"] == {"loss": 0.2, "acc": 0.91}
    assert r0["loss"] == [[s, 1.0 / (s + 1)] for s in range(5)] and r0["status"] == "FINISHED"
    assert out["batch"]["params"] == 100 and out["batch"]["history_len"] == 1000
    assert out["search"]["acc_gt"] == ["r0", "r1"] and out["search"]["lr_and_like"] == ["r0", "r2"]
    assert out["search"]["finished_by_name"] == ["r1", "r0", "batch"]
    assert out["pages"][0] == ["batch", "r0"] and out["pages"][1] == ["r1", "r2"] and out["pages"][2] is None
    assert out["after_delete"] == ["batch", "r0", "r2"] and out["after_restore"] == ["batch", "r0", "r1", "r2"]
    assert out["bulk"] == [[False, 0], [False, 2], [False, 4], [True, 0], [True, 2], [True, 4]]
    runs = {r.name: r for r in server.app.state.store.search_runs(project="vision")}
    assert set(runs) == {"r0", "r1", "r2", "batch"} and runs["r2"].status == "failed"
