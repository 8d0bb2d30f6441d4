"""The serving routes and the deployment timeline through a real server on 127.0.0.1, over
evidence recorded by real training runs, the real CLI and real serving processes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from flightlog.client import Client
from flightlog.registry import Registry
from flightlog.server.testing import RunningServer, serve_in_thread
from flightlog.serving.timeline import timeline
from tests.helpers import cli, cli_json
from tests.serving.conftest import poll
from tests.serving.deployed import ALERT_RULES, Deployed, deploy_with_traffic


@dataclass
class Served:
    deployed: Deployed
    server: RunningServer


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with pytest.MonkeyPatch.context() as mp:
        for name in ("FLIGHTLOG_URL", "FLIGHTLOG_TOKEN", "FLIGHTLOG_STORE", "FLIGHTLOG_RUN_ID", "FLIGHTLOG_PROJECT"):
            mp.delenv(name, raising=False)
        home = tmp_path_factory.mktemp("serving-api") / "home"
        deployed = deploy_with_traffic(home)
        (home / "alerts.yaml").write_text(ALERT_RULES)  # the server evaluates them in the background
        with serve_in_thread(home, auth=True) as server:
            yield Served(deployed, server)


def _api(served: Served, project: str | None = None) -> httpx.Client:
    token = served.server.token("reader", project=project) if project else served.server.token("reader")
    return httpx.Client(
        base_url=served.server.url + "/api/v1", timeout=30, headers={"Authorization": f"Bearer {token}"}
    )


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()["error"]
    assert body["code"] and body["message"]
    return body


def test_the_timeline_has_the_desired_history_replicas_minutes_and_the_rollout(served: Served) -> None:
    with _api(served) as api:
        doc = api.get("/deployments/fraud-api/timeline", params={"env": "prod"}).json()
        assert (doc["endpoint"], doc["env"], doc["model"], doc["version"]) == ("fraud-api", "prod", "fraud", 2)
        assert [(d["from_version"], d["version"]) for d in doc["desired"]] == [(None, 1), (1, 2)]
        assert all(d["time"].endswith("Z") and d["actor"] for d in doc["desired"])
        (rollout,) = doc["rollouts"]
        assert (rollout["kind"], rollout["from_version"], rollout["to_version"], rollout["replicas"]) == (
            "rollout",
            1,
            2,
            1,
        )
        # one rollout time everywhere: v2's first traffic, its deploy beside it
        assert rollout["deployed_at"] <= rollout["time"] == rollout["first_traffic_at"]
        v2_minutes = [m["time"] for m in doc["minutes"] if m["version"] == "2"]
        assert rollout["time"][:16] == min(v2_minutes)[:16]  # in v2's first minute of traffic
        # each version's totals over the window it served
        versions = {v["version"]: v for v in doc["versions"]}
        assert (versions["1"]["requests"], versions["2"]["requests"]) == (80, 40)
        assert versions["2"]["errors"] == 4 and versions["2"]["error_rate"] == 0.1
        assert versions["2"]["p50_ms"] > 3.5 and versions["2"]["first"].endswith("Z")  # v2 sleeps 4 ms a call
        lanes = sorted((r["version"], r["state"]) for r in doc["replicas"])
        assert lanes == [("1", "gone"), ("1", "gone"), ("2", "gone")]
        assert all(r["started"].endswith("Z") and r["ended"].endswith("Z") for r in doc["replicas"])
        by_version: dict[str, dict[str, float]] = {}
        for m in doc["minutes"]:
            assert set(m) == {
                "version",
                "minute",
                "time",
                "requests",
                "errors",
                "error_rate",
                "client_errors",
                "client_error_rate",
                "p50_ms",
                "p95_ms",
                "p99_ms",
                "replicas",
            }
            row = by_version.setdefault(m["version"], {"requests": 0, "errors": 0, "p50": 0.0})
            row["requests"] += m["requests"]
            row["errors"] += m["errors"]
            row["p50"] = max(row["p50"], m["p50_ms"])
        assert by_version["1"]["requests"] == 80 and by_version["1"]["errors"] == 0
        assert by_version["2"]["requests"] == 40 and by_version["2"]["errors"] == 4
        assert by_version["2"]["p50"] > by_version["1"]["p50"]  # v2 sleeps 4 ms, v1 1 ms
        # v2 fails one request in ten: the server's alert rule fires, naming the endpoint and the version
        alerts = poll(lambda: api.get("/deployments/fraud-api/timeline").json()["alerts"], timeout=60)
        assert [(a["rule"], a["labels"]["endpoint"], a["labels"]["version"]) for a in alerts] == [
            ("fraud-errors", "fraud-api", "2")
        ]
        # without env=: the endpoint's only environment; the same document
        assert api.get("/deployments/fraud-api/timeline").json()["desired"] == doc["desired"]
        # since= in the future: no minutes, the lanes and history stay
        later = api.get("/deployments/fraud-api/timeline", params={"since": "2100-01-01T00:00:00Z"}).json()
        assert later["minutes"] == [] and len(later["replicas"]) == 3
        # the deployment's own route (the registry's) still answers beside the timeline's
        assert api.get("/deployments/fraud-api/prod").json()["desired"]["version"] == 2


def test_the_serving_routes_read_aggregates_predictions_and_replicas(served: Served) -> None:
    with _api(served) as api:
        aggs = api.get("/serving/fraud-api/aggregates", params={"env": "prod"}).json()["aggregates"]
        assert sum(a["requests"] for a in aggs) == 120 and {a["version"] for a in aggs} == {"1", "2"}
        assert all("latency" in a and a["time"].endswith("Z") for a in aggs)
        preds = api.get("/serving/fraud-api/predictions", params={"limit": 5}).json()["predictions"]
        assert len(preds) == 5 and all(p["version"] == "2" and p["time"].endswith("Z") for p in preds)
        assert preds[-1]["inputs"] == {"amount": 39} and "country" in preds[-1]["input_hashes"]
        everything = api.get("/serving/fraud-api/predictions", params={"limit": 0}).json()["predictions"]
        assert len(everything) == 120
        versions = api.get("/serving/fraud-api/versions", params={"env": "prod"}).json()["versions"]
        assert [(v["version"], v["requests"], v["errors"]) for v in versions] == [("1", 80, 0), ("2", 40, 4)]
        assert (
            versions[1]["error_types"] == {"ValueError": 4}
            and "bad amount" in versions[1]["error_messages"]["ValueError"]
            and versions[1]["throughput_per_min"] > 0
        )
        replicas = api.get("/serving/fraud-api/replicas").json()["replicas"]
        assert len(replicas) == 3 and {r["state"] for r in replicas} == {"gone"}
        assert api.get("/serving/fraud-api/replicas", params={"env": "staging"}).status_code == 404


def test_unknown_endpoints_and_bad_input_are_4xx_with_the_json_error(served: Served) -> None:
    with _api(served) as api:
        assert "fraud-api (prod)" in _error(api.get("/deployments/nope/timeline"), 404)["message"]
        _error(api.get("/deployments/fraud-api/timeline", params={"env": "staging"}), 404)
        for route in ("aggregates", "predictions", "replicas", "versions"):
            assert "serving.attach" in _error(api.get(f"/serving/nope/{route}"), 404)["message"]
        assert "since" in _error(api.get("/serving/fraud-api/aggregates", params={"since": "soonish"}), 400)["message"]
        _error(api.get("/serving/fraud-api/predictions", params={"limit": "-1"}), 400)


def test_a_token_of_another_project_sees_no_endpoint(served: Served) -> None:
    with _api(served, project="other-team") as api:
        _error(api.get("/deployments/fraud-api/timeline"), 404)
        for route in ("aggregates", "predictions", "replicas"):
            _error(api.get(f"/serving/fraud-api/{route}"), 404)
        _error(api.get("/serving/fraud-api/aggregates", params={"project": "fraud-team"}), 403)
    with _api(served, project="fraud-team") as api:
        assert api.get("/deployments/fraud-api/timeline").status_code == 200


def test_the_routes_are_in_the_openapi_document(served: Served) -> None:
    doc = httpx.get(served.server.url + "/api/v1/openapi.json", timeout=30).json()
    for path in (
        "/api/v1/serving/{endpoint}/aggregates",
        "/api/v1/serving/{endpoint}/predictions",
        "/api/v1/serving/{endpoint}/replicas",
        "/api/v1/serving/{endpoint}/versions",
        "/api/v1/deployments/{endpoint}/timeline",
    ):
        assert "get" in doc["paths"][path], path
    timeline = doc["paths"]["/api/v1/deployments/{endpoint}/timeline"]["get"]
    schema = timeline["responses"]["200"]["content"]["application/json"]["schema"]
    assert {"desired", "replicas", "minutes", "rollouts", "alerts"} <= set(schema["required"])


def test_the_timeline_is_plain_python_over_a_client(served: Served) -> None:
    with Client(served.deployed.home) as client:
        doc = timeline(client, Registry(client), "fraud-api", "prod")
    assert [r["to_version"] for r in doc["rollouts"]] == [2] and len(doc["replicas"]) == 3


_TRAINING_CATEGORIES = {"slow_completion", "slow_startup", "data_loader_bottleneck", "loss_plateau", "nan_loss"}


def test_replicas_are_serving_runs_out_of_the_runs_table_and_diagnosed_as_serving(served: Served) -> None:
    home = served.deployed.home
    with _api(served) as api:
        every = api.get("/runs", params={"project": "fraud-team", "limit": 100}).json()["runs"]
        training = api.get("/runs", params={"project": "fraud-team", "kind": "training"}).json()["runs"]
        serving = api.get("/runs", params={"project": "fraud-team", "kind": "serving"}).json()["runs"]
        assert len(every) == 5 and {r["kind"] for r in every} == {"training", "serving"}
        assert sorted(r["name"] for r in training) == ["train fraud v1", "train fraud v2"]
        assert len(serving) == 3 and all(r["name"] == "serve fraud-api@prod" for r in serving)
        _error(api.get("/runs", params={"kind": "batch"}), 400)
    listed = cli_json(home, "runs", "ls")
    assert sorted(r["name"] for r in listed) == ["train fraud v1", "train fraud v2"], "replicas left out"
    assert len(cli_json(home, "runs", "ls", "--kind", "serving")) == 3
    assert len(cli_json(home, "runs", "ls", "--kind", "all")) == 5
    replica = next(r for r in serving if r["tags"]["serving.version"] == "2")
    report = cli_json(home, "diagnose", replica["id"])
    assert report["baseline"] is None, "a replica has no training run as its baseline"
    assert not {f["category"] for f in report["findings"]} & _TRAINING_CATEGORIES
    section = report["serving"]
    assert (section["endpoint"], section["env"], section["version"]) == ("fraud-api", "prod", "2")
    (own,) = section["traffic"]
    assert own["requests"] == 40 and own["error_rate"] == 0.1 and own["error_types"] == {"ValueError": 4}
    assert section["commands"]["deployment"] == "flightlog deployments show fraud-api --env prod"
    assert "fraud v2 rolled out at" in section["diagnosis"]["headline"]
    human = cli(home, "diagnose", replica["id"]).stdout
    assert "serving replica" in human and "flightlog diagnose --deployment fraud-api --env prod" in human
    assert "training step" not in human
    with _api(served) as api:  # the server's diagnosis route: the same report, through its store reader
        over_http = api.get(f"/runs/{replica['id']}/diagnosis").json()
    assert over_http["serving"]["traffic"] == section["traffic"] and over_http["baseline"] is None
    show = cli(home, "runs", "show", replica["id"]).stdout
    assert "serving replica" in show and "flightlog deployments show fraud-api --env prod" in show


def test_the_views_tell_one_story(served: Served) -> None:
    """`deployments show` and `serving replicas` count the same replicas the same way; the CLI's
    rollout time is the timeline's; `--limit 0` means all, as in the API."""
    home = served.deployed.home
    shown = cli_json(home, "deployments", "show", "fraud-api", "--env", "prod")["replicas"]
    listed = cli_json(home, "serving", "replicas", "fraud-api", "--env", "prod")
    assert sorted((r["run_id"], r["state"]) for r in shown) == sorted((r["run_id"], r["state"]) for r in listed)
    assert len(shown) == 3
    human = cli(home, "deployments", "show", "fraud-api", "--env", "prod").stdout
    assert "0 serving, 3 gone" in human
    assert len(cli_json(home, "serving", "predictions", "fraud-api", "--limit", "0")) == 120
    assert len(cli_json(home, "serving", "predictions", "fraud-api", "--limit", "7")) == 7
    report = cli_json(home, "diagnose", "--deployment", "fraud-api")
    rollout = next(c for c in report["changes"] if c["kind"] == "rollout" and c["evidence"]["to_version"] == "2")
    with _api(served) as api:
        (marker,) = api.get("/deployments/fraud-api/timeline").json()["rollouts"]
    assert marker["time"] == rollout["time"] and marker["deployed_at"] == rollout["evidence"]["desired_at"]
