"""Batch ingest over HTTP: idempotent, bounded, every malformed record refused alone with a reason."""

from __future__ import annotations

import gzip
from array import array
from collections.abc import Callable
from pathlib import Path

import httpx
import msgspec
import pytest

from flightlog.redaction import REDACTED_HEADER, REDACTION_VERSION
from flightlog.schema.values import encode_series
from flightlog.server.testing import RunningServer
from flightlog.transport import HttpStore
from flightlog.transport.wire import encode_batches
from tests.server.conftest import auth, error_of
from tests.server.journal import Writer

MSGPACK = {"Content-Type": "application/msgpack", "Content-Encoding": "gzip"}


@pytest.fixture
def store(live: RunningServer, token: Callable[..., str], tmp_path: Path) -> HttpStore:
    return HttpStore(live.url, token=token("writer"), home=tmp_path / "client")


def test_a_retried_or_replayed_batch_never_duplicates(store: HttpStore, api: httpx.Client) -> None:
    w = Writer("idem")
    records = [
        w.run("p"),
        w.metrics({"loss": ([0, 1, 2], [3.0, 2.0, 1.0])}),
        w.logs([(1.0, "stdout", "info", "hello")]),
    ]
    first = store.ingest(records)
    assert (first.applied, first.duplicates) == (3, 0)
    again = store.ingest(records)  # the answer was lost, the writer sends it again
    assert (again.applied, again.duplicates) == (0, 3)
    more = store.ingest(records + [w.metrics({"loss": ([3], [0.5])})])  # a retry that carries new records too
    assert (more.applied, more.duplicates) == (1, 3)
    assert api.get("/runs/idem/metrics/loss").json()["steps"] == [0, 1, 2, 3]
    assert len(api.get("/runs/idem/logs").json()["events"]) == 1


def test_batches_are_bounded_and_split(store: HttpStore, api: httpx.Client) -> None:
    w = Writer("big")
    records = [w.run("p")] + [
        w.metrics({"x": (list(range(i * 1000, (i + 1) * 1000)), [float(i)] * 1000)}) for i in range(40)
    ]
    assert len(encode_batches(records, 100_000)) > 1
    store.max_batch_bytes = 100_000
    result = store.ingest(records)
    assert result.applied == 41
    assert api.get("/runs/big/metrics").json()["metrics"][0]["count"] == 40_000


def test_a_server_limit_smaller_than_the_batch_makes_the_client_cut_smaller(
    store: HttpStore, api: httpx.Client
) -> None:
    import os

    w = Writer("cut")
    run = w.run("p")
    noise = [w.record("evidence", kind="blob", name=str(i), data={"x": os.urandom(200_000).hex()}) for i in range(6)]
    store.max_batch_bytes = 8 << 20  # more than the server's 1 MiB body limit
    result = store.ingest([run, *noise])
    assert result.applied == 7 and store.max_batch_bytes <= 1 << 20
    assert len(api.get("/runs/cut/evidence").json()["evidence"]) == 6


def test_malformed_records_are_refused_one_by_one(
    live: RunningServer, token: Callable[..., str], api: httpx.Client
) -> None:
    w = Writer("shapes")
    bad = [
        "not a map",
        {"k": "metrics", "r": "shapes", "w": "w1", "s": 2, "t": 1.0, "series": {"x": [b"\x00" * 8, b"", b""]}},
        {
            "k": "logs",
            "r": "shapes",
            "w": "w1",
            "s": 3,
            "t": 1.0,
            "n": 1,
            "t0": 1.0,
            "t1": 1.0,
            "maxlvl": 20,
            "attempts": "1",
            "data": b"\xc1 not msgpack",
        },
        {"k": "nope", "r": "shapes", "w": "w1", "s": 4, "t": 1.0},
        {"k": "run", "r": "../etc", "w": "w1", "s": 5, "t": 1.0},
        {"k": "params", "r": "shapes", "w": "w1", "s": 0, "t": 1.0, "data": {}},
        {"k": "run", "r": "shapes", "w": "w1", "s": 6, "t": 1.0, "exit_code": 2**63 + 5},
        {"k": "params", "r": "shapes", "w": "w1", "s": 7, "t": 1.0, "data": {"b": b"bytes"}},
        {"k": "spans", "r": "shapes", "w": "w1", "s": 8, "t": 1.0, "spans": [["x", "start", 2.0, 1, False, None]]},
        {"k": "counters", "r": "shapes", "w": "w1", "s": 9, "t": 1.0, "data": {"c": float("nan")}},
        {"k": "run", "r": "shapes", "w": "w1", "s": 10, "t": 1.0, "ended": 1e300},  # no calendar shows it
        {"k": "run", "r": "shapes", "w": "w1", "s": 11, "t": 1.0, "created": float("nan")},
        {"k": "run", "r": "shapes", "w": "w1", "s": 12, "t": float("inf")},
    ]
    good = w.run("p")
    # a series' times are raw float64 columns, stored as sent: one that no calendar shows reads back as null
    odd_times = w.record(
        "metrics",
        attempt=1,
        series={"x": encode_series(array("q", [0, 1]), array("d", [1e300, 1_700_000_000.0]), array("d", [1.0, 2.0]))},
    )
    body = gzip.compress(msgspec.msgpack.encode({"records": [good, *bad, odd_times]}))
    r = httpx.post(live.url + "/api/v1/ingest", content=body, headers={**MSGPACK, **auth(token("writer"))})
    assert r.status_code == 200
    doc = r.json()
    assert doc["applied"] == 2 and len(doc["skipped"]) == len(bad)
    assert all(reason.startswith("record ") for reason in doc["skipped"])
    assert any("not a time" in reason and "ended" in reason for reason in doc["skipped"])
    # what did land reads back fine: nothing broken got into the store
    assert api.get("/runs/shapes").status_code == 200
    assert api.get("/runs/shapes/logs").json()["events"] == []
    history = api.get("/runs/shapes/metrics/x").json()
    assert history["values"] == [1.0, 2.0] and history["times"][0] is None and history["times"][1].startswith("2023-")


