"""A live stream (SSE) ends when the credential that opened it ends: a revoked token or a
signed-out session stops streaming within ``stream_recheck`` seconds (issue 18, item 5),
not after the stream's maximum age of 30 minutes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from flightlog.server.auth import COOKIE
from flightlog.server.testing import RunningServer, serve_in_thread
from flightlog.server.tokens import create_token, revoke_token
from flightlog.transport.sse import parse_events
from tests.server.journal import Writer


@pytest.fixture
def streaming(tmp_path: Path, server_store: str) -> Iterator[RunningServer]:
    """A real server whose streams poll often, keep alive often, and re-check their credential every 0.3 s."""
    with serve_in_thread(
        tmp_path / "srv", auth=True, store_uri=server_store, stream_poll=0.05, stream_keepalive=0.2, stream_recheck=0.3
    ) as running:
        running.app.state.store.ingest([Writer("liverun").run("vision")])
        yield running


def _stream_until_closed(
    server: RunningServer, headers: dict[str, str], end: Callable[[], None]
) -> tuple[list[str], float]:
    """Open the run's stream, call ``end`` once it streams, and read on; returns the events seen
    after ``end`` and how long after it the server closed the stream (the test gives up at 10 s)."""
    seen: list[str] = []
    ended_at: float | None = None
    with httpx.stream(
        "GET", f"{server.url}/api/v1/runs/liverun/stream", headers=headers, timeout=httpx.Timeout(10, read=3)
    ) as response:
        assert response.status_code == 200, response.read()

        def lines() -> Iterator[str]:
            for line in response.iter_lines():  # keep-alive comments too: the deadline is checked on each
                assert ended_at is None or time.monotonic() - ended_at < 10, f"still streaming 10 s after: {seen[-5:]}"
                yield line

        for event in parse_events(lines()):
            if ended_at is None:
                if event.event == "status":
                    end()
                    ended_at = time.monotonic()
                continue
            seen.append(event.event)
            if event.event == "unauthorized":
                body = json.loads(event.data)
                assert body["error"]["code"] == "unauthorized" and body["error"]["message"]
    assert ended_at is not None
    return seen, time.monotonic() - ended_at


def test_revoking_a_token_ends_its_open_streams(streaming: RunningServer) -> None:
    store = streaming.app.state.store
    new = create_token(store, "reader")
    seen, after = _stream_until_closed(
        streaming, {"Authorization": f"Bearer {new.secret}"}, lambda: revoke_token(store, new.id)
    )
    assert seen and seen[-1] == "unauthorized" and after < 5, (seen, after)
    again = httpx.get(f"{streaming.url}/api/v1/runs/liverun/stream", headers={"Authorization": f"Bearer {new.secret}"})
    assert again.status_code == 401


def test_signing_out_ends_the_sessions_open_streams(streaming: RunningServer) -> None:
    secret = create_token(streaming.app.state.store, "reader").secret
    signed = httpx.post(f"{streaming.url}/api/v1/session", json={"token": secret})
    session = signed.cookies[COOKIE]
    cookie = {"Cookie": f"{COOKIE}={session}"}

    def sign_out() -> None:
        assert httpx.delete(f"{streaming.url}/api/v1/session", headers=cookie).status_code == 200

    seen, after = _stream_until_closed(streaming, cookie, sign_out)
    assert seen and seen[-1] == "unauthorized" and after < 5, (seen, after)


def test_a_stream_whose_credential_holds_keeps_streaming(streaming: RunningServer) -> None:
    secret = create_token(streaming.app.state.store, "reader").secret
    kinds = []
    started = time.monotonic()
    with httpx.stream(
        "GET",
        f"{streaming.url}/api/v1/runs/liverun/stream",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=httpx.Timeout(10, read=3),
    ) as response:
        for line in response.iter_lines():
            kinds.append(line)
            if time.monotonic() - started > 1.5:  # five re-checks
                break
    assert not any("unauthorized" in k for k in kinds) and any(k.startswith(": keep-alive") for k in kinds)


def test_nothing_written_after_the_revocation_is_sent(tmp_path: Path, server_store: str) -> None:
    """Issue 31, item 11: a revoked token's stream once delivered 2 of the 6 batches written after
    the revocation (it re-checked every few seconds). Now the credential is checked before every
    batch: six batches written after the revocation, none delivered, only ``unauthorized``."""
    with serve_in_thread(
        tmp_path / "srv", auth=True, store_uri=server_store, stream_poll=0.05, stream_keepalive=0.2, stream_recheck=30
    ) as server:
        store = server.app.state.store
        writer = Writer("liverun")
        store.ingest([writer.run("vision")])
        new = create_token(store, "reader")
        after: list[str] = []
        unauthorized = None
        with httpx.stream(
            "GET",
            f"{server.url}/api/v1/runs/liverun/stream",
            headers={"Authorization": f"Bearer {new.secret}"},
            timeout=httpx.Timeout(10, read=5),
        ) as response:
            revoked = False
            for event in parse_events(response.iter_lines()):
                if not revoked and event.event == "status":
                    revoke_token(store, new.id)
                    revoked = True
                    for i in range(6):  # six batches, all written after the revocation
                        store.ingest([writer.logs([(time.time(), "stdout", "info", f"after revocation {i}")])])
                    continue
                if revoked:
                    after.append(event.event)
                    if event.event == "unauthorized":
                        unauthorized = event
                        break
        assert after == ["unauthorized"], after
        assert unauthorized is not None and unauthorized.id == "0.0"  # resuming there loses nothing
