"""Log events that share a time (the lines of one read of a pipe) come back in the order they
were written, whether read from the start or from the tail, across the chunks that hold them:
a traceback's box and the exception line under it must not swap places."""

from __future__ import annotations

from pathlib import Path

import pytest

from flightlog.client import Client
from flightlog.logevents import LogBatch
from flightlog.models import LogQuery
from flightlog.schema.values import log_chunk_payload
from flightlog.store.registry import open_store
from tests.helpers import run_script


def _chunk(run_id: str, seq: int, lines: list[tuple[str, int]], at: float) -> dict:
    batch = LogBatch()
    for message, level in lines:
        batch.append(at, "stderr", level, message)
    return {"k": "logs", "r": run_id, "w": "writer-1", "s": seq, **log_chunk_payload(batch)}


@pytest.mark.embedded_only("writes chunks into the embedded store directly")
@pytest.mark.parametrize("tail", [False, True])
def test_events_of_one_time_keep_their_written_order(home: Path, tail: bool) -> None:
    run_script(home, 'import flightlog\nrun = flightlog.init(project="p", resources=False)\nrun.finish()\n')
    with Client(home) as c:
        run_id = c.runs()[0].id
        store = open_store(c.settings.store_uri)
    try:
        at = 1_800_000_000.0
        result = store.ingest(
            [
                _chunk(run_id, 1000, [("╭── Traceback (most recent call last) ──╮", 20), ("╰──╯", 20)], at),
                _chunk(run_id, 1001, [("KeyError: 'amount'", 40), ("cleanup", 20)], at),
            ]
        )
        assert not result.skipped, result.skipped
        events = [e.message for e in store.logs(run_id, LogQuery(limit=50, tail=tail)) if e.time == at]
    finally:
        store.close()
    assert events == ["╭── Traceback (most recent call last) ──╮", "╰──╯", "KeyError: 'amount'", "cleanup"]
