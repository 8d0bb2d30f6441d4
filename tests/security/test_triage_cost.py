"""What a reader's ``GET /triage`` costs is bounded, whoever wrote the failures (issue 31, item
8): over 2,000 crafted failures it once cost 64 s of server CPU, because the message masking
(and the traceback parsing and classification it relies on) was superlinear in a message. Now
masking and parsing are linear (RE2), the classifier reads bounded text and classifies at most
a budget of new failures a report, and a report is remembered by the store's change position;
``/healthz`` answers within 100 ms meanwhile. Real servers over SQLite and over PostgreSQL."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog.diagnose.tracebacks import parse_chain
from flightlog.server.testing import RunningServer, serve_in_thread
from flightlog.triage.budget import CLASSIFY_BUDGET
from flightlog.triage.signature import normalize_message
from tests.security.probe import ServerSubprocess, assert_healthy_under_attack, server_subprocess
from tests.server.conftest import auth

FAILURES = 2000


def crafted(count: int, *, start: int = 0) -> list[dict[str, Any]]:
    """Failed runs whose messages differ in a word (so none is classified like another) and go on
    with 5,000 characters shaped to make a backtracking engine work in the square of them."""
    now, out = time.time(), []
    for i in range(start, start + count):
        rnd = random.Random(i)
        word = "".join(rnd.choice("bcdfghjklmnpqrstvwxz") for _ in range(14))
        message = f"{word} " + ("_.A" * 2000)[:5000]
        traceback = (
            "Traceback (most recent call last):\n"
            f'  File "/work/{word}/train.py", line 7, in main\n    step()\n'
            f"ValueError: {message}\n"
        )
        out.append(
            {"r": f"{i:032x}", "w": "attacker", "s": 1, "t": now - 60, "k": "run", "project": "vision",
             "created": now - 60, "started": now - 59, "status": "failed", "end_reason": "exception",
             "exit_code": 1, "ended": now - 30, "failure": {"traceback": traceback, "last_lines": [message] * 5}}
        )  # fmt: skip
    return out


def test_masking_and_parsing_are_linear_in_the_message() -> None:
    """The crafted shapes are masked and parsed the same as before, only in one pass: the masked
    message keeps its words and masks what varies."""
    for unit in ("_-1", "_.A", "a-", "1a-", "'\""):
        text = (unit * 1000)[:1000]
        assert len(normalize_message("boom " + text)) <= 240
        chain = parse_chain(f'Traceback (most recent call last):\n  File "x.py", line 1, in f\nValueError: {text}\n')
        assert chain and chain[-1].type == "ValueError"
    assert normalize_message("expected float64 got int8-shard3 at 10.0.0.1:8080") == (
        "expected float64 got int8-<id> at <addr>"
    )


@pytest.fixture
def triage_server(tmp_path: Path, server_store: str) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path / "srv", auth=True, store_uri=server_store) as running:
        running.app.state.store.ingest(crafted(FAILURES))
        yield running


def test_a_report_classifies_a_budget_of_new_failures_and_is_remembered(triage_server: RunningServer) -> None:
    reader = auth(triage_server.token("reader"))
    with httpx.Client(base_url=triage_server.url + "/api/v1", headers=reader, timeout=300) as api:
        first = api.get("/triage", params={"project": "vision"}).json()
        assert first["failures"] == FAILURES and first["truncated"] is False
        # 2,000 causes that all differ: one report classifies its budget, the rest wait for the next
        assert first["unclassified"] == FAILURES - CLASSIFY_BUDGET
        assert sum(g["category"] == "unclassified" for g in first["groups"]) == FAILURES - CLASSIFY_BUDGET
        # asked again with nothing changed: the remembered report (made at the same instant)
        assert api.get("/triage", params={"project": "vision"}).json() == first
        # another window (not remembered) classifies the next budget's worth, never the same again
        again = api.get("/triage", params={"project": "vision", "since": "2d"}).json()
        assert again["unclassified"] == FAILURES - 2 * CLASSIFY_BUDGET
        # a change in the store: the report is made again (the new failure is in it)
        triage_server.app.state.store.ingest(crafted(1, start=FAILURES))
        after = api.get("/triage", params={"project": "vision"}).json()
        assert after["failures"] == FAILURES + 1 and after["until"] != first["until"]


@pytest.fixture
def triage_process(tmp_path: Path, server_store: str) -> Iterator[ServerSubprocess]:
    with server_subprocess(tmp_path / "srv", server_store) as server:
        server.store.ingest(crafted(FAILURES))
        yield server


def test_healthz_answers_within_100_ms_while_triage_runs(triage_process: ServerSubprocess) -> None:
    token = triage_process.token("reader")
    windows = iter(range(1, 1 << 30))

    def attack() -> int:  # a new window each time: never the remembered report
        return httpx.get(
            f"{triage_process.url}/api/v1/triage",
            params={"since": f"{next(windows)}d"},
            headers=auth(token),
            timeout=300,
        ).status_code

    window = assert_healthy_under_attack(triage_process.url, attack, seconds=3.0)
    assert window.attacks and all(a == 200 for a in window.attacks), window.attacks[:5]


def test_a_remembered_report_answers_for_a_minute_from_when_it_was_asked() -> None:
    """Not by clock minutes: a report that took most of a minute to make on a busy server still
    answers the same question asked right after it came out (it used to be made again when the
    second question fell in the next minute)."""
    from flightlog.triage.budget import ReportCache

    made: list[float] = []
    cache = ReportCache()

    def make_at(now: float) -> dict[str, float]:
        made.append(now)
        return {"made": now}

    first = cache.get(("p",), "pos1", lambda: make_at(119.0), now=119.0)  # asked at second 59 of a minute
    assert cache.get(("p",), "pos1", lambda: make_at(170.0), now=170.0) is first  # the next clock minute
    assert cache.get(("p",), "pos2", lambda: make_at(171.0), now=171.0)["made"] == 171.0  # the store changed
    assert cache.get(("p",), "pos1", lambda: make_at(179.0), now=179.0)["made"] == 179.0  # a minute old
    assert made == [119.0, 171.0, 179.0]
