"""Frameworks' own MLflow logging records the same on `flightlog server` as on `mlflow server`.

The same script (``clients/parity.py``) runs `mlflow.sklearn.autolog()` on a real
scikit-learn fit and Lightning's `MLFlowLogger` on a real fit, once against MLflow's own
server (SQLite backend, from .bench-venv, which `make test` builds before the suite, as for the
other MLflow tests) and once against flightlog's, and reads each run back
through MLflow's client; the test compares the two field by field. Left out: what a server or
a clock decides (the user and source tags, timestamps' values, ids, artifact URIs).

Artifacts (autolog's ``estimator.html``) go up through each server's own artifact proxy;
models are not logged (``log_models=False``: tests/mlflow_server/test_models.py covers
``log_model``): this test is about tracking records.

Lightning and torch live in the project's venv and MLflow in .bench-venv; MLFlowLogger needs
both in one process, so the Lightning fit runs under the project's interpreter with
.bench-venv's site-packages appended to ``sys.path`` (both pin the same numpy and pandas).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog.server.testing import RunningServer, serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("clients") / "parity.py"
SERVER_SPECIFIC = ("mlflow.user", "mlflow.source.")
pytestmark = pytest.mark.timeout(900)  # MLflow's server and two fits: minutes on two busy cores


@pytest.fixture(scope="module")
def mlflow_server(mlflow_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """MLflow's own tracking server on its SQLite store: the reference."""
    base = tmp_path_factory.mktemp("mlflow-server")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = (base / "server.log").open("w")
    proc = subprocess.Popen(
        [str(mlflow_python.with_name("mlflow")), "server", "--backend-store-uri", f"sqlite:///{base}/mlflow.db"]
        + ["--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        cwd=base,
        env={"PATH": f"{mlflow_python.parent}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180  # its migrations and imports take 10-30 s on two busy cores
    try:
        while True:
            assert proc.poll() is None, (base / "server.log").read_text()[-3000:]
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "mlflow server did not answer /health in 180 s"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path / "server", auth=True) as srv:
        yield srv


def _both(python: Path, workload: str, reference: str, srv: RunningServer, tmp: Path, **env: str) -> list[Any]:
    """Run the workload against both servers at once; what each client read back."""
    procs = []
    for url, token in [(reference, ""), (srv.url, srv.token("writer"))]:
        run_env = {
            "PATH": "/usr/bin:/bin",
            "HOME": os.environ.get("HOME", "/tmp"),
            "MLFLOW_TRACKING_URI": url,
            "MLFLOW_TRACKING_TOKEN": token,
            "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
            "MLFLOW_ENABLE_ASYNC_LOGGING": "false",
            **env,
        }
        procs.append(
            subprocess.Popen(
                [str(python), str(SCRIPT), workload],
                env=run_env,
                cwd=tmp,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr[-4000:]
        assert "unexpected error during" not in stderr, stderr[-4000:]  # autolog swallows its failures
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs


def _assert_same(want: dict[str, Any], got: dict[str, Any]) -> None:
    for field in ("experiment", "name", "status", "params", "metrics", "inputs"):
        assert got[field] == want[field], field
    tags = [{k: v for k, v in run["tags"].items() if not k.startswith(SERVER_SPECIFIC)} for run in (want, got)]
    assert tags[1] == tags[0]
    assert sorted(got["histories"]) == sorted(want["histories"])
    for key, points in want["histories"].items():
        assert [p[:2] for p in got["histories"][key]] == [p[:2] for p in points], key
        assert all(p[2] > 0 for p in got["histories"][key])  # a timestamp in ms, kept
    assert got["start_time"] <= got["end_time"]


def test_sklearn_autolog_records_the_same_as_on_mlflows_server(
    mlflow_python: Path, mlflow_server: str, server: RunningServer, tmp_path: Path
) -> None:
    want, got = _both(mlflow_python, "sklearn", mlflow_server, server, tmp_path)
    assert want["metrics"]["training_r2_score"] > 0.4 and len(want["params"]) >= 8  # autolog did record
    assert want["tags"]["estimator_name"] == "Ridge" and want["inputs"]
    _assert_same(want, got)


def test_lightning_mlflowlogger_records_the_same_as_on_mlflows_server(
    mlflow_python: Path, mlflow_server: str, server: RunningServer, tmp_path: Path
) -> None:
    site = sysconfig.get_paths(vars={"base": str(mlflow_python.parents[1]), "platbase": str(mlflow_python.parents[1])})
    want, got = _both(
        Path(sys.executable), "lightning", mlflow_server, server, tmp_path, PARITY_APPEND_PATH=site["purelib"]
    )
    assert want["params"] == {"hidden": "4", "lr": "0.1"}
    assert len(want["histories"]["train_loss_step"]) == 8 and len(want["histories"]["val_loss"]) == 2
    _assert_same(want, got)
