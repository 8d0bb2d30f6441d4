"""Registry events reach a real HTTP receiver on 127.0.0.1, signed, exactly once."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flightlog.client import Client
from flightlog.registry import Registry
from tests.registry.conftest import Receiver, logged_run

SECRET = "s3cret-for-tests"


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    r = Receiver()
    monkeypatch.setenv("FLIGHTLOG_REGISTRY_WEBHOOK", r.url)
    monkeypatch.setenv("FLIGHTLOG_REGISTRY_WEBHOOK_SECRET", SECRET)
    yield r
    r.server.shutdown()
    r.server.server_close()


def _verified(request: dict[str, Any]) -> dict[str, Any]:
    headers = {k.lower(): v for k, v in request["headers"].items()}
    stamp = headers["x-flightlog-timestamp"]
    expected = (
        "sha256=" + hmac.new(SECRET.encode(), stamp.encode() + b"." + request["body"], hashlib.sha256).hexdigest()
    )
    assert hmac.compare_digest(headers["x-flightlog-signature"], expected)
    assert abs(time.time() - int(stamp)) < 60
    body: dict[str, Any] = json.loads(request["body"])
    assert headers["x-flightlog-event-key"] == body["key"]
    return body


def test_an_alias_move_reaches_the_webhook_signed_exactly_once(
    client: Client, tmp_path: Path, receiver: Receiver
) -> None:
    first = logged_run(tmp_path, {"model/weights.npz": b"one"})
    second = logged_run(tmp_path, {"model/weights.npz": b"two"})
    reg = Registry(client)
    reg.register(first, "model/weights.npz", "fraud", alias="production")
    reg.register(second, "model/weights.npz", "fraud")
    created = [_verified(r) for r in receiver.wait_for(3)]
    assert [e["kind"] for e in created] == ["version_created", "alias_set", "version_created"]

    reg.set_alias("fraud", "production", 2)
    other = Registry(Client())  # a second process over the same store delivers nothing twice
    assert other.deliver() == 0
    events = [_verified(r) for r in receiver.wait_for(4)]
    moved = [e for e in events if e["kind"] == "alias_moved"]
    assert len(moved) == 1 and len(events) == 4
    assert (moved[0]["ref"], moved[0]["from_version"], moved[0]["to_version"]) == ("models:/fraud@production", 1, 2)
    assert moved[0]["actor"]  # who moved it
    assert reg.set_alias("fraud", "production", 2) is None  # not a move: no event
    assert reg.deliver() == 0 and len(receiver.received) == 4


def test_an_event_the_receiver_refused_is_sent_on_the_next_pass_once(
    client: Client, tmp_path: Path, receiver: Receiver, capfd: pytest.CaptureFixture[str]
) -> None:
    run = logged_run(tmp_path, {"m.bin": b"m"})
    receiver.fail = True
    Registry(client).register(run, "m.bin", "fraud")  # recorded even though the webhook is down
    assert "not delivered to a webhook of FLIGHTLOG_REGISTRY_WEBHOOK" in capfd.readouterr().err
    receiver.fail = False
    assert Registry(client).deliver() == 1
    assert [_verified(r)["kind"] for r in receiver.received] == ["version_created"]
    assert Registry(client).deliver() == 0
