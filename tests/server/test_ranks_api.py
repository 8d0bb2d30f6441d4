"""`GET /api/v1/runs/{run}/ranks` and the `rank` filters of the API over a real server: the JSON
shape, and clear 4xx errors for what a client got wrong (never a 500)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from flightlog.server.testing import RunningServer
from flightlog.transport import HttpStore
from tests.server.conftest import error_of
from tests.server.journal import Writer

RUN = "b" * 32


@pytest.fixture
def store(live: RunningServer, token: Callable[..., str], tmp_path: Path) -> Iterator[HttpStore]:
    s = HttpStore(live.url, token=token("admin"), home=tmp_path / "client")
    yield s
    s.close()


def _job(store: HttpStore) -> None:
    records = []
    for rank in (0, 1):
        w = Writer(RUN, writer=f"rank{rank}")
        records.append(
            w.record(
                "writer",
                t=1_700_000_000.0,
                host="n1",
                pid=10 + rank,
                owner=False,
                attempt=1,
                rank=rank,
                local_rank=rank,
                world_size=2,
                node_rank=0,
                local_world_size=2,
                restart=0,
                launcher="torchrun",
                job="torchrun:x",
                peer=True,
            )  # fmt: skip
        )
        records.append(w.run("dist", t=1_700_000_000.0, attempt=1, peer=True))
        records.append(w.metrics({"loss": ([0, 1], [1.0 + rank, 0.5 + rank])}))
        records.append(w.logs([(1_700_000_001.0 + rank, "stdout", "info", f"hello {rank}")]))
        records.append(w.record("writer_end", t=1_700_000_002.0 + rank, status="succeeded", exit_code=0))
    result = store.ingest(records)
    assert not result.skipped, result.skipped


def test_ranks_and_rank_filters(api: httpx.Client, store: HttpStore) -> None:
    _job(store)
    doc = api.get(f"/runs/{RUN[:8]}/ranks").json()
    assert [(r["rank"], r["world_size"], r["state"], r["last_step"], r["host"]) for r in doc["ranks"]] == [
        (0, 2, "succeeded", 1, "n1"),
        (1, 2, "succeeded", 1, "n1"),
    ]
    assert doc["ranks"][1]["ended"] == "2023-11-14T22:13:23.000Z" and doc["ranks"][1]["first_error"] is None
    assert api.get(f"/runs/{RUN}").json()["status"] == "succeeded"  # ended with its ranks
    logs = api.get(f"/runs/{RUN}/logs", params={"rank": 1}).json()["events"]
    assert [e["message"] for e in logs] == ["hello 1"]
    assert api.get(f"/runs/{RUN}/metrics/loss", params={"rank": 1}).json()["values"] == [2.0, 1.5]
    assert api.get(f"/runs/{RUN}/metrics/loss").json()["values"] == [1.0, 0.5]  # rank 0's, never interleaved
    assert api.get(f"/runs/{RUN}/resources", params={"rank": 1}).json() == {"samples": []}
    # the same through the Client's HTTP store
    assert [r.rank for r in store.ranks(RUN)] == [0, 1]


def test_rank_errors_are_4xx_that_say_what_was_wrong(api: httpx.Client, store: HttpStore) -> None:
    _job(store)
    for path in (f"/runs/{RUN}/logs", f"/runs/{RUN}/metrics/loss", f"/runs/{RUN}/resources"):
        for bad in ("-1", "one", "1.5"):
            response = api.get(path, params={"rank": bad})
            assert response.status_code == 400, (path, bad, response.text)
            assert "rank" in error_of(response)["message"]
    missing = api.get(f"/runs/{RUN}/metrics/loss", params={"rank": 7})
    assert missing.status_code == 404 and "ranks that did: 0, 1" in error_of(missing)["message"]
    assert api.get("/runs/nosuchrun/ranks").status_code == 404
    assert api.get(f"/runs/{RUN}/ranks", params={"all": "maybe"}).status_code == 400
