"""Filters nested or joined past what the parser and SQLite can hold are refused with a clear
400 (the CLI: a message, no traceback), never a 500 from a RecursionError or SQLite's
"parser stack overflow" / "Expression tree is too large"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flightlog.query.parser import MAX_DEPTH, MAX_TERMS
from tests.helpers import child_env, cli
from tests.server.conftest import error_of

DEEP = {
    "500 parentheses": "(" * 500 + "status = 'failed'" + ")" * 500,  # RecursionError in the parser
    "1000 nots": "not " * 1000 + "exit_code = 1",
    "40 nested ands": "(status = 'failed' and " * 40 + "exit_code = 1" + ")" * 40,  # SQLite: parser stack overflow
    "1100 ors": " or ".join(["id=1"] * 1100),  # SQLite: Expression tree is too large
}


@pytest.mark.parametrize("text", DEEP.values(), ids=DEEP.keys())
def test_the_api_refuses_a_filter_too_deep_with_a_400(make_app: Any, text: str) -> None:
    app = make_app()
    response = app.get("/api/v1/runs", params={"filter": text})
    assert response.status_code == 400, response.text
    err = error_of(response)
    assert err["code"] == "invalid_filter"
    assert "too deeply" in err["message"] or "too many conditions" in err["message"]


def test_filters_at_the_limits_still_work(make_app: Any) -> None:
    app = make_app()
    deepest = "(status = 'failed' and " * MAX_DEPTH + "exit_code = 1" + ")" * MAX_DEPTH
    widest = " or ".join(["exit_code = 1"] * MAX_TERMS)
    for text in (deepest, widest, "not " * MAX_DEPTH + "exit_code = 1"):
        response = app.get("/api/v1/runs", params={"filter": text})
        assert response.status_code == 200, response.text


def test_the_cli_says_why_without_a_traceback(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = cli(home, "runs", "ls", "--filter", DEEP["500 parentheses"], check=False, env=child_env(home))
    assert proc.returncode != 0
    assert "too deeply" in proc.stderr
    assert "Traceback" not in proc.stderr
