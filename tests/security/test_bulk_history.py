"""What one reader's ``metrics/get-history-bulk-interval`` may cost is bounded (issue 31, item 4):
naming one 200,000-point run 100 times once took 25 s, answered 287 MB and held ``/healthz``
for 4.8 s. Now a run named many times is read and answered once, a run gives at most 2,500
points (MLflow's bound) and an answer at most 100,000, and the answer is built off the event
loop from the sampled points only; a real server process over SQLite and over PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from flightlog.mlflow_server.api.tracking import MAX_BULK_PER_RUN, MAX_BULK_POINTS
from tests.security.probe import ServerSubprocess, assert_healthy_under_attack, server_subprocess
from tests.server.conftest import auth
from tests.server.journal import Writer

BIG = "b" * 32
POINTS = 200_000


@pytest.fixture
def history_server(tmp_path: Path, server_store: str) -> Iterator[tuple[ServerSubprocess, str]]:
    """A real server process with one run of 200,000 points of ``loss``; a reader's token."""
    with server_subprocess(tmp_path / "srv", server_store) as server:
        w = Writer(BIG)
        steps = range(POINTS)
        server.store.ingest([w.run("vision"), w.metrics({"loss": (steps, [1.0 / (s + 1) for s in steps])})])
        yield server, server.token("reader")


def _bulk(server: ServerSubprocess, token: str, run_ids: list[str], **params: object) -> httpx.Response:
    return httpx.get(
        f"{server.url}/api/2.0/mlflow/metrics/get-history-bulk-interval",
        params={"run_ids": run_ids, "metric_key": "loss", **params},  # type: ignore[dict-item]
        headers=auth(token),
        timeout=60,
    )


def test_one_run_named_100_times_is_answered_once_and_bounded(history_server: tuple[ServerSubprocess, str]) -> None:
    server, token = history_server
    response = _bulk(server, token, [BIG] * 100)
    assert response.status_code == 200, response.text[:300]
    points = response.json()["metrics"]
    assert len(points) == MAX_BULK_PER_RUN  # not 100 copies of 25,000
    assert {p["run_id"] for p in points} == {BIG}
    steps = [p["step"] for p in points]
    assert steps[0] == 0 and steps[-1] == POINTS - 1 and steps == sorted(set(steps))
    assert len(response.content) < 1 << 20  # was 287 MB
    window = _bulk(server, token, [BIG], start_step=1000, end_step=1009, max_results=5).json()["metrics"]
    assert [p["step"] for p in window][0] == 1000 and window[-1]["step"] == 1009 and len(window) == 5


def test_what_one_request_may_ask_is_refused_past_its_bounds(history_server: tuple[ServerSubprocess, str]) -> None:
    server, token = history_server
    too_many = _bulk(server, token, [BIG], max_results=MAX_BULK_PER_RUN + 1)
    assert too_many.status_code == 400 and str(MAX_BULK_PER_RUN) in too_many.json()["message"]
    runs = _bulk(server, token, [f"{i:032x}" for i in range(101)])
    assert runs.status_code == 400 and "100" in runs.json()["message"], runs.text


def test_many_runs_share_one_answers_budget(tmp_path: Path, server_store: str) -> None:
    with server_subprocess(tmp_path / "srv", server_store) as server:
        ids = [f"{i:032x}" for i in range(60)]
        records = []
        for run_id in ids:
            w = Writer(run_id)
            records += [w.run("vision"), w.metrics({"loss": (range(3000), [0.5] * 3000)})]
        server.store.ingest(records)
        response = _bulk(server, server.token("reader"), ids)
        assert response.status_code == 200, response.text[:300]
        points = response.json()["metrics"]
        assert len(points) <= MAX_BULK_POINTS and len({p["run_id"] for p in points}) == 60
        per_run = {run_id: sum(p["run_id"] == run_id for p in points) for run_id in ids}
        assert set(per_run.values()) == {MAX_BULK_POINTS // 60}


def test_healthz_answers_within_100_ms_under_the_bulk_attack(history_server: tuple[ServerSubprocess, str]) -> None:
    server, token = history_server

    def attack() -> int:
        return _bulk(server, token, [BIG] * 100, max_results=MAX_BULK_PER_RUN).status_code

    window = assert_healthy_under_attack(server.url, attack)
    assert window.attacks and all(a == 200 for a in window.attacks), window.attacks[:5]
