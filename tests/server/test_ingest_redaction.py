"""Records that reach the server with secrets in clear (an old client, a hand-made writer) are
stored redacted: params, tags, notes, names, command lines, failure summaries (issue 15)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from flightlog.server.testing import RunningServer
from flightlog.transport import HttpStore
from tests.server.conftest import auth
from tests.server.journal import Writer

GHP = "ghp_" + "Q" * 36
LEAKS = (GHP, "hunter2pass", "s3cr3tpw", "bobsecretuser", "rawtokenvalue9")


@pytest.fixture
def store(live: RunningServer, token: Callable[..., str], tmp_path: Path) -> HttpStore:
    return HttpStore(live.url, token=token("writer"), home=tmp_path / "client")


def test_user_strings_in_ingested_records_are_redacted(store: HttpStore, api: httpx.Client) -> None:
    w = Writer("leaky")
    command = ["python", "train.py", "--token", "rawtokenvalue9", f"--gh={GHP}", "db=postgresql://u:s3cr3tpw@h/x"]
    records = [
        w.run(
            "p",
            name=f"try {GHP}",
            failure={
                "message": "login failed for password=hunter2pass",
                "workload": {"command": command, "params": {"api_key": "hunter2pass"}},
            },
        ),
        w.record("params", data={"credentials.user": "bobsecretuser", "url": "https://u:s3cr3tpw@host/x", "lr": 0.1}),
        w.record("tags", data={"token": "rawtokenvalue9", "team": "vision"}),
        w.record("note", text=f"used {GHP} to clone", author="me"),
        w.record("context", data={"command": command, "packages": {"google-auth": "2.0"}}),
        w.record("evidence", kind="runner", name="config", data={"command": command}),
    ]
    result = store.ingest(records)
    assert result.applied == len(records) and not result.skipped
    stored = json.dumps(
        [
            api.get("/runs/leaky").json(),
            api.get("/runs/leaky/notes").json(),
            api.get("/runs/leaky/context").json(),
            api.get("/runs/leaky/evidence").json(),
        ]
    )
    for leak in LEAKS:
        assert leak not in stored
    run = api.get("/runs/leaky").json()
    assert run["params"]["lr"] == 0.1 and run["tags"]["team"] == "vision"
    assert "google-auth" in stored and "2.0" in stored  # a package name is not a secret


def test_a_note_added_through_the_api_is_redacted(
    api: httpx.Client, store: HttpStore, live: RunningServer, token: Callable[..., str]
) -> None:
    store.ingest([Writer("noted").run("p")])
    with httpx.Client(base_url=live.url + "/api/v1", headers=auth(token("writer"))) as writer:
        assert writer.post("/runs/noted/notes", json={"text": f"token {GHP} works"}).status_code == 201
    assert GHP not in json.dumps(api.get("/runs/noted/notes").json())
