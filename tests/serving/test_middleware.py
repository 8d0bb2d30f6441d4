"""The ASGI middleware in a real uvicorn server, driven by a real httpx client: evidence,
aggregates and sampled records reach the store (local and through a server), labels join by
request id, a SIGKILLed replica is gone, and a replica whose server is down keeps serving."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog import Client, serving
from flightlog.server.testing import serve_in_thread
from tests.helpers import child_env, cli, cli_json
from tests.serving.conftest import ModelServer, free_port, poll


def _traffic(url: str) -> dict[str, str]:
    """Three scored requests (one with our own id), one error; the ids the responses carried."""
    with httpx.Client(base_url=url, timeout=30) as http:
        given = http.post(
            "/score", json={"amount": 800, "country": "FR", "email": "a@b.c"}, headers={"X-Request-ID": "req-given"}
        )
        made = http.post("/score", json={"amount": 10, "country": "DE", "email": "x@y.z"})
        third = http.post("/score", json={"amount": 990, "country": "FR", "email": "q@r.s"})
        boom = http.post("/boom", json={})
        probe = http.get("/healthz")  # a probe passes through unrecorded (DEFAULT_SKIP_PATHS)
        assert [r.status_code for r in (given, made, third, boom, probe)] == [200, 200, 200, 500, 200]
        assert "x-request-id" not in probe.headers
        assert given.headers["x-request-id"] == "req-given"
        assert made.headers["x-request-id"] and made.headers["x-request-id"] != "req-given"
        assert http.post("/label", json={"request_id": "req-given", "label": 1}).status_code == 204
        return {"given": "req-given", "made": made.headers["x-request-id"], "boom": boom.headers["x-request-id"]}


def _check_evidence(client: Client, ids: dict[str, str]) -> None:
    rows = {r["request_id"]: r for r in serving.predictions(client, "fraud-api")}
    assert set(ids.values()) <= set(rows), rows
    given = rows["req-given"]
    assert given["inputs"] == {"amount": 800, "country": "FR"}  # the allow-list, as given
    assert set(given["input_hashes"]) == {"email"} and len(given["input_hashes"]["email"]) == 64
    assert "a@b.c" not in str(given)
    assert given["output"] == {"score": 0.8, "label": "fraud"} and given["version"] == "3"
    assert given["label"] == 1 and rows[ids["made"]]["label"] is None
    boom = rows[ids["boom"]]
    assert boom["status"] == 500 and boom["error"] == "HTTP 500"
    assert boom["output"] is None and boom["inputs"] == {} and boom["input_hashes"] == {}, "no body for a non-2xx"
    aggs = serving.aggregates(client, "fraud-api")
    assert (
        sum(a["requests"] for a in aggs) == 6 and sum(a["errors"] for a in aggs) == 1
    )  # 4, the label call, the start-up ping
    assert all(a["p99_ms"] is not None and a["p99_ms"] > 0 for a in aggs)
    labels = {}
    for a in aggs:
        for k, v in a["outputs"]["fields"].get("label", {}).get("values", {}).items():
            labels[k] = labels.get(k, 0) + v
    assert labels == {"fraud": 2, "ok": 2}  # the ping scored "ok" as well
    run = serving.replicas(client, "fraud-api")[0]
    tags = client.run(run["run_id"]).tags
    assert {k: tags[k] for k in tags if k.startswith("serving.")} == {
        "serving.endpoint": "fraud-api",
        "serving.env": "prod",
        "serving.model": "",  # served outside the registry (attach(version=...) alone)
        "serving.version": "3",
        "serving.replica": run["replica"],
    }
    metrics = client.metrics(run["run_id"])
    assert metrics["serving.requests"].last == 6
    assert {"serving.errors", "serving.latency_ms.p50", "serving.latency_ms.p95", "serving.latency_ms.p99"} <= set(
        metrics
    )


def test_a_uvicorn_app_records_its_evidence_in_the_local_store(tmp_path: Path, model_server: Any) -> None:
    home = tmp_path / "home"
    app = model_server(home)
    ids = _traffic(app.url)
    app.stop(signal.SIGTERM)
    with Client(home) as client:
        _check_evidence(client, ids)


def test_evidence_arrives_through_a_server(tmp_path: Path, model_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_in_thread(tmp_path / "srv", auth=True) as srv:
        token = srv.token("writer", project="fraud")
        app = model_server(tmp_path / "home", FLIGHTLOG_URL=srv.url, FLIGHTLOG_TOKEN=token)
        ids = _traffic(app.url)
        app.stop(signal.SIGTERM)
        monkeypatch.setenv("FLIGHTLOG_URL", srv.url)
        monkeypatch.setenv("FLIGHTLOG_TOKEN", srv.token("reader"))
        with Client(tmp_path / "reader") as client:
            poll(lambda: len(serving.predictions(client, "fraud-api")) >= 4)
            _check_evidence(client, ids)


def test_a_replica_killed_with_sigkill_is_marked_gone(tmp_path: Path, model_server: Any) -> None:
    home = tmp_path / "home"
    app = model_server(home, SERVING_HEARTBEAT="0.2")
    with httpx.Client(base_url=app.url, timeout=30) as http:
        assert http.post("/score", json={"amount": 1}).status_code == 200
    with Client(home) as client:
        poll(lambda: [r for r in serving.replicas(client, "fraud-api") if r["state"] == "serving" and r["heartbeat"]])
        app.stop(signal.SIGKILL)
        # a replica late with its heartbeat (a busy machine) reads as gone too: wait for the crash itself
        rows = poll(lambda: [r for r in serving.replicas(client, "fraud-api") if r["status"] == "crashed"])
        assert rows[0]["state"] == "gone"


def test_a_replica_whose_server_is_down_keeps_serving_and_its_evidence_arrives_later(
    tmp_path: Path, model_server: Any, server_process: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()  # nothing listens there yet
    home = tmp_path / "home"
    app = model_server(home, FLIGHTLOG_URL=f"http://127.0.0.1:{port}")
    ids = _traffic(app.url)  # answered while the store is unreachable
    app.stop(signal.SIGTERM)
    assert list((home / "journal").glob("*.journal")), "the evidence waits in the journal"
    srv = server_process()
    srv.port = port
    url = srv.start()
    cli(home, "sync", env=child_env(home, FLIGHTLOG_URL=url))
    monkeypatch.setenv("FLIGHTLOG_URL", url)
    with Client(tmp_path / "reader") as client:
        _check_evidence(client, ids)


@pytest.fixture
def server_process(tmp_path: Path) -> Any:
    from tests.server.conftest import ServerProcess

    made: list[ServerProcess] = []

    def make(*args: str) -> ServerProcess:
        proc = ServerProcess(tmp_path / "srv", *args)
        made.append(proc)
        return proc

    yield make
    for proc in made:
        if proc.proc is not None:
            proc.stop(signal.SIGKILL)


def test_the_model_server_is_unchanged_without_a_replica(tmp_path: Path, model_server: Any) -> None:
    app: ModelServer = model_server(tmp_path / "home", SERVING_ATTACH="0")
    response = httpx.post(app.url + "/score", json={"amount": 800}, timeout=30)
    assert response.json() == {"score": 0.8, "label": "fraud"} and "x-request-id" not in response.headers


def test_a_replica_stopped_with_sigterm_ends_as_a_stop(tmp_path: Path, model_server: Any) -> None:
    """uvicorn's graceful shutdown on SIGTERM is how a replica is normally taken down (a rollout,
    Kubernetes): its run ends ``stopped`` (on purpose, not a failure), its evidence written."""
    home = tmp_path / "home"
    app = model_server(home)
    with httpx.Client(base_url=app.url, timeout=30) as http:
        ids = [http.post("/score", json={"amount": 1}).headers["x-request-id"] for _ in range(2)]
    # the ids this replica made differ first, so a table's cut-off cell still tells them apart
    assert ids[0][:2] != ids[1][:2] and all(len(i) <= 20 for i in ids), ids
    app.stop(signal.SIGTERM)
    with Client(home) as client:
        (replica,) = serving.replicas(client, "fraud-api")
        run = client.run(replica["run_id"])
        assert (run.status, run.end_reason, replica["state"]) == ("stopped", "signal", "gone")
        assert sum(a["requests"] for a in serving.aggregates(client, "fraud-api")) == 3  # the ping and the two scored
    # what a person then reads about it: a clean stop, not a failure to act on
    report = cli_json(home, "diagnose", run.id)
    assert not report["findings"], [f["summary"] for f in report["findings"]]  # no "terminated from outside"
    assert not report["runbook"], "no preemption advice (checkpoints, --resume) for a replica taken down"
    assert "stopped by SIGTERM" in report["serving"]["stop"] and "not a failure" in report["serving"]["stop"]
    assert "failed" not in str(report["rightsizing"]["memory"].get("basis") or "")
    human = cli(home, "diagnose", run.id).stdout
    assert "killed_by_signal" not in human and "--resume" not in human and "stopped by SIGTERM" in human
    assert "goodput" not in cli(home, "runs", "show", run.id).stdout, "a replica has no training goodput"
    hours = cli_json(home, "triage", "--goodput", "--project", run.project)
    assert hours["runs"] == 0 and not hours["top_wasters"], "a replica's life is not hours thrown away"
