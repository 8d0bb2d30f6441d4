"""Bounds on what a call may record (issue 18, item 24): params nested past 32 levels and bad
metric names (5 MB long; NUL, LF, ESC) are refused at the call with a ValueError that says
what and where, and the server refuses the same records at ingest, keeping the rest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest

import flightlog
from tests.server.journal import Writer


def _nested(depth: int, leaf: Any = 1) -> dict[str, Any]:
    value: Any = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def test_params_nested_thousands_deep_are_refused_with_the_key_path(home: Path) -> None:
    with pytest.raises(ValueError, match=r"param 'cfg(\.a)+' is nested more than 32 levels deep") as caught:
        flightlog.init(project="p", params={"cfg": _nested(5000)}, resources=False)
    assert not isinstance(caught.value, RecursionError)
    lists: Any = 1
    for _ in range(5000):
        lists = [lists]
    run = flightlog.init(project="p", params={"ok": _nested(30)}, resources=False)
    try:
        with pytest.raises(ValueError, match="'deep' holds lists nested more than 32 levels deep"):
            run.log_params(deep=lists)
        run.log_params(fine=[[1, 2], [3]])
    finally:
        run.finish()
    client = flightlog.Client(home=home)
    try:
        params = client.run(run.id).params
    finally:
        client.close()
    assert params["ok" + ".a" * 29 + ".a"] == 1 and params["fine"] == [[1, 2], [3]]
    assert "deep" not in params


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("x" * (5 << 20), "has 5242880 characters; at most 250 are allowed"),
        ("loss\x00", "control character '\\\\x00'"),
        ("loss\nfake line", "control character '\\\\n'"),
        ("\x1b[2Jloss", "control character '\\\\x1b'"),
        ("", "is empty"),
    ],
)
def test_a_bad_metric_name_is_refused_at_the_call(home: Path, name: str, problem: str) -> None:
    run = flightlog.init(project="p", resources=False)
    try:
        with pytest.raises(ValueError, match=problem):
            run.log({"acc": 0.5, name: 1.0}, step=1)
        run.log({"acc": 0.75, "x" * 250: 1.0, "val/top-1 (%) é": 2.0, "mlflow.style_key-1.0 /a": 3.0}, step=2)
    finally:
        run.finish()
    client = flightlog.Client(home=home)
    try:
        metrics = client.metrics(run.id)
    finally:
        client.close()
    assert sorted(metrics) == sorted(["acc", "x" * 250, "val/top-1 (%) é", "mlflow.style_key-1.0 /a"])
    assert metrics["acc"].count == 1  # the refused call recorded nothing


def test_the_server_refuses_bad_metric_names_at_ingest_and_keeps_the_rest(api: httpx.Client) -> None:
    w = Writer("c" * 32)
    records = [
        w.run("p", name="names"),
        w.metrics({"loss\x1b[31m": ([1], [0.5])}),
        w.metrics({"y" * 251: ([1], [0.5])}),
        w.metrics({"loss": ([1], [0.25])}),
    ]
    response = api.post(
        "/ingest", content=msgspec.msgpack.encode({"records": records}), headers={"Content-Type": "application/msgpack"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["applied"] == 2, body
    assert any("control character" in reason for reason in body["skipped"]), body
    assert any("at most 250" in reason for reason in body["skipped"]), body
    metrics = api.get(f"/runs/{'c' * 32}/metrics").json()["metrics"]
    assert [m["name"] for m in metrics] == ["loss"]
