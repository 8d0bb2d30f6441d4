"""A model reference never silently picks a project (issue 31, item 2): a writer limited to
``default`` who registered ``fraud@production`` there was served to every unscoped consumer —
the alias route, MLflow's alias and download routes, a CI token's deploy and
``registry.resolve`` (so ``serving.attach``) — because the registry preferred the server's own
default project. Now a reference several projects could mean is an error naming them, a token
resolves only in the projects it may read, and a deployment records the project it resolved
in. On a real server over SQLite and over PostgreSQL."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog.client import Client
from flightlog.config import Settings
from flightlog.registry import resolve
from flightlog.registry.refs import AmbiguousModel
from flightlog.server.testing import RunningServer
from tests.server.conftest import auth, error_of
from tests.server.journal import Writer


def _run_with_model(live: RunningServer, run_id: str, project: str, content: bytes) -> None:
    w = Writer(run_id)
    sha = hashlib.sha256(content).hexdigest()
    live.app.state.store.ingest(
        [
            w.run(project, status="succeeded"),
            w.record("artifact", role="output", kind="model", path="model.pkl", sha256=sha, size=len(content),
                     uri=f"cas:sha256/{sha}", attempt=1),
        ]
    )  # fmt: skip


@pytest.fixture
def planted(live: RunningServer) -> Iterator[dict[str, str]]:
    """``fraud@production`` registered in ``vision`` by its team, and planted in ``default`` by a
    writer limited to ``default``; tokens of the parties."""
    tokens = {
        "admin": live.token("admin"),
        "ci": live.token("writer"),  # a CI token of every project
        "vision": live.token("reader", "vision"),
        "attacker": live.token("writer", "default"),
    }
    _run_with_model(live, "a" * 32, "vision", b"the real model")
    _run_with_model(live, "b" * 32, "default", b"cos\nsystem\n(S'echo pwned'\ntR.")
    with httpx.Client(base_url=live.url + "/api/v1", timeout=30) as api:
        made = api.post(
            "/models/fraud/versions",
            json={"run": "a" * 32, "path": "model.pkl", "alias": "production"},
            headers=auth(tokens["admin"]),
        )
        assert made.status_code == 201, made.text
        planted = api.post(
            "/models/fraud/versions",
            json={"run": "b" * 32, "path": "model.pkl", "alias": "production"},
            headers=auth(tokens["attacker"]),
        )
        assert planted.status_code == 201 and planted.json()["project"] == "default", planted.text
    yield tokens


def _ambiguous(response: httpx.Response) -> None:
    assert response.status_code == 400, response.text
    err = error_of(response)
    assert err["code"] == "ambiguous_model" and err["details"]["projects"] == ["default", "vision"], err
    assert "default" in err["message"] and "vision" in err["message"]


def test_unscoped_consumers_get_an_error_naming_the_projects(live: RunningServer, planted: dict[str, str]) -> None:
    with httpx.Client(base_url=live.url, timeout=30) as http:
        for who in ("admin", "ci"):
            _ambiguous(http.get("/api/v1/models/fraud/aliases/production", headers=auth(planted[who])))
            _ambiguous(http.get("/api/v1/models/fraud", headers=auth(planted[who])))
        deploy = {"ref": "fraud@production", "endpoint": "fraud-api", "env": "prod"}
        _ambiguous(http.post("/api/v1/deployments", json=deploy, headers=auth(planted["ci"])))
        for path, params in (
            ("/registered-models/alias", {"name": "fraud", "alias": "production"}),
            ("/model-versions/get-download-uri", {"name": "fraud", "version": "1"}),
            ("/registered-models/get", {"name": "fraud"}),
        ):
            r = http.get("/api/2.0/mlflow" + path, params=params, headers=auth(planted["ci"]))
            assert r.status_code == 400, (path, r.text)
            assert r.json()["error_code"] == "INVALID_PARAMETER_VALUE" and "vision" in r.json()["message"]


def test_naming_the_project_resolves_and_the_deployment_records_it(
    live: RunningServer, planted: dict[str, str]
) -> None:
    with httpx.Client(base_url=live.url + "/api/v1", timeout=30, headers=auth(planted["ci"])) as api:
        got = api.get("/models/fraud/aliases/production", params={"project": "vision"}).json()
        assert got["project"] == "vision" and got["run_id"] == "a" * 32
        deploy = {"ref": "fraud@production", "endpoint": "fraud-api", "env": "prod", "project": "vision"}
        made = api.post("/deployments", json=deploy)
        assert made.status_code == 200 and made.json()["project"] == "vision", made.text
        listed = api.get("/deployments").json()["deployments"]
        assert [(d["project"], d["model"], d["version"]) for d in listed] == [("vision", "fraud", 1)]


def test_a_token_resolves_only_in_the_projects_it_may_read(live: RunningServer, planted: dict[str, str]) -> None:
    with httpx.Client(base_url=live.url + "/api/v1", timeout=30) as api:
        mine = api.get("/models/fraud/aliases/production", headers=auth(planted["vision"])).json()
        assert mine["project"] == "vision" and mine["run_id"] == "a" * 32
        theirs = api.get("/models/fraud/aliases/production", headers=auth(planted["attacker"])).json()
        assert theirs["project"] == "default"
        refused = api.get(
            "/models/fraud/aliases/production", params={"project": "default"}, headers=auth(planted["vision"])
        )
        assert refused.status_code == 403, refused.text


def test_registry_resolve_over_http_raises_the_ambiguity(
    live: RunningServer, planted: dict[str, str], clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``registry.resolve`` (what ``serving.attach("fraud@production")`` calls) through a server."""
    monkeypatch.setenv("FLIGHTLOG_URL", live.url)
    monkeypatch.setenv("FLIGHTLOG_TOKEN", planted["ci"])
    client = Client.for_lookups(Settings.from_env())
    try:
        with pytest.raises(AmbiguousModel) as refused:
            resolve("models:/fraud@production", client)
        assert refused.value.details["projects"] == ["default", "vision"]
        found: Any = resolve("models:/fraud@production", client, project="vision")
        assert found.run_id == "a" * 32
    finally:
        client.close()
