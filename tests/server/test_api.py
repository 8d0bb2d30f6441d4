"""The REST API over a real server: runs search and cursors, run detail and updates, notes,
evidence, lineage, metric histories and their downsampling, logs and their cursors."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import msgspec
import numpy as np
import pytest

from flightlog.server.testing import RunningServer
from flightlog.transport import HttpStore
from tests.server.conftest import auth, error_of
from tests.server.journal import Writer


@pytest.fixture
def store(live: RunningServer, token: Callable[..., str], tmp_path: Path) -> Iterator[HttpStore]:
    s = HttpStore(live.url, token=token("admin"), home=tmp_path / "client")
    yield s
    s.close()


def _runs(store: HttpStore, n: int, project: str = "p", t0: float = 1_700_000_000.0) -> list[str]:
    records, ids = [], []
    for i in range(n):
        w = Writer(f"run{i:04d}")
        records.append(w.run(project, name=f"r{i}", t=t0 + i))
        records.append(w.record("params", data={"lr": i / 100, "i": i}))
        ids.append(w.run_id)
    store.ingest(records)
    return ids


def test_runs_cursor_pages_cover_everything_once_even_while_runs_are_added(api: httpx.Client, store: HttpStore) -> None:
    ids = _runs(store, 120)
    seen: list[str] = []
    page = api.get("/runs", params={"project": "p", "limit": 50}).json()
    _runs(store, 1, t0=1_800_000_000.0)  # a newer run arrives between pages: it must not shift them
    while True:
        seen += [r["id"] for r in page["runs"]]
        if not page["next_cursor"]:
            break
        page = api.get("/runs", params={"project": "p", "limit": 50, "cursor": page["next_cursor"]}).json()
    assert seen == sorted(ids, reverse=True), "newest first, each once"
    # a cursor of another query is refused, a made-up one too
    first = api.get("/runs", params={"project": "p", "limit": 10}).json()
    other = api.get("/runs", params={"project": "q", "cursor": first["next_cursor"]})
    assert other.status_code == 400 and "another query" in error_of(other)["message"]
    assert api.get("/runs", params={"cursor": "not-a-cursor"}).status_code == 400


def test_runs_filter_order_and_errors(api: httpx.Client, store: HttpStore) -> None:
    _runs(store, 30)
    doc = api.get("/runs", params={"filter": "params.lr >= 0.25", "order_by": "params.lr", "limit": 3}).json()
    assert [r["params"]["i"] for r in doc["runs"]] == [25, 26, 27]
    assert "metric_summaries" not in doc["runs"][0] and "host" in doc["runs"][0]
    detail = api.get("/runs", params={"limit": 1, "detail": "true"}).json()["runs"][0]
    assert "metric_summaries" in detail
    bad = api.get("/runs", params={"filter": "params.lr >> 1"})
    err = error_of(bad)
    assert bad.status_code == 400 and err["code"] == "invalid_filter" and err["details"]["position"] == 11
    for params in ({"limit": "-1"}, {"limit": "1001"}, {"limit": "ten"}, {"detail": "maybe"}, {"offset": "-3"}):
        r = api.get("/runs", params=params)
        assert r.status_code == 400 and next(iter(params)) in error_of(r)["message"]


def test_run_detail_prefix_update_delete_and_missing(api: httpx.Client, store: HttpStore) -> None:
    run_id = _runs(store, 1)[0]
    assert api.get(f"/runs/{run_id[:6]}").json()["id"] == run_id
    missing = api.get("/runs/zzzz")
    assert missing.status_code == 404 and "zzzz" in error_of(missing)["message"]
    assert api.get("/runs/bad%20id").status_code == 400
    done = api.patch(
        f"/runs/{run_id}",
        json={"status": "failed", "end_reason": "exit", "exit_code": 3, "ended": "2026-01-01T00:00:00Z"},
    )
    assert (
        done.status_code == 200
        and done.json()["status"] == "failed"
        and done.json()["ended"] == "2026-01-01T00:00:00.000Z"
    )
    for body in ({"status": "exploded"}, {"project": "other"}, {}, {"exit_code": "3"}, {"ended": "yesterday-ish"}):
        assert api.patch(f"/runs/{run_id}", json=body).status_code == 400, body
    as_text = api.patch(f"/runs/{run_id}", content=b"status=failed", headers={"Content-Type": "text/plain"})
    assert as_text.status_code == 415
    assert (
        api.patch(f"/runs/{run_id}", content=b"{not json", headers={"Content-Type": "application/json"}).status_code
        == 400
    )
    deep = b"[" * 100_000 + b"]" * 100_000
    assert api.patch(f"/runs/{run_id}", content=deep, headers={"Content-Type": "application/json"}).status_code == 400
    prefix = api.delete(f"/runs/{run_id[:6]}")
    assert prefix.status_code == 400 and "whole run id" in error_of(prefix)["message"]
    assert api.delete(f"/runs/{run_id}").json() == {"deleted": 1}
    assert api.get(f"/runs/{run_id}").status_code == 404


def test_notes_evidence_context_projects(api: httpx.Client, store: HttpStore) -> None:
    run_id = _runs(store, 1, project="vision")[0]
    note = api.post(f"/runs/{run_id}/notes", json={"text": "lr too high?", "author": "ana"})
    assert note.status_code == 201 and note.json()["text"] == "lr too high?"
    assert [n["author"] for n in api.get(f"/runs/{run_id}/notes").json()["notes"]] == ["ana"]
    assert api.post(f"/runs/{run_id}/notes", json={"text": "  "}).status_code == 400
    assert (
        api.post(f"/runs/{run_id}/evidence", json={"kind": "eval", "name": "val", "data": {"acc": 0.9}}).status_code
        == 201
    )
    ev = api.get(f"/runs/{run_id}/evidence", params={"kind": "eval"}).json()["evidence"]
    assert ev[0]["data"] == {"acc": 0.9} and ev[0]["time"].endswith("Z")
    assert api.get(f"/runs/{run_id}/context").json() == {}
    projects = api.get("/projects").json()["projects"]
    assert [(p["name"], p["runs"]) for p in projects] == [("vision", 1)]


def test_metric_history_downsampled_keeps_spikes_and_nonfinite(api: httpx.Client, store: HttpStore) -> None:
    w = Writer("metricrun")
    steps = list(range(100_000))
    values = [math.sin(s / 1000) for s in steps]
    values[12_345] = 50.0  # one spike
    values[77_777] = -40.0
    values[500] = math.nan
    store.ingest(
        [
            w.run("p"),
            w.metrics({"loss": (steps[:60_000], values[:60_000])}),
            w.metrics({"loss": (steps[60_000:], values[60_000:])}),
        ]
    )
    doc = api.get("/runs/metricrun/metrics/loss", params={"buckets": 1000}).json()
    assert doc["points"] == 100_000 and doc["buckets"] == 1000 and sum(doc["count"]) == 100_000
    assert max(doc["max"]) == 50.0 and doc["max_step"][doc["max"].index(50.0)] == 12_345
    assert min(doc["min"]) == -40.0 and doc["min_step"][doc["min"].index(-40.0)] == 77_777
    assert sum(doc["nonfinite"]) == 1 and doc["step"][0] == 0 and doc["step_end"][-1] == 99_999
    ranged = api.get(
        "/runs/metricrun/metrics/loss", params={"buckets": 10, "from_step": 12_000, "to_step": 12_999}
    ).json()
    assert ranged["points"] == 1000 and max(ranged["max"]) == 50.0
    full = api.get("/runs/metricrun/metrics/loss", params={"from_step": 0, "to_step": 9})
    assert full.json()["steps"] == list(range(10))
    too_many = api.get("/runs/metricrun/metrics/loss")
    assert too_many.status_code == 400 and "buckets" in error_of(too_many)["message"]
    binary = api.get("/runs/metricrun/metrics/loss", headers={"Accept": "application/msgpack"})
    cols = msgspec.msgpack.decode(binary.content)
    got = np.frombuffer(cols["values"], dtype="<f8")
    assert np.array_equal(got, np.array(values), equal_nan=True), "exact to the bit"
    for params in ({"buckets": "0"}, {"buckets": "10001"}, {"from_step": "x"}):
        assert api.get("/runs/metricrun/metrics/loss", params=params).status_code == 400
    missing = api.get("/runs/metricrun/metrics/acc")
    assert missing.status_code == 404 and "loss" in error_of(missing)["message"]
    # names with slashes
    store.ingest([w.metrics({"val/loss": ([1, 2], [0.5, 0.25])})])
    assert api.get("/runs/metricrun/metrics/val/loss").json()["values"] == [0.5, 0.25]
    summaries = {m["name"]: m for m in api.get("/runs/metricrun/metrics").json()["metrics"]}
    assert summaries["loss"]["nonfinite"] == 1 and summaries["loss"]["max"] == 50.0


def test_logs_filters_cursor_pages_and_tail(api: httpx.Client, store: HttpStore) -> None:
    w = Writer("logrun")
    t0 = 1_700_000_000.0
    records = [w.run("p")]
    for chunk in range(5):  # several chunks, with events sharing timestamps across pages
        records.append(
            w.logs(
                [
                    (
                        t0 + chunk * 10 + i // 3,
                        "stdout" if i % 2 else "stderr",
                        "error" if i % 7 == 0 else "info",
                        f"event {chunk * 30 + i}",
                    )
                    for i in range(30)
                ]
            )
        )
    store.ingest(records)
    every = api.get("/runs/logrun/logs", params={"limit": 10000}).json()["events"]
    assert len(every) == 150
    paged: list[str] = []
    cursor = None
    while True:
        params = {"limit": 7, **({"cursor": cursor} if cursor else {})}
        page = api.get("/runs/logrun/logs", params=params).json()
        paged += [e["message"] for e in page["events"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert paged == [e["message"] for e in every], "pages add up to the whole, in order, each once"
    errors = api.get("/runs/logrun/logs", params={"level": "error", "stream": "stderr"}).json()["events"]
    assert errors and all(e["level"] == "error" and e["stream"] == "stderr" for e in errors)
    assert api.get("/runs/logrun/logs", params={"grep": "EVENT 14\\d$"}).json()["events"][0]["message"] == "event 140"
    tail = api.get("/runs/logrun/logs", params={"tail": "true", "limit": 2}).json()["events"]
    assert [e["message"] for e in tail] == ["event 148", "event 149"]
    since = api.get("/runs/logrun/logs", params={"since": str(t0 + 40), "until": str(t0 + 41)}).json()["events"]
    assert {e["message"] for e in since} == {f"event {120 + i}" for i in range(6)}
    by_number = api.get("/runs/logrun/logs", params={"level": " 40 "}).json()["events"]
    assert by_number == api.get("/runs/logrun/logs", params={"level": "error"}).json()["events"] and by_number
    for params in (
        {"level": "loud"},
        {"level": "\u00b96"},
        {"level": "\u0666"},
        {"grep": "("},
        {"stream": "stdin"},
        {"since": "last tuesday"},
        {"attempt": "x"},
        {"tail": "true", "cursor": "abc"},
    ):
        r = api.get("/runs/logrun/logs", params=params)
        assert r.status_code == 400, params
        error_of(r)


def test_stages_resources_children_lineage_through_the_client(server: RunningServer, tmp_path: Path) -> None:
    import flightlog

    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    parent = flightlog.init(project="p", name="pipeline", resources=False)
    producer = flightlog.init(project="p", name="prep", parent=parent, resources=False)
    producer.log_artifact(data, kind="dataset")
    with producer.stage("load"):
        pass
    producer._w.resources.append({"time": 1.0, "cpu_percent": 50.0})
    producer.finish()
    consumer = flightlog.init(project="p", name="train", resources=False)
    consumer.log_input(data)
    consumer.finish()
    parent.finish()
    client = flightlog.Client()
    assert client.stages(producer.id)[0].name == "load"
    assert client.resources(producer.id) == [{"time": 1.0, "cpu_percent": 50.0}]
    assert client.store.children(parent.id) == [producer.id]
    with httpx.Client(base_url=server.url + "/api/v1", headers=auth(server.token("reader"))) as api:
        lineage = api.get(f"/runs/{consumer.id}/lineage").json()
        assert lineage["inputs"][0]["produced_by"] == [producer.id]
        by_digest = api.get("/artifacts", params={"sha256": lineage["inputs"][0]["artifact"]["sha256"]}).json()
        assert {a["run_id"] for a in by_digest["artifacts"]} == {producer.id, consumer.id}
    client.close()
