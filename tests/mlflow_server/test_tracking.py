"""MLflow's tracking protocol on `flightlog server`, driven by the real MLflow client.

MLflow is never a dependency of flightlog: the client lives in .bench-venv (`make
bench-venv`, which `make test` builds before the suite, as for `flightlog import mlflow`'s tests) and runs the
scripts in ``clients/`` as subprocesses against a real server on 127.0.0.1 with auth on.
What each test checks is what MLflow's client reads back, or raises.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog.server.testing import RunningServer, serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = Path(__file__).with_name("clients")
GHP = "ghp_" + "Q" * 36  # a GitHub token's shape: the redaction families know it
pytestmark = pytest.mark.timeout(
    600
)  # each script starts the real MLflow client: seconds alone, more on two busy cores


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path / "server", auth=True) as srv:
        yield srv


def _mlflow(python: Path, script: str, srv: RunningServer, *args: str, **env: str) -> dict[str, Any]:
    base = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/tmp"),
        "MLFLOW_TRACKING_URI": srv.url,
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",  # a refusal is final: no backoff in a test
        "MLFLOW_ENABLE_ASYNC_LOGGING": "false",
    }
    proc = subprocess.run(
        [str(python), str(CLIENTS / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, **env},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_mlflow_client_logs_searches_and_reads_back(mlflow_python: Path, server: RunningServer) -> None:
    _tracked_and_read_back(mlflow_python, server)


def test_the_same_on_a_postgresql_store(mlflow_python: Path, tmp_path: Path, postgres_uri: str) -> None:
    """Experiments live in a table of the store's own database: PostgreSQL's unique violations,
    its collation and its SQL for the search's filter and order must answer as SQLite's do."""
    with serve_in_thread(tmp_path / "server", auth=True, store_uri=postgres_uri) as srv:
        _tracked_and_read_back(mlflow_python, srv)
        out = _mlflow(mlflow_python, "errors.py", srv, "secret", MLFLOW_TRACKING_TOKEN=srv.token("writer", "errors"))
    assert out["duplicate_experiment"] == ["RESOURCE_ALREADY_EXISTS", 400]
    assert out["bad_filter"] == out["batch_metrics"] == ["INVALID_PARAMETER_VALUE", 400]
    assert out["unknown_run"] == ["RESOURCE_DOES_NOT_EXIST", 404] and out["other_project"] == ["PERMISSION_DENIED", 403]


def _tracked_and_read_back(mlflow_python: Path, server: RunningServer) -> None:
    out = _mlflow(mlflow_python, "tracking.py", server, MLFLOW_TRACKING_TOKEN=server.token("writer"))
    assert out["experiment_id"] == out["by_name"] != "0"
    r0 = out["r0"]
    assert r0["params"] == {"lr": "0.1", "batch": "32", "opt": "adam"}
    assert r0["metrics"] == {"loss": 0.2, "acc": 0.91}
    assert r0["tags"] == {"team": "vision-a"} and r0["status"] == "FINISHED" and r0["name"] == "r0"
    assert r0["loss"] == [[s, 1.0 / (s + 1)] for s in range(5)]
    batch = out["batch"]
    assert batch["params"] == 100 and batch["metric_m"] == 999.0 and batch["history_len"] == 1000
    assert batch["history"][1][:2] == [1, 1.0] and batch["history"][1][2] - batch["history"][0][2] == 1
    assert batch["status"] == "FINISHED" and batch["tags"] == {"kind": "batch"}
    search = out["search"]
    assert search["acc_gt"] == ["r0", "r1"]
    assert search["lr_and_like"] == ["r0", "r2"]
    assert search["failed"] == ["r2"]
    assert search["finished_by_name"] == ["r1", "r0", "batch"]
    assert search["ilike"] == ["r0", "r2"]
    assert search["in"] == ["r0", "r1"]
    assert search["start_time"] == ["batch"]
    assert out["search_data"] == {"metrics": r0["metrics"], "params": r0["params"], "team": "vision-a"}
    assert out["pages"][0] == ["batch", "r0"] and out["pages"][1] == ["r1", "r2"] and out["pages"][2] is None
    assert out["after_delete"] == ["batch", "r0", "r2"] and out["deleted_stage"] == "deleted"
    assert out["after_restore"] == ["batch", "r0", "r1", "r2"]
    assert out["r0_tags_after_delete"] == []
    assert "vision" in out["experiments"]
    assert out["bulk"] == [[False, 0], [False, 2], [False, 4], [True, 0], [True, 2], [True, 4]]
    # the same runs, read by flightlog's own API: one store, two protocols
    store = server.app.state.store
    runs = {r.name: r for r in store.search_runs(project="vision")}
    assert set(runs) == {"r0", "r1", "r2", "batch"}
    assert runs["r2"].status == "failed" and runs["r0"].status == "succeeded"
    assert store.metric_history(runs["batch"].id, "m").steps.tolist() == list(range(1000))


def test_bad_input_gets_mlflows_error_codes(mlflow_python: Path, server: RunningServer) -> None:
    out = _mlflow(mlflow_python, "errors.py", server, "secret", MLFLOW_TRACKING_TOKEN=server.token("writer", "errors"))
    assert out["unknown_run"] == ["RESOURCE_DOES_NOT_EXIST", 404]
    assert out["bad_filter"] == ["INVALID_PARAMETER_VALUE", 400]
    assert out["or_filter"] == ["INVALID_PARAMETER_VALUE", 400]
    assert out["bad_order"] == ["INVALID_PARAMETER_VALUE", 400]
    assert out["batch_metrics"] == ["INVALID_PARAMETER_VALUE", 400]
    assert out["batch_params"] == ["INVALID_PARAMETER_VALUE", 400]
    assert out["long_param"] == ["INVALID_PARAMETER_VALUE", 400]
    assert out["metric_text"] == ["INVALID_PARAMETER_VALUE", 400]
    assert out["changed_param"] == ["INVALID_PARAMETER_VALUE", 400]
    assert out["other_project"] == ["PERMISSION_DENIED", 403]
    assert out["duplicate_experiment"] == ["RESOURCE_ALREADY_EXISTS", 400]


def test_auth_roles_and_basic_auth_on_both_prefixes(server: RunningServer) -> None:
    writer = server.token("writer", "p")
    with httpx.Client(base_url=server.url, timeout=10) as http:
        r = http.get("/api/2.0/mlflow/experiments/get-by-name", params={"experiment_name": "p"})
        assert r.status_code == 401 and r.json()["error_code"] == "UNAUTHENTICATED"
        r = http.get("/api/2.0/mlflow/experiments/get", params={"experiment_id": "1"}, headers=_bearer("flt_nope"))
        assert r.status_code == 401 and r.json()["error_code"] == "UNAUTHENTICATED"
        created = http.post("/api/2.0/mlflow/experiments/create", json={"name": "p"}, auth=("alice", writer))
        assert created.status_code == 200, created.text
        exp_id = created.json()["experiment_id"]
        run = http.post(
            "/ajax-api/2.0/mlflow/runs/create", json={"experiment_id": exp_id, "start_time": 1}, headers=_bearer(writer)
        )
        assert run.status_code == 200, run.text
        run_id = run.json()["run"]["info"]["run_id"]
        reader = _bearer(server.token("reader", "p"))
        r = http.post(
            "/api/2.0/mlflow/runs/log-parameter", json={"run_id": run_id, "key": "a", "value": "1"}, headers=reader
        )
        assert r.status_code == 403 and r.json()["error_code"] == "PERMISSION_DENIED"
        other = _bearer(server.token("admin", "q"))
        r = http.get("/api/2.0/mlflow/runs/get", params={"run_id": run_id}, headers=other)
        assert (
            r.status_code == 404 and r.json()["error_code"] == "RESOURCE_DOES_NOT_EXIST"
        )  # as the native API hides it
        r = http.post("/api/2.0/mlflow/runs/create", json={"experiment_id": exp_id}, headers=other)
        assert r.status_code == 403 and r.json()["error_code"] == "PERMISSION_DENIED"
        r = http.post("/api/2.0/mlflow/runs/search", json={"experiment_ids": [exp_id]}, headers=other)
        assert r.status_code == 200 and r.json() == {"runs": []}
        r = http.post(
            "/api/2.0/mlflow/runs/log-batch",
            content=b"{not json",
            headers={**reader, **_bearer(writer), "Content-Type": "application/json"},
        )
        assert r.status_code == 400 and r.json()["error_code"] == "INVALID_PARAMETER_VALUE"
        r = http.get("/api/2.0/mlflow/runs/get", params={"run_id": run_id}, headers=reader)
        assert r.json()["run"]["info"]["start_time"] == 1


def test_writes_are_redacted_at_ingest(server: RunningServer) -> None:
    token = _bearer(server.token("writer"))
    with httpx.Client(base_url=server.url, timeout=10, headers=token) as http:
        run = http.post("/api/2.0/mlflow/runs/create", json={"experiment_id": "0"}).json()["run"]["info"]
        assert run["experiment_id"] == "0"
        body = {"run_id": run["run_id"], "params": [{"key": "api", "value": GHP}], "tags": [{"key": "t", "value": GHP}]}
        assert http.post("/api/2.0/mlflow/runs/log-batch", json=body).status_code == 200
        data = http.get("/api/2.0/mlflow/runs/get", params={"run_id": run["run_id"]}).json()["run"]["data"]
    stored = server.app.state.store.get_run(run["run_id"])
    assert stored.project == "default"
    for value in (stored.params["api"], stored.tags["t"], data["params"][0]["value"]):
        assert GHP not in value and "REDACTED" in value


def test_an_mlflow_client_inside_flightlog_run_logs_into_its_run(
    mlflow_python: Path, server: RunningServer, tmp_path: Path
) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import mlflow\n"
        "with mlflow.start_run() as run:\n"
        "    mlflow.log_param('lr', '0.1')\n"
        "    for step in range(3):\n"
        "        mlflow.log_metric('loss', 1.0 / (step + 1), step=step)\n"
        "print('mlflow run', run.info.run_id)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLIGHTLOG_", "MLFLOW_"))}
    env.update(
        PYTHONPATH=str(ROOT / "src"),
        FLIGHTLOG_HOME=str(tmp_path / "client"),
        FLIGHTLOG_URL=server.url,
        FLIGHTLOG_TOKEN=server.token("writer", "voices"),
        FLIGHTLOG_CONSOLE="off",
        MLFLOW_HTTP_REQUEST_MAX_RETRIES="0",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "flightlog", "run", "--project", "voices", "--", str(mlflow_python), str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    store = server.app.state.store
    (run,) = store.search_runs(project="voices")
    assert f"mlflow run {run.id}" in proc.stdout
    assert run.status == "succeeded" and run.params == {"lr": "0.1"}
    assert store.metric_history(run.id, "loss").values.tolist() == [1.0, 0.5, 1.0 / 3]


def test_experiments_are_searched_by_name_times_and_tags(server: RunningServer) -> None:
    auth = _bearer(server.token("admin"))
    with httpx.Client(base_url=server.url + "/api/2.0/mlflow", timeout=10, headers=auth) as http:
        ids = {}
        for name in ("vision-a", "vision-b", "nlp"):
            r = http.post("/experiments/create", json={"name": name, "tags": [{"key": "team", "value": name[:3]}]})
            assert r.status_code == 200, r.text
            ids[name] = r.json()["experiment_id"]
        created = {
            e["name"]: e["creation_time"]
            for e in http.post("/experiments/search", json={"max_results": 10}).json()["experiments"]
        }

        def names(filter: str) -> list[str]:
            r = http.post("/experiments/search", json={"filter": filter, "order_by": ["name"]})
            assert r.status_code == 200, r.text
            return [e["name"] for e in r.json()["experiments"]]

        assert names("name LIKE 'vision%'") == ["vision-a", "vision-b"]
        assert names("tags.team = 'nlp'") == ["nlp"]
        assert names(f"creation_time >= {created['vision-b']}") == [
            n for n in ("nlp", "vision-b") if created[n] >= created["vision-b"]
        ]
        assert names(f"attributes.last_update_time < {min(created.values())}") == []
        r = http.post("/experiments/search", json={"filter": "creation_time > 'yesterday'"})
        assert r.status_code == 400 and r.json()["error_code"] == "INVALID_PARAMETER_VALUE", r.text
        assert "milliseconds" in r.json()["message"]
        r = http.post("/experiments/search", json={"filter": "artifact_location = 'x'"})
        assert r.status_code == 400 and "creation_time" in r.json()["message"], r.text


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
