"""Each record is redacted once, where it is formed, and reaches the store redacted (issue 19,
item 4). The passes are counted by ``flightlog.redaction.stats()``, the package's own
diagnostic counter, in the process that makes them: the SDK and an in-thread server here, a
real ``flightlog run`` in a child process that prints its counts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import flightlog
from flightlog import redaction
from flightlog.server.testing import RunningServer, serve_in_thread
from tests.helpers import cli, cli_json, run_script
from tests.server.conftest import auth
from tests.server.journal import Writer

GHP = "ghp_" + "Q" * 36
PASSWORD = "hunter2pass"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local SQLite home of our own, no server, and a fresh pass count."""
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_TOKEN", "FLIGHTLOG_STORE", "FLIGHTLOG_RUN_ID", "FLIGHTLOG_MODE"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"
    monkeypatch.setenv("FLIGHTLOG_HOME", str(home))
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "off")
    monkeypatch.chdir(tmp_path)
    redaction.reset_stats()
    return home


@pytest.fixture
def server(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningServer]:
    """A real server (auth on) in a thread of this process; the SDK writes to it."""
    with serve_in_thread(tmp_path / "srv", auth=True) as running:
        monkeypatch.setenv("FLIGHTLOG_URL", running.url)
        monkeypatch.setenv("FLIGHTLOG_TOKEN", running.token("admin"))
        yield running


def _sdk_run() -> str:
    run = flightlog.init(project="p", params={"api_key": PASSWORD, "lr": 0.1})
    run.note(f"cloned with {GHP}")
    run.log_event(f"login password={PASSWORD}", fields={"token": PASSWORD})
    run.finish()
    return run.id


def test_sdk_records_are_redacted_once_on_the_way_to_a_local_store(home: Path) -> None:
    run_id = _sdk_run()
    passes = redaction.stats()
    assert passes["params"] == 1 and passes["note"] == 1 and passes["logs"] == 1, passes
    client = flightlog.Client()
    stored = json.dumps(
        [
            client.run(run_id).params,
            [n.text for n in client.notes(run_id)],
            [e.message for e in client.logs(run_id)],
            [e.fields for e in client.logs(run_id)],
        ],
        default=str,
    )
    assert PASSWORD not in stored and GHP not in stored
    assert "[REDACTED:secret]" in stored and "[REDACTED:github_token]" in stored


def test_through_a_server_log_events_are_not_redacted_again_and_user_strings_once_more(server: RunningServer) -> None:
    """The SDK declares that it redacts: the server trusts that for the bulk (log chunks) and
    gives user strings its one idempotent second pass (the package docstring says why)."""
    run_id = _sdk_run()
    passes = redaction.stats()  # the SDK's passes and the server's, one process
    assert passes["logs"] == 1, passes
    assert passes["params"] == 2 and passes["note"] == 2, passes
    with httpx.Client(base_url=server.url + "/api/v1", headers=auth(server.token("admin"))) as api:
        stored = json.dumps(
            [
                api.get(f"/runs/{run_id}").json(),
                api.get(f"/runs/{run_id}/notes").json(),
                api.get(f"/runs/{run_id}/logs").json(),
            ]
        )
    assert PASSWORD not in stored and GHP not in stored


def test_a_writer_that_does_not_redact_has_its_log_events_redacted_at_ingest(server: RunningServer) -> None:
    w = Writer("plainwriter")
    records = [
        w.run("p"),
        w.logs(
            [
                (1_700_000_000.0, "stdout", "info", f"export GITHUB_TOKEN={GHP} password={PASSWORD}"),
                (1_700_000_001.0, "stdout", "info", "epoch 1 loss=0.5"),
            ]
        ),
    ]
    from flightlog.transport.wire import encode_batches

    ((_, body),) = encode_batches(records)
    with httpx.Client(base_url=server.url + "/api/v1", headers=auth(server.token("writer"))) as writer:
        response = writer.post(
            "/ingest", content=body, headers={"Content-Type": "application/msgpack", "Content-Encoding": "gzip"}
        )
        assert response.status_code == 200 and not response.json()["skipped"], response.text
        logs = writer.get("/runs/plainwriter/logs").json()
    text = json.dumps(logs)
    assert GHP not in text and PASSWORD not in text, text
    assert "password=[REDACTED:secret]" in text and "epoch 1 loss=0.5" in text
    assert redaction.stats()["logs"] == 2


def test_a_secret_typed_at_the_cli_is_redacted_once(home: Path) -> None:
    run_id = _sdk_run()
    redaction.reset_stats()
    client = flightlog.Client()
    client.add_note(run_id, f"the token was {GHP}")
    client.edit_run(run_id, tags={"deploy_token": PASSWORD, "team": "vision"}, name=f"retry {GHP}")
    passes = redaction.stats()
    assert passes == {"note": 1, "tags": 1, "run": 1}, passes
    cli(home, "runs", "note", run_id, f"and password={PASSWORD} too")
    stored = json.dumps([cli_json(home, "runs", "show", run_id), [n.text for n in client.notes(run_id)]])
    assert GHP not in stored and PASSWORD not in stored
    assert "vision" in stored


def test_flightlog_run_redacts_each_captured_line_once(home: Path) -> None:
    workload = f"print('login password={PASSWORD}'); print('token {GHP}'); print('done')"
    proc = run_script(
        home,
        f"""
        import json, sys
        from flightlog import redaction
        from flightlog.cli.main import main
        try:
            main(["run", "--project", "p", "--", sys.executable, "-c", {workload!r}])
        except SystemExit:
            pass
        sys.stderr.write("PASSES " + json.dumps(redaction.stats()) + "\\n")
    """,
    )
    line = next(x for x in proc.stderr.splitlines() if x.startswith("PASSES "))
    passes = json.loads(line[len("PASSES ") :])
    assert passes["logs"] == 3, passes  # three lines, one pass each
    assert passes["context"] == 1, passes
    runs = cli_json(home, "runs", "ls")
    logs = cli(home, "logs", runs[0]["id"]).stdout
    assert PASSWORD not in logs and GHP not in logs and "done" in logs


def test_the_package_is_below_everything_and_says_what_it_promises() -> None:
    doc = redaction.__doc__ or ""
    for promise in ("[REDACTED:", "once per record", "Server ingest", "idempotent"):
        assert promise in doc
