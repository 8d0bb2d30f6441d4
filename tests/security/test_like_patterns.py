"""MLflow's ``LIKE`` filters are matched in linear time and off the event loop (issue 31, item 1):
``name LIKE '%%%…(60 of them)…!'`` once froze the server for good, because the pattern became a
backtracking regular expression matched on the event loop. Now any reader's search answers at
once, and ``/healthz`` keeps answering while such searches are sent again and again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from flightlog.query.like import like_match
from tests.security.probe import ServerSubprocess, assert_healthy_under_attack, server_subprocess
from tests.server.conftest import auth

EVIL = "%" * 60 + "!"
NAME = "a-long-experiment-name-with-no-bang-at-the-end-" + "x" * 40


@pytest.fixture
def mlflow_server(tmp_path: Path, server_store: str) -> Iterator[tuple[ServerSubprocess, httpx.Client]]:
    """A real `flightlog server --auth` process with an experiment, a logged model and a registered
    model whose names the evil pattern must be matched against; a reader's client of its MLflow routes."""
    with server_subprocess(tmp_path / "srv", server_store) as server:
        writer = auth(server.token("writer"))
        with httpx.Client(base_url=server.url + "/api/2.0/mlflow", timeout=30, headers=writer) as http:
            made = http.post("/experiments/create", json={"name": NAME})
            assert made.status_code == 200, made.text
            exp = made.json()["experiment_id"]
            assert http.post("/logged-models", json={"experiment_id": exp, "name": NAME}).status_code == 200
            assert http.post("/registered-models/create", json={"name": NAME}).status_code == 200
        with httpx.Client(
            base_url=server.url + "/api/2.0/mlflow", timeout=30, headers=auth(server.token("reader"))
        ) as reader:
            yield server, reader


SEARCHES = [
    ("POST", "/experiments/search", {"json": {"filter": f"name LIKE '{EVIL}'"}}, "experiments"),
    ("POST", "/experiments/search", {"json": {"filter": f"name ILIKE '{EVIL}'"}}, "experiments"),
    ("POST", "/logged-models/search", {"json": {"filter": f"name LIKE '{EVIL}'"}}, "models"),
    ("GET", "/registered-models/search", {"params": {"filter": f"name ILIKE '{EVIL}'"}}, "registered_models"),
    ("GET", "/model-versions/search", {"params": {"filter": f"name LIKE '{EVIL}'"}}, "model_versions"),
]


def test_an_evil_like_pattern_is_answered_at_once_and_matches_nothing(
    mlflow_server: tuple[ServerSubprocess, httpx.Client],
) -> None:
    _, reader = mlflow_server
    for method, path, kwargs, key in SEARCHES:
        response = reader.request(method, path, timeout=10, **kwargs)  # type: ignore[arg-type]
        assert response.status_code == 200, (path, response.text)
        assert response.json().get(key, []) == [], (path, response.text)
    # the same patterns still find what they should
    found = reader.post("/experiments/search", json={"filter": "name LIKE '%" + "%" * 30 + "x'"})
    assert [e["name"] for e in found.json()["experiments"]] == [NAME]
    found = reader.get("/registered-models/search", params={"filter": "name ILIKE 'A-LONG%X'"})
    assert [m["name"] for m in found.json()["registered_models"]] == [NAME]


def test_healthz_answers_within_100_ms_while_evil_searches_run(
    mlflow_server: tuple[ServerSubprocess, httpx.Client],
) -> None:
    server, reader = mlflow_server
    token = reader.headers["Authorization"]
    sent = iter(range(1 << 30))

    def attack() -> int:
        method, path, kwargs, _ = SEARCHES[next(sent) % len(SEARCHES)]
        return httpx.request(
            method,
            f"{server.url}/api/2.0/mlflow{path}",
            headers={"Authorization": token},
            timeout=10,
            **kwargs,  # type: ignore[arg-type]
        ).status_code

    window = assert_healthy_under_attack(server.url, attack)
    assert window.attacks and all(a == 200 for a in window.attacks), window.attacks[:5]


@pytest.mark.parametrize(
    ("text", "pattern", "fold", "expected"),
    [
        ("fraud-v2", "fraud%", False, True),
        ("Fraud-v2", "fraud%", False, False),
        ("Fraud-v2", "fraud%", True, True),
        ("a\nb", "a_b", False, True),
        ("a.b", "a_b", False, True),
        ("a(b", "a(b", False, True),
        ("x" * 5000, EVIL, False, False),
        ("x" * 5000 + "!", EVIL, False, True),
        ("50%", "50\\%", False, False),  # no escape character unless one is named
        ("50%", "50\\%", False, False),
        ("50%", "50!%", False, False),
        ("caf\u00e9", "caf_", False, True),
        ("\udc80x", "_x", False, True),  # a lone surrogate is one character, never an error
    ],
)
def test_like_semantics(text: str, pattern: str, fold: bool, expected: bool) -> None:
    assert like_match(text, pattern, fold=fold) is expected


def test_like_with_an_escape_character() -> None:
    assert like_match("50%", "50\\%", escape="\\")
    assert not like_match("500", "50\\%", escape="\\")
    assert like_match("a_b", "a\\_b", escape="\\") and not like_match("axb", "a\\_b", escape="\\")
