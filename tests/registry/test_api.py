"""The registry through a real server on 127.0.0.1: the API's routes, roles and errors, and the
SDK and CLI in remote mode (FLIGHTLOG_URL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import flightlog
from flightlog.server.testing import RunningServer, serve_in_thread
from tests.helpers import child_env, cli, cli_json


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningServer]:
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_TOKEN", "FLIGHTLOG_STORE", "FLIGHTLOG_RUN_ID", "FLIGHTLOG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "off")
    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "client"))
    with serve_in_thread(tmp_path / "srv", auth=True) as running:
        monkeypatch.setenv("FLIGHTLOG_URL", running.url)
        monkeypatch.setenv("FLIGHTLOG_TOKEN", running.token("admin", name="ci-admin"))
        yield running


def _api(server: RunningServer, role: str, name: str | None = None) -> httpx.Client:
    return httpx.Client(
        base_url=server.url + "/api/v1",
        timeout=30,
        headers={"Authorization": f"Bearer {server.token(role, name=name)}"},
    )


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()["error"]
    assert body["code"] and body["message"]
    return body


def test_remote_sdk_api_and_cli_share_one_registry(server: RunningServer, tmp_path: Path) -> None:
    weights = tmp_path / "weights.npz"
    weights.write_bytes(b"remote weights")
    run = flightlog.init(project="fraud-team")
    run.log_artifact(weights, name="model/weights.npz")
    mv = run.register_model("model/weights.npz", "fraud", alias="staging")  # through the server's API
    run.finish()
    assert (mv.version, mv.run_id, mv.created_by) == (1, run.id, "ci-admin")

    with (
        _api(server, "writer", "ci-writer") as writer,
        _api(server, "reader") as reader,
        _api(server, "admin", "release-admin") as admin,
    ):
        assert [m["name"] for m in reader.get("/models").json()["models"]] == ["fraud"]
        assert reader.get("/models/fraud/aliases/staging").json()["version"] == 1
        assert (
            "writer"
            in _error(reader.post("/models/fraud/versions", json={"run": run.id, "path": "model/weights.npz"}), 403)[
                "message"
            ]
        )
        second = writer.post("/models/fraud/versions", json={"run": run.id, "path": "model/weights.npz"})
        assert second.status_code == 201 and second.json()["version"] == 2
        assert (
            "never logged"
            in _error(writer.post("/models/fraud/versions", json={"run": run.id, "path": "x.bin"}), 404)["message"]
        )
        _error(writer.put("/models/fraud/aliases/staging", json={"version": 9}), 404)
        _error(writer.put("/models/fraud/aliases/staging", json={}), 400)
        _error(reader.get("/models/nope"), 404)

        assert admin.patch("/models/fraud", json={"protected_aliases": ["production"]}).status_code == 200
        assert writer.put("/models/fraud/aliases/staging", json={"version": 2}).json()["changed"] is True
        assert "admin" in _error(writer.put("/models/fraud/aliases/production", json={"version": 2}), 403)["message"]
        moved = admin.put("/models/fraud/aliases/production", json={"version": 2}).json()
        assert moved["change"]["actor"] == "release-admin"

        deployed = writer.post("/deployments", json={"ref": "fraud@production", "endpoint": "fraud-api", "env": "prod"})
        assert deployed.json()["version"] == 2
        _error(writer.post("/deployments", json={"ref": "fraud/7", "endpoint": "fraud-api", "env": "prod"}), 404)
        assert reader.get("/deployments/fraud-api/prod").json()["desired"]["version"] == 2
        history = reader.get("/models/fraud/alias-history", params={"alias": "production"}).json()["history"]
        assert [(h["from_version"], h["to_version"]) for h in history] == [(None, 2)]
        spec = reader.get("/openapi.json").json()
        assert "/api/v1/models/{name}/aliases/{alias}" in spec["paths"]

    home = tmp_path / "client"
    env = child_env(home, FLIGHTLOG_URL=server.url, FLIGHTLOG_TOKEN=server.token("writer"))
    assert cli_json(home, "models", "show", "fraud@production", env=env)["version"]["version"] == 2
    assert [d["endpoint"] for d in cli_json(home, "deployments", "ls", env=env)] == ["fraud-api"]
    refused = cli(home, "models", "alias", "fraud@production", "1", env=env, check=False)
    assert refused.returncode == 1 and "protected" in refused.stderr
