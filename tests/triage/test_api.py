"""``GET /api/v1/triage`` on a real server on 127.0.0.1: the report, a project token's scope,
and the 4xx of bad input; the CLI's JSON and its errors from the real `flightlog` command."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import flightlog
from flightlog.server.testing import RunningServer, serve_in_thread
from tests.helpers import cli, cli_json

QUIET: dict[str, Any] = {"quiet": True, "resources": False, "console": False}


def missing_config(i: int) -> None:
    with open(f"/etc/no-such-dir/config-{i}.yaml"):
        pass


def _fail(project: str, i: int) -> str:
    run = flightlog.init(project=project, name="train", **QUIET)
    try:
        missing_config(i)
    except OSError as exc:
        run.fail(exc)
    return run.id


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


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()["error"]
    assert body["code"] and body["message"]
    return body


def test_the_api_groups_failures_and_keeps_a_project_token_in_its_project(server: RunningServer) -> None:
    ids = [_fail("vision", i) for i in range(3)]
    _fail("audio", 99)
    admin = {"Authorization": f"Bearer {server.token('reader', name='r')}"}
    with httpx.Client(base_url=server.url + "/api/v1", timeout=30, headers=admin) as api:
        doc = api.get("/triage", params={"project": "vision", "since": "1h"}).json()
        assert doc["project"] == "vision" and doc["failures"] == 3
        [group] = doc["groups"]
        assert group["category"] == "missing_file" and group["runs"] == ids[::-1]
        assert group["parts"]["frame"] == "test_api.py:missing_config"
        everything = api.get("/triage").json()
        assert everything["failures"] == 4 and len(everything["groups"]) == 1  # one cause in two projects
        assert everything["groups"][0]["projects"] == ["audio", "vision"]
        assert "since" in _error(api.get("/triage", params={"since": "last tuesday"}), 400)["message"]
        assert "no project 'nope'" in _error(api.get("/triage", params={"project": "nope"}), 404)["message"]
        missing = _error(api.get("/triage", params={"project": "vision", "pipeline": "nightly"}), 404)
        assert "no pipeline 'nightly'" in missing["message"]
    scoped = {"Authorization": f"Bearer {server.token('reader', name='a', project='audio')}"}
    with httpx.Client(base_url=server.url + "/api/v1", timeout=30, headers=scoped) as api:
        assert api.get("/triage").json()["failures"] == 1  # its own project only
        _error(api.get("/triage", params={"project": "vision"}), 403)


@pytest.mark.embedded_only("the command's output and exit codes; the server path is the test above")
def test_the_command_prints_json_and_refuses_bad_input_clearly(home: Path) -> None:
    ids = [_fail("vision", i) for i in range(2)]
    doc = cli_json(home, "triage", "--project", "vision")
    assert list(doc) == [
        "project", "pipeline", "since", "until", "failures", "days", "groups", "truncated", "unclassified"
    ]  # fmt: skip
    assert doc["groups"][0]["runs"] == ids[::-1] and len(doc["days"]) == 8
    text = cli(home, "triage", "--project", "vision").stdout
    assert "2 failures in vision" in text and "missing_file" in text
    bad = cli(home, "triage", "--since", "yesterday", check=False)
    assert bad.returncode == 1 and "duration ago (30m, 12h, 7d, 2w)" in bad.stderr
    unknown = cli(home, "triage", "--project", "nope", check=False)
    assert unknown.returncode == 1 and "the projects are: vision" in unknown.stderr
    flightlog.init(project="quiet", name="ok", **QUIET).finish()
    calm = cli(home, "triage", "--project", "quiet")
    assert calm.returncode == 0 and "no failures in quiet" in calm.stdout
