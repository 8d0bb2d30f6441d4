"""Ingest does its per-record work (inflating, decoding, checking, redacting, counting) in a
worker thread and takes at most ``MAX_RECORDS`` records a request: one big batch of small
records never holds the event loop, so ``/healthz`` (and everyone else) is answered meanwhile.
A real server process, two real clients."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest

from flightlog.server.routes.ingest import MAX_RECORDS
from flightlog.transport.http_store import HttpStore
from tests.security.probe import ServerSubprocess, health_while, server_subprocess
from tests.server.conftest import auth, error_of
from tests.server.journal import Writer

RUN = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def roomy(tmp_path: Path, server_store: str) -> Iterator[ServerSubprocess]:
    """A real `flightlog server` process with the default body limits (32 MiB), so that one batch can be big."""
    with server_subprocess(tmp_path / "srv", server_store) as running:
        yield running


def _batch(count: int, writer: str = "w1") -> list[dict]:
    w = Writer(RUN, writer)
    return [w.run("vision", name="many")] + [w.record("params", data={f"p{i}": i}) for i in range(count - 1)]


def _body(records: list[dict]) -> bytes:
    return gzip.compress(msgspec.msgpack.encode({"records": records}), compresslevel=1)


def _post(server: ServerSubprocess, body: bytes, token: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/api/v1/ingest",
        content=body,
        timeout=120,
        headers={**auth(token), "Content-Type": "application/msgpack", "Content-Encoding": "gzip"},
    )


def test_healthz_answers_while_a_big_batch_ingests(roomy: ServerSubprocess) -> None:
    token = roomy.token("writer", "vision")  # a project's token: its scope checks run too
    # the loop is held or it is not: a held loop is slow on every try, while on a 2-core CI box a
    # neighbour test can stall the server once; so up to three tries, each a new writer's batch
    # (the same work each time: nothing is skipped as already ingested), and the best must pass
    tries = []
    for attempt in range(3):
        records = _batch(MAX_RECORDS - 5000, writer=f"w{attempt + 1}")
        body = _body(records)  # built before: the client's work is not the server's
        probes, answers = health_while(roomy.url, [lambda body=body: _post(roomy, body, token)])
        slowest = max(probes, default=0.0)
        answer = answers[0]
        assert isinstance(answer, httpx.Response) and answer.status_code == 200, answer
        assert answer.json()["applied"] == len(records)
        tries.append(slowest)
        if slowest < 0.5:
            break
    assert min(tries) < 0.5, f"/healthz took {min(tries):.2f} s while a batch of {len(records)} records was ingested"
    assert len(roomy.store.get_run(RUN).params) == len(records) - 1


def test_a_batch_over_the_record_limit_gets_a_413_naming_it(roomy: ServerSubprocess, tmp_path: Path) -> None:
    token = roomy.token("writer")
    response = _post(roomy, _body(_batch(MAX_RECORDS + 1)), token)
    assert response.status_code == 413, response.text[:300]
    err = error_of(response)
    assert err["code"] == "payload_too_large" and err["details"] == {"limit": MAX_RECORDS, "records": MAX_RECORDS + 1}
    assert str(MAX_RECORDS) in err["message"]
    # the SDK's transport cuts its batches smaller on a 413, so a writer with more records still ships them all
    store = HttpStore(roomy.url, token=token, home=tmp_path / "client", close_at_exit=False)
    try:
        result = store.ingest(_batch(MAX_RECORDS + 1))
    finally:
        store.close()
    assert (result.applied, result.skipped) == (MAX_RECORDS + 1, [])
