"""One name rule for every named thing (issue 31, item 9): model names, aliases, endpoints,
environments, MLflow tag and param keys and experiment names refuse control characters (a final
newline among them), DEL and bidirectional-text overrides with a 400 that names the rule, on a
real server over SQLite and over PostgreSQL; ``fraud`` and ``fraud\\n`` never stand side by side."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
import pytest

from flightlog.errors import InvalidInput
from flightlog.names import NAME_RULE, check_name_text, name_problem
from flightlog.registry.refs import check_alias, check_name, parse_ref
from flightlog.registry.service import check_place
from flightlog.server.testing import RunningServer
from tests.server.conftest import error_of

BAD = ["fraud\n", "fraud\r", "fraud\t", "fr\x1baud", "fraud\x7f", "fraud\x85", "fr\u202eaud", "fr\u2066aud"]


def _names_the_rule(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    err = error_of(response)
    assert err["code"] == "invalid_name", err
    assert NAME_RULE in err["message"] and err["details"]["rule"] == NAME_RULE
    return err


@pytest.mark.parametrize("bad", BAD)
def test_the_registry_refuses_every_bad_name(api: httpx.Client, bad: str) -> None:
    q = quote(bad, safe="")
    _names_the_rule(api.post(f"/models/{q}/versions", json={"run": "r", "path": "model.pkl"}))
    _names_the_rule(api.put(f"/models/fraud/aliases/{q}", json={"version": 1}))
    _names_the_rule(api.post("/deployments", json={"ref": "fraud@production", "endpoint": bad, "env": "prod"}))
    _names_the_rule(api.post("/deployments", json={"ref": "fraud@production", "endpoint": "fraud-api", "env": bad}))
    _names_the_rule(api.post("/deployments", json={"ref": f"{bad}@production", "endpoint": "api", "env": "prod"}))
    _names_the_rule(api.get(f"/deployments/fraud-api/{q}"))


def test_a_final_newline_is_refused_with_its_position(api: httpx.Client) -> None:
    err = _names_the_rule(api.post("/deployments", json={"ref": "fraud/1", "endpoint": "fraud-api\n", "env": "prod"}))
    assert err["details"]["position"] == len("fraud-api") and "U+000A" in err["message"]


def _mlflow(live: RunningServer) -> httpx.Client:
    return httpx.Client(
        base_url=live.url + "/api/2.0/mlflow", headers={"Authorization": f"Bearer {live.token('admin')}"}, timeout=30
    )


@pytest.mark.parametrize("bad", ["team\n", "team\x7f", "te\u202eam", "te\x1b[31mam"])
def test_mlflow_tag_keys_and_names_keep_the_rule(live: RunningServer, bad: str) -> None:
    with _mlflow(live) as http:
        exp = http.post("/experiments/create", json={"name": "names"}).json()["experiment_id"]
        run = http.post("/runs/create", json={"experiment_id": exp}).json()["run"]["info"]["run_id"]
        refused = [
            http.post("/runs/set-tag", json={"run_id": run, "key": bad, "value": "x"}),
            http.post("/runs/log-parameter", json={"run_id": run, "key": bad, "value": "x"}),
            http.post("/experiments/set-experiment-tag", json={"experiment_id": exp, "key": bad, "value": "x"}),
            http.post("/experiments/create", json={"name": bad}),
            http.post("/registered-models/create", json={"name": bad}),
            http.post("/registered-models/create", json={"name": "ok-model", "tags": [{"key": bad, "value": "v"}]}),
        ]
        for response in refused:
            assert response.status_code == 400, response.text
            body = response.json()
            assert body["error_code"] == "INVALID_PARAMETER_VALUE" and "control" in body["message"], body
        names = [e["name"] for e in http.post("/experiments/search", json={"view_type": "ALL"}).json()["experiments"]]
        assert bad not in names
        models = http.get("/registered-models/search").json().get("registered_models", [])
        assert [m["name"] for m in models] == []  # "ok-model" with a bad tag key was not made either


def test_fraud_and_fraud_newline_never_stand_side_by_side(live: RunningServer) -> None:
    with _mlflow(live) as http:
        assert http.post("/registered-models/create", json={"name": "fraud"}).status_code == 200
        assert http.post("/registered-models/create", json={"name": "fraud\n"}).status_code == 400
        models = http.get("/registered-models/search").json()["registered_models"]
        assert [m["name"] for m in models] == ["fraud"]


@pytest.mark.parametrize("bad", BAD)
def test_the_rule_in_process(bad: str) -> None:
    assert name_problem(bad) is not None
    for check in (
        lambda: check_name(bad),
        lambda: check_alias(bad),
        lambda: check_place(bad, "endpoint"),
        lambda: parse_ref(f"{bad}@production"),
        lambda: parse_ref(f"fraud@{bad}"),
        lambda: check_name_text(bad, "experiment name"),
    ):
        with pytest.raises(InvalidInput) as refused:
            check()
        assert refused.value.code == "invalid_name" and NAME_RULE in refused.value.message


def test_white_space_at_either_end_is_refused() -> None:
    for bad in (" fraud", "fraud ", "fraud\u00a0"):
        with pytest.raises(InvalidInput) as refused:
            check_name_text(bad, "experiment name")
        assert refused.value.code == "invalid_name" and "white space" in refused.value.message


def test_good_names_pass() -> None:
    for good in ("fraud", "fraud-v2.1", "Vision Team", "caf\u00e9", "\u05e9\u05dc\u05d5\u05dd"):
        assert check_name_text(good, "name") == good
    assert parse_ref("models:/fraud@production").alias == "production"


def test_serving_attach_refuses_a_bad_endpoint_before_recording(tmp_path: Any, monkeypatch: Any) -> None:
    from flightlog import serving

    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "home"))
    for endpoint, env in (("fraud-api\n", "prod"), ("fraud-api", "prod\u202e")):
        with pytest.raises(InvalidInput) as refused:
            serving.attach(endpoint=endpoint, env=env, version="1")
        assert refused.value.code == "invalid_name"
    assert not (tmp_path / "home").exists()  # refused before anything was recorded
