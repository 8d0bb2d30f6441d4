"""Pagination cursors are signed (an HMAC under a key the store keeps): a cursor whose state was
written by a client (``k=10**12`` would make one request decode a run's whole log; a negative
``k`` answered 500) is a 400, while a server's own cursors page through every event once, on
any replica of the same store."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator

import httpx
import pytest

from flightlog.server.testing import RunningServer, serve_in_thread
from tests.server.conftest import auth, error_of
from tests.server.journal import Writer

SIGNATURE = 16  # bytes of HMAC before a cursor's JSON state (server/shapes.py)

RUN = "c0ffee00" * 4


def _fill(live: RunningServer) -> None:
    w = Writer(RUN)
    events = [(1000.0 + i // 3, "stdout", "info", f"line {i}") for i in range(40)]  # three events a timestamp
    live.app.state.store.ingest([w.run("vision", name="paged"), w.logs(events)])


def _page(url: str, token: str, cursor: str | None = None) -> httpx.Response:
    params = {"limit": "7", **({"cursor": cursor} if cursor is not None else {})}
    return httpx.get(f"{url}/api/v1/runs/{RUN}/logs", params=params, headers=auth(token), timeout=30)


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.fixture
def replica(live: RunningServer, server_store: str) -> Iterator[RunningServer]:
    """A second server over the same store, as a second replica behind a load balancer."""
    with serve_in_thread(live.home, auth=True, store_uri=server_store) as running:
        yield running


def test_cursors_page_through_every_event_once_on_any_replica(live: RunningServer, replica: RunningServer) -> None:
    _fill(live)
    token = live.token("reader")
    seen, cursor, hops = [], None, 0
    while True:
        response = _page((live.url, replica.url)[hops % 2], token, cursor)  # alternate replicas page by page
        assert response.status_code == 200, response.text
        doc = response.json()
        seen += [e["message"] for e in doc["events"]]
        cursor, hops = doc["next_cursor"], hops + 1
        if cursor is None:
            break
    assert seen == [f"line {i}" for i in range(40)] and hops == 6


@pytest.mark.parametrize("k", [10**12, -1, "7"])
def test_a_cursor_with_a_state_written_by_the_client_is_a_400(live: RunningServer, k: object) -> None:
    _fill(live)
    token = live.token("reader")
    issued = _page(live.url, token).json()["next_cursor"]
    raw = _unb64(issued)
    prefix, text = raw[:SIGNATURE], raw[SIGNATURE:]  # the signature's bytes may hold a "{" too
    state = json.loads(text)
    assert set(state) == {"t", "k", "h"}  # the fingerprint h is of public inputs: anyone can write it
    forged = json.dumps({**state, "k": k}, separators=(",", ":"), sort_keys=True).encode()
    for cursor in (_b64(forged), _b64(prefix + forged)):  # without a signature; with the issued one
        response = _page(live.url, token, cursor)
        assert response.status_code == 400, response.text[:300]
        assert "cursor is not valid" in error_of(response)["message"]
    assert _page(live.url, token, issued).status_code == 200  # the server's own still works


def test_a_run_listing_cursor_cannot_be_rewritten_either(live: RunningServer) -> None:
    w = [Writer(f"{i:032x}") for i in range(5)]
    live.app.state.store.ingest([x.run("vision") for x in w])
    headers = auth(live.token("reader"))
    issued = httpx.get(f"{live.url}/api/v1/runs", params={"limit": "2"}, headers=headers, timeout=30).json()[
        "next_cursor"
    ]
    raw = _unb64(issued)
    state = json.loads(raw[SIGNATURE:])
    forged = _b64(json.dumps({**state, "o": 10**9, "t": "nan"}, separators=(",", ":"), sort_keys=True).encode())
    response = httpx.get(
        f"{live.url}/api/v1/runs", params={"limit": "2", "cursor": forged}, headers=headers, timeout=30
    )
    assert response.status_code == 400 and "cursor is not valid" in error_of(response)["message"]
