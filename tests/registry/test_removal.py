"""Deleting and renaming models and versions: through the registry's rules (deployments,
protected aliases), as events, with histories kept and version numbers never given twice."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from flightlog.client import Client
from flightlog.errors import Conflict, Forbidden, NotFound
from flightlog.registry import Registry
from flightlog.registry.events import summary
from flightlog.registry.service import LocalRegistry
from flightlog.registry.stores import sql_store_of
from flightlog.server.testing import serve_in_thread
from tests.helpers import cli, cli_json, run_script
from tests.registry.conftest import logged_run


def _three_versions(client: Client, tmp_path: Path) -> LocalRegistry:
    reg: LocalRegistry = Registry(client)
    for i in (1, 2, 3):
        run = logged_run(tmp_path, {"model.bin": f"weights {i}".encode()})
        reg.register(run, "model.bin", "fraud", alias="production" if i == 3 else None)
    reg.set_alias("fraud", "champion", 3)
    return reg


def test_a_deleted_version_takes_its_aliases_and_its_number_with_it(client: Client, tmp_path: Path) -> None:
    reg = _three_versions(client, tmp_path)
    reg.deploy("fraud@production", "fraud-api", "prod")
    with pytest.raises(
        Conflict, match=r"fraud-api \(prod\) v3 should serve.*deploy fraud@ALIAS --endpoint fraud-api --env prod"
    ):
        reg.delete_version("fraud", 3)
    reg.deploy("fraud/2", "fraud-api", "prod")

    removed = reg.delete_version("fraud", 3)
    assert sorted((c.alias, c.from_version, c.to_version) for c in removed) == [
        ("champion", 3, None),
        ("production", 3, None),
    ]
    assert [v.version for v in reg.versions("fraud")] == [1, 2]
    assert [(c.from_version, c.to_version) for c in reg.alias_history("fraud", "production")] == [(None, 3), (3, None)]
    with pytest.raises(NotFound):
        reg.resolve("fraud@production")
    again = reg.register(logged_run(tmp_path, {"model.bin": b"weights 4"}), "model.bin", "fraud")
    assert again.version == 4  # 3 named another model in the deployment's history
    history = reg.deployment_report("fraud-api", "prod")["history"]
    assert [(h["from_version"], h["to_version"]) for h in history] == [(None, 3), (3, 2)], history

    events = {e.kind: e for e in reg.store.events()}
    assert summary(events["version_deleted"]).startswith("fraud v3 deleted by ")
    assert events["alias_removed"].payload["from_version"] == 3


def test_a_protected_alias_on_a_version_needs_an_admin_to_delete_it(client: Client, tmp_path: Path) -> None:
    reg = _three_versions(client, tmp_path)
    reg.update_model("fraud", protected=["production"])
    writer = LocalRegistry(client, reg.store, actor="ci", admin=False)
    with pytest.raises(Forbidden, match="protected"):
        writer.delete_version("fraud", 3)
    with pytest.raises(Forbidden, match="protected"):
        writer.delete_model("fraud")
    writer.delete_version("fraud", 1)  # no alias on it
    assert [v.version for v in reg.versions("fraud")] == [2, 3]


def test_a_renamed_model_keeps_its_versions_aliases_deployments_and_histories(client: Client, tmp_path: Path) -> None:
    reg = _three_versions(client, tmp_path)
    reg.deploy("fraud@production", "fraud-api", "prod")
    reg.register(logged_run(tmp_path, {"model.bin": b"other"}), "model.bin", "taken")
    with pytest.raises(Conflict, match="already has a registered model 'taken'"):
        reg.rename_model("fraud", "taken")

    model = reg.rename_model("fraud", "fraud-scorer")
    assert model.name == "fraud-scorer" and model.aliases == {"production": 3, "champion": 3}
    assert [v.version for v in reg.versions("fraud-scorer")] == [1, 2, 3]
    assert reg.resolve("fraud-scorer@production").version == 3
    deployed = reg.deployment("fraud-api", "prod")
    assert (deployed.name, deployed.ref) == ("fraud-scorer", "models:/fraud-scorer@production")
    assert len(reg.alias_history("fraud-scorer", "production")) == 1
    with pytest.raises(NotFound):
        reg.model("fraud")
    assert reg.register(logged_run(tmp_path, {"model.bin": b"w"}), "model.bin", "fraud-scorer").version == 4
    (renamed,) = [e for e in reg.store.events() if e.kind == "model_renamed"]
    assert summary(renamed).startswith("fraud renamed to fraud-scorer")

    with pytest.raises(Conflict, match="deploy another version there first"):
        reg.delete_model("fraud-scorer")
    reg.deploy("taken/1", "fraud-api", "prod")
    assert reg.delete_model("fraud-scorer") == [1, 2, 3, 4]
    assert [m.name for m in reg.models()] == ["taken"]
    deleted = [e for e in reg.store.events() if e.kind == "model_deleted"]
    assert summary(deleted[0]).startswith("fraud-scorer deleted with v1, v2, v3, v4")
    assert len(reg.deployment_report("fraud-api", "prod")["history"]) == 2  # what served stays on record


_TRAIN = """
import flightlog, pathlib
weights = pathlib.Path("w.bin"); weights.write_bytes(b"w")
run = flightlog.init(project="fraud-team", name="train")
run.log_artifact(weights, name="w.bin")
run.finish()
print(run.id)
"""


def test_removals_from_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    run = run_script(home, _TRAIN).stdout.strip().splitlines()[-1]
    for _ in range(2):
        cli_json(home, "models", "register", run, "w.bin", "fraud")
    cli(home, "models", "alias", "fraud@staging", "2")

    out = cli(home, "models", "rm", "fraud/2").stdout
    assert "deleted fraud version 2, @staging removed" in out, out
    refused = cli(home, "models", "rm", "fraud", check=False)
    assert refused.returncode != 0 and "pass --yes" in refused.stderr, refused.stderr
    renamed = cli_json(home, "models", "rename", "fraud", "scorer")
    assert renamed["name"] == "scorer"
    done = cli_json(home, "models", "rm", "scorer", "--yes")
    assert done == {"deleted": "scorer", "versions": [1]}
    assert cli_json(home, "models", "ls") == []
    gone = cli(home, "models", "rm", "scorer/1", check=False)
    assert gone.returncode != 0 and "no registered model 'scorer'" in gone.stderr, gone.stderr


def test_removals_through_the_server_obey_roles(tmp_path: Path) -> None:
    home = tmp_path / "client"
    home.mkdir()
    with serve_in_thread(tmp_path / "server", auth=True) as server:
        writer = {"Authorization": f"Bearer {server.token('writer', 'fraud-team')}"}
        reader = {"Authorization": f"Bearer {server.token('reader', 'fraud-team')}"}
        env = {"FLIGHTLOG_URL": server.url, "FLIGHTLOG_TOKEN": server.token("writer", "fraud-team")}
        run = run_script(home, _TRAIN, env=env).stdout.strip().splitlines()[-1]
        with httpx.Client(base_url=server.url + "/api/v1", timeout=10) as http:
            for _ in range(2):
                r = http.post("/models/fraud/versions", json={"run": run, "path": "w.bin"}, headers=writer)
                assert r.status_code == 201, r.text
            r = http.delete("/models/fraud/versions/1", headers=reader)
            assert r.status_code == 403 and "writer" in r.json()["error"]["message"], r.text
            r = http.delete("/models/fraud/versions/x", headers=writer)
            assert r.status_code == 400, r.text
            r = http.delete("/models/fraud/versions/1", headers=writer)
            assert r.status_code == 200 and r.json()["deleted"] == {"name": "fraud", "version": 1}, r.text
            r = http.post("/models/fraud/rename", json={}, headers=writer)
            assert r.status_code == 400 and "new_name" in r.text, r.text
            r = http.post("/models/fraud/rename", json={"new_name": "scorer"}, headers=writer)
            assert r.status_code == 200 and r.json()["name"] == "scorer", r.text
            r = http.delete("/models/scorer", headers=writer)
            assert r.status_code == 200 and r.json() == {"deleted": "scorer", "versions": [2]}, r.text
            r = http.delete("/models/scorer", headers=writer)
            assert r.status_code == 404, r.text
        store = sql_store_of(server.app.state.store)
        assert store is not None
        events = store.events()
    kinds = [e.kind for e in events]
    assert kinds.count("version_created") == 2 and kinds[-3:] == ["version_deleted", "model_renamed", "model_deleted"]
    assert all(e.payload["actor"] for e in events[-3:])  # the token's name
