"""Log grep runs on RE2: a pattern that makes a backtracking engine explode (``(a+)+$``) answers
at once, on the server and in the CLI's local store, and patterns RE2 cannot run (backreferences,
lookaround) are refused with a 400 that names the feature."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from flightlog.server.testing import RunningServer
from flightlog.store.sqlite.store import SqliteStore
from tests.helpers import child_env, cli
from tests.server.conftest import auth, error_of
from tests.server.journal import Writer

RUN = "a1b2c3d4e5f60718293a4b5c6d7e8f90"
EVIL = "(a+)+$"  # with `re`, each of these lines costs 2**32 steps: minutes
LINES = ["a" * 32 + "!" for _ in range(4)] + ["all good"]


def _records() -> list[dict]:
    w = Writer(RUN)
    return [w.run("vision", name="grep"), w.logs([(1.0 + i, "stdout", "info", line) for i, line in enumerate(LINES)])]


def test_a_catastrophic_pattern_does_not_freeze_the_server(live: RunningServer) -> None:
    live.app.state.store.ingest(_records())
    headers = auth(live.token("reader"))
    answers: dict[str, httpx.Response | BaseException] = {}

    def grep() -> None:
        try:
            answers["grep"] = httpx.get(
                f"{live.url}/api/v1/runs/{RUN}/logs", params={"grep": EVIL}, headers=headers, timeout=60
            )
        except BaseException as exc:  # noqa: BLE001 - the assertion below reports it
            answers["grep"] = exc

    worker = threading.Thread(target=grep)
    worker.start()
    health = httpx.get(f"{live.url}/healthz", timeout=30)  # meanwhile, the server still answers
    worker.join(timeout=90)
    assert health.status_code == 200
    response = answers.get("grep")
    assert isinstance(response, httpx.Response), f"the grep request did not answer: {response!r}"
    assert response.status_code == 200, response.text
    assert response.json()["events"] == []
    matched = httpx.get(f"{live.url}/api/v1/runs/{RUN}/logs", params={"grep": "^ALL"}, headers=headers, timeout=30)
    assert [e["message"] for e in matched.json()["events"]] == ["all good"]  # still case-insensitive


@pytest.mark.parametrize(
    ("pattern", "feature"),
    [(r"(a)\1", "backreference"), ("(?=a)b", "lookahead"), ("(?<!a)b", "lookbehind"), ("a++", "possessive")],
)
def test_patterns_re2_cannot_run_are_refused_naming_the_feature(
    live: RunningServer, pattern: str, feature: str
) -> None:
    live.app.state.store.ingest(_records())
    response = httpx.get(
        f"{live.url}/api/v1/runs/{RUN}/logs", params={"grep": pattern}, headers=auth(live.token("reader")), timeout=30
    )
    assert response.status_code == 400, response.text
    err = error_of(response)
    assert feature in err["message"] and err["details"]["unsupported"]


def test_the_cli_greps_its_local_store_in_linear_time(tmp_path: Path) -> None:
    home = tmp_path / "home"
    store = SqliteStore(home / "flightlog.db")
    store.ingest(_records())
    store.close()
    env = child_env(home)
    found = cli(home, "logs", RUN, "--grep", EVIL, "--format", "json", env=env, timeout=60)
    assert found.stdout.strip() in ("", "[]")
    refused = cli(home, "logs", RUN, "--grep", r"(a)\1", env=env, check=False)
    assert refused.returncode != 0
    assert "backreference" in refused.stderr
    assert "Traceback" not in refused.stderr and "re2.cc" not in refused.stderr
