"""Serving records keep no secret and no personal datum (issue 31, item 6): a token (``ghp_…``)
and an e-mail in model outputs were stored raw (redaction checked values while the output
counts keep categories as keys), a national id nested under an allow-listed field was kept,
and hashes were plain sha256 (anyone could test a guess). Now keys are scrubbed like values,
allow-listed structures are looked into, and every hash is an HMAC under the project's serving
key, which the store gives to writers only. A real replica process, over the embedded store
and through a real server."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog import Client, serving
from flightlog.config import Settings
from flightlog.server.testing import RunningServer, serve_in_thread
from flightlog.serving.privacy import Scrubber, is_personal_name
from tests.helpers import child_env, run_script
from tests.server.conftest import auth

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
RAW = [TOKEN, "alice@example.com", "123-45-6789", "987-65-4321", "bob@example.org", "carol@example.net"]

REPLICA = f"""
from flightlog import serving
serving.attach(version="1", endpoint="fraud-api", project="fraud", inputs=["customer", "amount"], sample=1.0)

@serving.track
def predict(features):
    return {{"{TOKEN}": 0.9, "contact": "alice@example.com", "label": features["label"]}}

for i, label in enumerate(["alice@example.com", "{TOKEN}", "ok"]):
    customer = {{"segment": "retail", "national_id": "123-45-6789", "notes": "write to bob@example.org",
                 "profile": {{"ssn": "987-65-4321", "tier": 2}}}}
    predict({{"amount": 3, "customer": customer, "label": label, "email": "carol@example.net"}}, request_id=f"r{{i}}")
"""


def _hmac(key: bytes, value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def _check(client: Client, key: bytes) -> None:
    (run,) = client.runs(project="fraud")
    everything = json.dumps([e.fields for e in client.logs(run)] + [client.run(run.id).params], default=str)
    for raw in RAW:
        assert raw not in everything, raw
    rows = {r["request_id"]: r for r in serving.predictions(client, "fraud-api")}
    customer = rows["r0"]["inputs"]["customer"]
    assert customer["segment"] == "retail" and customer["profile"]["tier"] == 2  # the allow-listed shape stays
    assert customer["national_id"] == {"hmac": _hmac(key, "123-45-6789")}
    assert customer["profile"]["ssn"] == {"hmac": _hmac(key, "987-65-4321")}
    assert customer["notes"].startswith("write to [email:")
    # keyed hashes: not sha256 of the value (a reader cannot test guesses), the project key's HMAC
    email_hash = rows["r0"]["input_hashes"]["email"]
    assert email_hash != hashlib.sha256(json.dumps("carol@example.net").encode()).hexdigest()
    assert email_hash == _hmac(key, "carol@example.net")
    # output keys and categories: the counts never hold the raw values
    labels: dict[str, int] = {}
    for a in serving.aggregates(client, "fraud-api"):
        assert TOKEN not in json.dumps(a["outputs"])
        for k, v in a["outputs"]["fields"].get("label", {}).get("values", {}).items():
            labels[k] = labels.get(k, 0) + v
    assert labels["ok"] == 1 and len(labels) == 3, labels
    assert any(k.startswith("[github_token:x") for k in labels) and any(k.startswith("[email:") for k in labels)


def test_an_embedded_replica_keeps_no_secret_or_personal_datum(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_script(home, REPLICA)
    with Client(home) as client:
        key = client.store.shared_secret("serving:fraud")  # type: ignore[attr-defined]
        _check(client, key)


@pytest.fixture
def served(tmp_path: Path, server_store: str) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path / "srv", auth=True, store_uri=server_store) as running:
        yield running


def test_a_replica_through_a_server_keys_its_hashes_with_the_projects_key(
    tmp_path: Path, served: RunningServer
) -> None:
    home = tmp_path / "home"
    writer = served.token("writer", "fraud")
    run_script(home, REPLICA, env=child_env(home, FLIGHTLOG_URL=served.url, FLIGHTLOG_TOKEN=writer))
    key = served.app.state.store.shared_secret("serving:fraud")
    client = Client.for_lookups(Settings.from_env(home=tmp_path / "reader-home"), store=served.app.state.store)
    try:
        _check(client, key)
    finally:
        client.close()
    # the key goes to the project's writers only: never to a reader, never to another project
    with httpx.Client(base_url=served.url + "/api/v1", timeout=30) as api:
        got = api.get("/serving/key", params={"project": "fraud"}, headers=auth(writer))
        assert got.status_code == 200 and bytes.fromhex(got.json()["key"]) == key
        assert got.headers["cache-control"] == "no-store"
        reader = api.get("/serving/key", params={"project": "fraud"}, headers=auth(served.token("reader", "fraud")))
        assert reader.status_code == 403, reader.text
        other = api.get("/serving/key", params={"project": "fraud"}, headers=auth(served.token("writer", "vision")))
        assert other.status_code == 403, other.text


def test_the_rules_in_process() -> None:
    scrub = Scrubber(b"k" * 32)
    assert scrub.text("card 4111 1111 1111 1111 ok").startswith("card [card:")
    assert scrub.text("order 1234 5678 9012 3456") == "order 1234 5678 9012 3456"  # fails Luhn: a number
    assert scrub.text("GB82WEST12345698765432").startswith("[iban:")
    assert scrub.value({"password": "x", "nested": [{"email": "a@b.io"}]}) == {
        "password": {"hmac": scrub.digest("x")},
        "nested": [{"email": {"hmac": scrub.digest("a@b.io")}}],
    }
    assert scrub.value({"alice@example.com": 1}) == {f"[email:{scrub.digest('alice@example.com')[:16]}]": 1}
    assert Scrubber(b"other" * 7).digest("x") != scrub.digest("x")
    assert all(map(is_personal_name, ("email", "nationalId", "date_of_birth", "card_number", "SSN")))
    assert not any(map(is_personal_name, ("amount", "country", "segment", "tier")))
