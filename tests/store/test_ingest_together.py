"""Ingest at team scale (issue 32): several writers' batches in one transaction, each applied
once and answered on its own; a lock per run instead of one across runs; the alert feed that
reads by writing transaction; the server's queue that groups concurrent requests. On SQLite and
on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from flightlog.errors import StoreUnavailable
from flightlog.logevents import LogBatch
from flightlog.models import LogQuery
from flightlog.schema.values import encode_series, log_chunk_payload
from flightlog.server.ingestqueue import IngestQueue
from flightlog.server.testing import serve_in_thread
from flightlog.store.postgres.connection import RUN_LOCK_SPACE
from flightlog.store.postgres.store import PostgresStore
from flightlog.store.sqlite.store import SqliteStore
from flightlog.transport import HttpStore

pytestmark = pytest.mark.embedded_only("about the stores' ingest itself")


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "sqlite":
        s: Any = SqliteStore(tmp_path / "flightlog.db")
    else:
        s = PostgresStore(request.getfixturevalue("postgres_uri"))
    try:
        yield s
    finally:
        s.close()


def _metrics(run: str, writer: str, seq: int, first_step: int, n: int = 100) -> dict[str, Any]:
    steps = array("q", range(first_step, first_step + n))
    times = array("d", (1000.0 + s for s in steps))
    values = array("d", (s * 0.5 for s in steps))
    return {
        "k": "metrics",
        "r": run,
        "w": writer,
        "s": seq,
        "t": 1000.0,
        "series": {"loss": encode_series(steps, times, values)},
    }


def _logs(run: str, writer: str, seq: int, first: int, n: int = 20, level: int = 20) -> dict[str, Any]:
    batch = LogBatch()
    for i in range(first, first + n):
        batch.append(1000.0 + i, "stdout", level, f"line {i}")
    return {"k": "logs", "r": run, "w": writer, "s": seq, "t": 1000.0, **log_chunk_payload(batch)}


def _batch(run: str, number: int) -> list[dict[str, Any]]:
    """A writer's `number`th batch (from 0): 100 points and 20 lines, as the load bench sends."""
    return [_metrics(run, "w1", 2 * number + 1, 100 * number), _logs(run, "w1", 2 * number + 2, 20 * number)]


