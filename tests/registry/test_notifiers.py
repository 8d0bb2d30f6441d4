"""Registry events through the alert notifiers (FLIGHTLOG_REGISTRY_NOTIFY): a signed webhook
reached once by two delivering processes, a command run once with the event on stdin, Slack
posted to a real receiver, a server delivering what a CLI wrote, and bad files refused."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flightlog.client import Client
from flightlog.errors import InvalidInput
from flightlog.registry import Registry
from flightlog.registry.events import EventPump, parse_destinations
from flightlog.server.testing import serve_in_thread
from tests.helpers import wait_for
from tests.registry.conftest import Receiver, logged_run

SECRET = "hook-secret-for-tests"
_DELIVER = "from flightlog.client import Client; from flightlog.registry import Registry; Registry(Client()).deliver()"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _notify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "registry-events.yaml"
    path.write_text(text)
    monkeypatch.setenv("FLIGHTLOG_REGISTRY_NOTIFY", str(path))
    return path


def _registered(tmp_path: Path, client: Client) -> Any:
    """fraud v1 @production and v2: the events wait (nothing configured yet)."""
    reg = Registry(client)
    reg.register(logged_run(tmp_path, {"model/w.npz": b"one"}), "model/w.npz", "fraud", alias="production")
    reg.register(logged_run(tmp_path, {"model/w.npz": b"two"}), "model/w.npz", "fraud")
    return reg


def test_two_processes_deliver_an_alias_move_to_a_signed_webhook_once(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    reg = _registered(tmp_path, client)
    reg.set_alias("fraud", "production", 2)  # four events wait: no destination is configured yet
    _notify(
        tmp_path,
        monkeypatch,
        f"notifiers:\n  - kind: webhook\n    name: ci\n    url: {receiver.url}\n"
        "    secret: ${HOOK_SECRET}\n    events: [alias_moved, alias_set]\n",
    )
    receiver.delay = 0.4  # each send is slow, so both processes are delivering at the same time
    env = {**os.environ, "HOOK_SECRET": SECRET}
    procs = [subprocess.Popen([sys.executable, "-c", _DELIVER], env=env) for _ in range(2)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]

    bodies = []
    for request in receiver.wait_for(2):
        headers = {k.lower(): v for k, v in request["headers"].items()}
        stamp = headers["x-flightlog-timestamp"]
        mac = hmac.new(SECRET.encode(), stamp.encode() + b"." + request["body"], hashlib.sha256).hexdigest()
        assert hmac.compare_digest(headers["x-flightlog-signature"], "sha256=" + mac)
        bodies.append(json.loads(request["body"]))
    assert sorted(b["kind"] for b in bodies) == ["alias_moved", "alias_set"]  # version_created: not taken
    moved = next(b for b in bodies if b["kind"] == "alias_moved")
    assert moved["summary"] == f"fraud@production moved v1 → v2 by {moved['actor']}"
    assert reg.deliver() == 0 and len(receiver.received) == 2  # every event is delivered, once
    assert reg.store.events(undelivered=True) == []


def test_a_command_runs_once_per_event_with_the_event_on_stdin(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "events.jsonl"
    script = (
        "import json, os, sys; e = json.load(sys.stdin); "
        f"open({str(out)!r}, 'a').write(json.dumps([os.environ['FLIGHTLOG_EVENT_SUMMARY'], e]) + '\\n')"
    )
    _notify(
        tmp_path,
        monkeypatch,
        "notifiers:\n  - kind: command\n    command: " + json.dumps([sys.executable, "-c", script]) + "\n",
    )
    reg = _registered(tmp_path, client)
    reg.set_alias("fraud", "production", 2)
    assert reg.deliver() == 0  # each change delivered its own events already
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [e["kind"] for _, e in lines] == ["version_created", "alias_set", "version_created", "alias_moved"]
    summary, event = lines[-1]
    assert summary == event["summary"] == f"fraud@production moved v1 → v2 by {event['actor']}"
    assert event["key"].startswith("alias:fraud-team/fraud@production:")


def test_slack_gets_the_readable_line(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    monkeypatch.setenv("SLACK_URL", receiver.url)
    _notify(tmp_path, monkeypatch, "notifiers:\n  - kind: slack\n    url: ${SLACK_URL}\n    models: [fraud]\n")
    reg = _registered(tmp_path, client)
    reg.deploy("fraud@production", "fraud-api", "prod")
    texts = [json.loads(r["body"])["text"] for r in receiver.wait_for(4)]
    assert texts[1].startswith("[fraud-team] fraud@production set to v1")
    assert texts[3].startswith("[fraud-team] fraud-api (prod) now serves fraud v1")
    assert len(texts) == 4


def test_a_failed_destination_is_retried_alone(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    down = Receiver()
    down.fail = True
    try:
        _notify(
            tmp_path,
            monkeypatch,
            f"notifiers:\n  - kind: webhook\n    url: {receiver.url}\n"
            f"  - kind: webhook\n    url: {down.url}\n    retries: 0\n",
        )
        Registry(client).register(logged_run(tmp_path, {"m.bin": b"m"}), "m.bin", "fraud")
        assert len(receiver.received) == 1
        down.fail = False
        assert Registry(client).deliver() == 1
        assert len(down.received) == 1 and len(receiver.received) == 1  # the first one is not sent again
    finally:
        down.close()


def test_a_server_delivers_what_a_cli_wrote_into_its_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    home = tmp_path / "home"
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_TOKEN", "FLIGHTLOG_STORE", "FLIGHTLOG_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FLIGHTLOG_HOME", str(home))
    monkeypatch.setenv("FLIGHTLOG_PROJECT", "fraud-team")
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "off")
    run = logged_run(tmp_path, {"m.bin": b"m"})
    cli_env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_REGISTRY")}
    monkeypatch.setenv("FLIGHTLOG_REGISTRY_WEBHOOK", receiver.url)  # the server's configuration only
    with serve_in_thread(home):
        cli = subprocess.run(
            [sys.executable, "-m", "flightlog", "models", "register", run, "m.bin", "fraud"],
            env=cli_env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert cli.returncode == 0, cli.stderr
        got = receiver.wait_for(1, timeout=15)
    assert [json.loads(r["body"])["kind"] for r in got] == ["version_created"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("notifiers:\n  - kind: email\n    host: x\n", "use one of webhook, slack, command"),
        ("notifiers:\n  - kind: webhook\n    url: http://h/x\n    secret: abc\n", "must not be written in clear"),
        ("notifiers:\n  - kind: slack\n    url: ${S}\n    secret: ${T}\n", "only a webhook is signed"),
        ("notifiers:\n  - kind: webhook\n    url: http://h/x\n    events: [alias_moves]\n", "not an event kind"),
        ("rules: []\n", "unknown field"),
    ],
)
def test_a_bad_file_is_refused_with_its_line(text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_destinations(text, "events.yaml")
    assert message in caught.value.message and "events.yaml:" in caught.value.message


def test_a_bad_file_leaves_events_waiting_and_the_change_made(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    _notify(tmp_path, monkeypatch, "notifiers:\n  - kind: pager\n")
    mv = Registry(client).register(logged_run(tmp_path, {"m.bin": b"m"}), "m.bin", "fraud")
    assert mv.version == 1
    err = capfd.readouterr().err
    assert "registry events not sent" in err and "registry-events.yaml:2" in err
    assert len(Registry(client).store.events(undelivered=True)) == 1
    assert Registry(client).deliver() == 0  # nothing tried: the file names no destination it can use
    assert "registry events not sent" in capfd.readouterr().err
    assert len(Registry(client).store.events(undelivered=True)) == 1


def test_the_background_pump_backs_off_from_a_failing_destination_and_a_change_wakes_it(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    reg = _registered(tmp_path, client)  # three events wait
    receiver.fail = True
    monkeypatch.setenv("FLIGHTLOG_REGISTRY_WEBHOOK", receiver.url)
    pump = EventPump(reg.store, interval=0.05).start()
    try:
        wait_for(lambda: pump.passes >= 4, "four delivery passes")
        assert receiver.attempts >= 3 * 4, receiver.attempts  # each pass tried the 3 events again
        # without the backoff every pass would come 0.05 s after the last: it waits twice as long each time
        assert pump.next_wait >= 0.05 * 2**4, pump.next_wait
        receiver.fail = False
        reg.set_alias("fraud", "production", 2)  # the change wakes the pump (the call does not deliver)
        assert [json.loads(r["body"])["kind"] for r in receiver.wait_for(4, timeout=5)][-1] == "alias_moved"
        assert len(receiver.received) == 4
    finally:
        pump.stop()