@pytest.mark.parametrize("writer_redacts", [False, True])
def test_a_small_batch_of_odd_records_is_answered_record_by_record(
    live: RunningServer, token: Callable[..., str], api: httpx.Client, writer_redacts: bool
) -> None:
    """A small batch from a writer that redacts its own records (the SDK's) is checked on the
    server's event loop (issue #32), the others in a worker thread: the same answers either way."""
    w = Writer("odd")
    good = w.record(
        "metrics",
        attempt=1,
        series={"x": encode_series(array("q", [0, 1]), array("d", [1.0, 2.0]), array("d", [3.0, 4.0]))},
    )
    bad = [
        {"k": ["metrics"], "r": "odd", "w": "w1", "s": 90, "t": 1.0},  # a kind that is no string
        {"k": None, "r": "odd", "w": "w1", "s": 91, "t": 1.0},
        {"k": "nope", "r": "odd", "w": "w1", "s": 92, "t": 1.0},
        "not a map",
    ]
    body = gzip.compress(msgspec.msgpack.encode({"records": [good, *bad]}))
    headers = {**MSGPACK, **auth(token("writer")), **({REDACTED_HEADER: REDACTION_VERSION} if writer_redacts else {})}
    r = httpx.post(live.url + "/api/v1/ingest", content=body, headers=headers)
    assert r.status_code == 200
    doc = r.json()
    assert doc["applied"] == 1 and len(doc["skipped"]) == len(bad)
    assert all(reason.startswith("record ") for reason in doc["skipped"])
    assert api.get("/runs/odd/metrics/x").json()["values"] == [3.0, 4.0]


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ({"Content-Type": "application/json"}, b"{}", 415),
        ({"Content-Type": "application/msgpack", "Content-Encoding": "br"}, b"x", 400),
        ({"Content-Type": "application/msgpack", "Content-Encoding": "gzip"}, b"not gzip", 400),
        ({"Content-Type": "application/msgpack"}, b"\xc1", 400),
        ({"Content-Type": "application/msgpack"}, msgspec.msgpack.encode([1, 2]), 400),
        ({"Content-Type": "application/msgpack"}, b"\x91" * 100_000 + b"\xc0", 400),
        ({"Content-Type": "application/msgpack"}, b"\0" * (2 << 20), 413),
        ({"Content-Type": "application/msgpack", "Content-Encoding": "gzip"}, gzip.compress(b"\0" * (8 << 20), 9), 413),
    ],
)
def test_bad_bodies_get_clear_4xx(
    live: RunningServer, token: Callable[..., str], headers: dict[str, str], body: bytes, status: int
) -> None:
    r = httpx.post(live.url + "/api/v1/ingest", content=body, headers={**headers, **auth(token("writer"))}, timeout=60)
    assert r.status_code == status
    error_of(r)


def test_health_and_prometheus_metrics(store: HttpStore, live: RunningServer) -> None:
    w = Writer("counted")
    store.ingest(
        [
            w.run("p"),
            w.metrics({"a": ([0, 1, 2], [1.0, 2.0, 3.0]), "b": ([0], [1.0])}),
            w.logs([(1.0, "stdout", "info", "one"), (2.0, "stdout", "info", "two")]),
        ]
    )
    httpx.get(live.url + "/api/v1/runs/nope", headers=auth(live.token("reader")))
    assert httpx.get(live.url + "/healthz").json() == {"status": "ok"}
    text = httpx.get(live.url + "/metrics").text
    assert "flightlog_ingest_points_total 4" in text and "flightlog_ingest_log_events_total 2" in text
    assert 'flightlog_http_requests_total{method="POST",route="/api/v1/ingest",status="200"} 1' in text
    assert 'flightlog_http_errors_total{route="/api/v1/runs/{run}",code="not_found"} 1' in text
    assert 'flightlog_http_request_duration_seconds_bucket{route="/api/v1/ingest",le="+Inf"} 1' in text
