"""The runs listing's headlines: each row's `cause` and `nonfinite_metrics`, without a diagnosis per row."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from flightlog.server.testing import RunningServer
from flightlog.transport import HttpStore
from tests.server.journal import Writer


@pytest.fixture
def store(live: RunningServer, token: Callable[..., str], tmp_path: Path) -> Iterator[HttpStore]:
    s = HttpStore(live.url, token=token("admin"), home=tmp_path / "client")
    yield s
    s.close()


def test_rows_carry_the_cause_and_the_metrics_that_went_non_finite(api: httpx.Client, store: HttpStore) -> None:
    runner = Writer("byrunner")  # `flightlog run` stores the category it classified
    sdk = Writer("bysdk")  # an SDK run stores the exception only: the fast classifier names it
    oom, killed, nan, ok = Writer("oomrun"), Writer("killedrun"), Writer("nanrun"), Writer("okrun")
    traceback = (
        'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n'
        "    open('/data/x.csv')\nFileNotFoundError: [Errno 2] No such file or directory: '/data/x.csv'\n"
    )
    store.ingest([
        runner.run("p", t=1.0), runner.record("run", status="failed", end_reason="exit", exit_code=2,
                                              failure={"category": "disk_full", "exception": "OSError"}),
        sdk.run("p", t=2.0), sdk.record("run", status="failed", end_reason="exception",
                                        failure={"exception": "FileNotFoundError", "traceback": traceback}),
        oom.run("p", t=3.0), oom.record("run", status="failed", end_reason="oom_killed", exit_code=137),
        killed.run("p", t=4.0), killed.record("run", status="killed", end_reason="signal", signal=15),
        nan.run("p", t=5.0), nan.metrics({"loss": ([0, 1, 2], [1.0, math.nan, 0.5]), "acc": ([0], [0.1]),
                                          "grad": ([0], [math.inf])}),
        nan.record("run", status="succeeded", end_reason="exit", exit_code=0),
        ok.run("p", t=6.0), ok.metrics({"loss": ([0, 1], [1.0, 0.5])}),
        ok.record("run", status="succeeded", end_reason="exit", exit_code=0),
    ])  # fmt: skip
    for detail in ("false", "true"):
        rows = {r["id"]: r for r in api.get("/runs", params={"project": "p", "detail": detail}).json()["runs"]}
        assert {k: r["cause"] for k, r in rows.items()} == {
            "byrunner": "disk_full", "bysdk": "missing_file", "oomrun": "oom_killed",
            "killedrun": "killed_by_signal", "nanrun": None, "okrun": None}  # fmt: skip
        assert rows["nanrun"]["nonfinite_metrics"] == ["grad", "loss"]  # at any step, not only the last
        assert rows["okrun"]["nonfinite_metrics"] == [] and rows["bysdk"]["nonfinite_metrics"] == []


def test_a_failure_of_any_shape_never_breaks_the_listing(api: httpx.Client, store: HttpStore) -> None:
    odd, lost, stopped = Writer("oddrun"), Writer("lostrun"), Writer("stoppedrun")
    store.ingest(
        [
            odd.run("q", t=1.0),
            lost.run("q", t=2.0),
            stopped.run("q", t=3.0),
            lost.record("run", status="crashed", end_reason="lost"),
            stopped.record("run", status="stopped", end_reason="signal", signal=2),
        ]
    )
    patched = api.patch(
        "/runs/oddrun",
        json={
            "status": "failed",
            "exit_code": 1,
            "failure": {"category": 7, "traceback": ["not", "text"], "last_lines": "one string", "exception": None},
        },
    )
    assert patched.status_code == 200
    page = api.get("/runs", params={"project": "q"})
    assert page.status_code == 200
    causes = {r["id"]: r["cause"] for r in page.json()["runs"]}
    assert causes["oddrun"] == "code_error"  # exit 1 and nothing more specific to go on
    assert causes["lostrun"] is None and causes["stoppedrun"] is None  # nothing recorded; stopped on purpose