def test_batches_of_many_writers_in_one_transaction_are_each_answered_and_stored_once(store: Any) -> None:
    runs = [f"run-{i}" for i in range(5)]
    first = [_batch(r, 0) for r in runs]
    results = store.ingest_batches([*first, first[2], [*_batch(runs[0], 1), _batch(runs[0], 1)[0]]])
    assert [(r.applied, r.duplicates, r.skipped) for r in results] == [(2, 0, [])] * 5 + [(0, 2, []), (2, 1, [])]
    again = store.ingest_batches(first)  # a retry of all of it: nothing twice
    assert [(r.applied, r.duplicates) for r in again] == [(0, 2)] * 5
    for run in runs:
        points = 200 if run == runs[0] else 100
        assert list(store.metric_history(run, "loss").steps) == list(range(points))
        assert store.metric_summaries(run)["loss"].count == points
        assert [e.message for e in store.logs(run, LogQuery())] == [f"line {i}" for i in range(points // 5)]
        assert store.get_run(run).timeline["last_metric"] == 1000.0 + points - 1


def test_one_broken_record_is_skipped_in_its_own_batchs_answer_only(store: Any) -> None:
    broken = _metrics("run-b", "w1", 1, 0)
    broken["series"] = {"loss": [b"\x01", b"\x02", b"\x03"]}  # not 8-byte columns
    results = store.ingest_batches([_batch("run-a", 0), [broken, _logs("run-b", "w1", 2, 0)], _batch("run-c", 0)])
    assert [(r.applied, r.duplicates) for r in results] == [(2, 0), (1, 0), (2, 0)]
    assert results[0].skipped == results[2].skipped == []
    assert len(results[1].skipped) == 1 and "bad metrics record (run run-b, seq 1)" in results[1].skipped[0]
    for run in ("run-a", "run-c"):
        assert list(store.metric_history(run, "loss").steps) == list(range(100))
    assert len(store.logs("run-b", LogQuery())) == 20
    assert "loss" not in store.metric_summaries("run-b")


def test_a_record_postgresql_refuses_is_skipped_in_its_own_batchs_answer_only(postgres_uri: str) -> None:
    """PostgreSQL's own refusal (a number past BIGINT, sent as NUMERIC), not the code's: the
    transaction's statements are pipelined, and the error must still come back to its record.
    (Records that passed their checks hold no such number; the store is given one directly.)"""
    store = PostgresStore(postgres_uri)
    refused = _logs("run-b", "w1", 2, 0)
    refused["maxlvl"] = 2**70
    results = store.ingest_batches([_batch("run-a", 0), [_metrics("run-b", "w1", 1, 0), refused], _batch("run-c", 0)])
    assert [(r.applied, r.duplicates) for r in results] == [(2, 0), (1, 0), (2, 0)]
    assert results[0].skipped == results[2].skipped == []
    assert len(results[1].skipped) == 1 and "bad logs record (run run-b, seq 2)" in results[1].skipped[0]
    for run in ("run-a", "run-b", "run-c"):
        assert list(store.metric_history(run, "loss").steps) == list(range(100))
    assert [len(store.logs(run, LogQuery())) for run in ("run-a", "run-b", "run-c")] == [20, 0, 20]
    again = store.ingest_batches([_batch("run-a", 0), [_metrics("run-b", "w1", 1, 0)]])  # marks moved past both
    assert [(r.applied, r.duplicates) for r in again] == [(0, 2), (0, 1)]
    store.close()


def test_the_alert_feed_sees_a_row_committed_after_a_newer_one_exactly_once(postgres_uri: str) -> None:
    """Without a lock across runs, a transaction that took its ids first may commit last: the
    feed (by writing transaction, migration 6) must neither skip its rows nor read any twice."""
    store = PostgresStore(postgres_uri)
    try:
        cursor = store.change_cursor()
        slow = psycopg.connect(postgres_uri, autocommit=False)
        try:
            # run A's chunk gets its id first, and its transaction stays open ...
            slow.execute(
                "INSERT INTO metric_chunks(run_id, name, writer, attempt, n, first_step, last_step, steps, times, vals) "
                "VALUES('run-a', 'loss', 'w1', 1, 1, 0, 0, %s, %s, %s)",
                [bytes(8), bytes(8), bytes(8)],
            )
            store.ingest([_metrics("run-b", "w1", 1, 0, n=1)])  # ... while run B's commits
            first = store.changes(cursor)  # B's row waits until the older transaction has ended
            assert first.metric_chunks == []
            slow.commit()
        finally:
            slow.close()
        second = store.changes(first.cursor)
        assert [c[0] for c in second.metric_chunks] == ["run-a", "run-b"]
        assert store.changes(second.cursor).metric_chunks == []
        # a feed of one run from the start reads its rows, old and new, once
        assert [c[0] for c in store.changes({t: 0 for t in cursor}, run_id="run-a").metric_chunks] == ["run-a"]
    finally:
        store.close()


def test_appends_to_one_run_from_two_servers_commit_in_the_order_of_their_ids(postgres_uri: str) -> None:
    """A live stream reads a run's chunks by id: with two servers appending to one run at once,
    a reader that follows the ids must see every chunk once, in order, and never skip one."""
    a, b = PostgresStore(postgres_uri), PostgresStore(postgres_uri)
    reader = PostgresStore(postgres_uri)
    seen: list[str] = []
    done = threading.Event()

    def write(store: PostgresStore, writer: str) -> None:
        for i in range(40):
            store.ingest([_logs("run-1", writer, i + 1, 10 * i, n=10)])

    def follow() -> None:
        after = 0
        while True:
            finished = done.is_set()
            events, after = reader.log_events_after("run-1", after, LogQuery())
            seen.extend(f"{e.message}" for e in events)
            if finished:
                return

    try:
        follower = threading.Thread(target=follow)
        follower.start()
        writers = [threading.Thread(target=write, args=(s, w)) for s, w in ((a, "wa"), (b, "wb"))]
        for t in writers:
            t.start()
        for t in writers:
            t.join()
        done.set()
        follower.join()
        assert sorted(seen) == sorted(f"line {i}" for i in range(400) for _ in range(2))
        assert len(store_lines(reader)) == 800
    finally:
        for s in (a, b, reader):
            s.close()


def store_lines(store: PostgresStore) -> list[str]:
    return [e.message for e in store.logs("run-1", LogQuery())]


def test_the_servers_queue_answers_each_request_with_its_own_result_from_one_transaction(postgres_uri: str) -> None:
    """Requests that arrive while a transaction runs are applied together in the next one, each
    answered with its own counts (here: the first request waits on a run lock a test connection
    holds, so the others queue up behind it)."""
    store = PostgresStore(postgres_uri)
    queue = IngestQueue(store)
    holder = psycopg.connect(postgres_uri, autocommit=False)
    try:
        holder.execute("SELECT pg_advisory_xact_lock(%s, hashtext('run-0'))", (RUN_LOCK_SPACE,))

        async def send() -> list[Any]:
            first = asyncio.ensure_future(queue.ingest(_batch("run-0", 0)))
            await asyncio.sleep(0)  # it is queued ...
            while queue.waiting:  # ... and taken by the worker, whose transaction waits on the lock
                await asyncio.sleep(0.01)
            rest = [asyncio.ensure_future(queue.ingest(_batch(f"run-{i}", 0))) for i in range(1, 6)]
            dup = asyncio.ensure_future(queue.ingest(_batch("run-3", 0)))
            await asyncio.sleep(0)
            assert queue.waiting == 6
            holder.commit()  # the first transaction goes on; the six queued behind it share the next
            return await asyncio.gather(first, *rest, dup)

        results = asyncio.run(send())
        assert [(r.applied, r.duplicates) for r in results] == [(2, 0)] * 6 + [(0, 2)]
        assert queue.batches == 7 and queue.transactions == 2
        for i in range(6):
            assert list(store.metric_history(f"run-{i}", "loss").steps) == list(range(100))
    finally:
        holder.close()
        queue.close()
        store.close()


def test_a_closed_queue_applies_what_it_holds_then_ends_its_thread(tmp_path: Path) -> None:
    """The server's shutdown closes its queue: what was queued is committed, and the thread
    ends (a server started and stopped in one process left one thread per server, each holding
    its store), and a batch that comes after the close is told the server is going away."""
    store = SqliteStore(tmp_path / "flightlog.db")
    queue = IngestQueue(store)
    try:
        first = asyncio.run(queue.ingest(_batch("run-1", 0)))
        assert first.applied == 2
        thread = queue._thread
        assert thread is not None and thread.is_alive()
        queue.close()
        assert not thread.is_alive()
        assert list(store.metric_history("run-1", "loss").steps) == list(range(100))
        with pytest.raises(StoreUnavailable, match="shutting down"):
            asyncio.run(queue.ingest(_batch("run-1", 1)))
    finally:
        store.close()


def _ingest_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "flightlog-ingest" and t.is_alive()}


def test_a_server_stopped_leaves_no_ingest_thread(tmp_path: Path) -> None:
    before = _ingest_threads()
    with serve_in_thread(tmp_path / "home") as server:
        client = HttpStore(server.url, home=tmp_path / "client", close_at_exit=False)
        try:
            assert client.ingest(_batch("run-1", 0)).applied == 2
        finally:
            client.close()
        assert _ingest_threads() - before, "the server's queue has its thread"
    assert not _ingest_threads() - before


def _run_record(run: str, seq: int, **fields: Any) -> dict[str, Any]:
    return {"k": "run", "r": run, "w": "w1", "s": seq, "t": 990.0, "project": "p", **fields}


def test_a_runs_timeline_and_updated_time_are_whole_after_one_batch_or_its_replay_one_by_one(store: Any) -> None:
    """A short run's one batch merges its timeline twice (its start, then its metrics' first and
    last times: issue 32 writes them without reading the row again) and sets its `updated`
    time; a batch with a broken record is rolled back and applied again one record at a time,
    and its timeline comes out as if the broken record had never been there."""
    start = _run_record("run-a", 1, status="running", timeline={"process_start": 990.0})
    end = _run_record("run-a", 3, status="succeeded")
    assert store.ingest_batches([[start, _metrics("run-a", "w1", 2, 0), end]])[0].applied == 3
    first = store.get_run("run-a")
    assert first.status == "succeeded"
    assert first.timeline == {"process_start": 990.0, "first_metric": 1000.0, "last_metric": 1099.0}
    assert first.updated is not None
    store.ingest_batches([[_metrics("run-a", "w1", 4, 100, n=10)]])
    again = store.get_run("run-a")
    assert again.timeline["last_metric"] == 1109.0 and again.timeline["first_metric"] == 1000.0
    assert again.updated is not None and again.updated >= first.updated

    # a run record that merges an instant, then breaks (no status): the whole batch is rolled
    # back and applied again one record at a time, where that record alone is skipped, and the
    # instant it merged before it broke is nowhere
    broken = _run_record("run-b", 2, status=None, timeline={"first_bogus": 1.0})
    start_b = _run_record("run-b", 1, status="running", timeline={"process_start": 990.0})
    result = store.ingest_batches([[start_b, broken, _metrics("run-b", "w1", 3, 0), _metrics("run-b", "w1", 4, 100)]])
    assert (result[0].applied, len(result[0].skipped)) == (3, 1), result
    run_b = store.get_run("run-b")
    assert run_b.timeline == {"process_start": 990.0, "first_metric": 1000.0, "last_metric": 1199.0}
    assert run_b.status == "running" and run_b.updated is not None
