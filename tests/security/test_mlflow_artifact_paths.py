"""One path rule for every route that names an artifact (issue 31, item 5): MLflow's artifact
proxy once stored ``..\\..\\evil.txt``, ``C:\\Windows\\evil.txt``, names with escape codes, and
``..`` or ``.`` through a multipart upload — which an MLflow client on Windows then writes
outside its folder. Now the proxy refuses them as the native API does (400, naming the rule)
and records nothing; on a real server over SQLite and over PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest

from flightlog.server.testing import RunningServer

BAD_NAMES = [
    "..\\..\\evil.txt",
    "C:\\Windows\\evil.txt",
    "C:evil.txt",
    "sub\\..\\..\\evil.txt",
    "a\x1b[31mred.txt",
    "a\x9b31mred.txt",  # the 8-bit escape (CSI)
    "evil\u202etxt.exe",
    "trailing\x7f",
]


@pytest.fixture
def proxy(live: RunningServer) -> Iterator[tuple[httpx.Client, str, str]]:
    """An admin's client of the live server, an MLflow run's artifact location and its run id."""
    with httpx.Client(base_url=live.url, headers={"Authorization": f"Bearer {live.token()}"}, timeout=30) as http:
        exp = http.post("/api/2.0/mlflow/experiments/create", json={"name": "paths"}).json()["experiment_id"]
        run = http.post("/api/2.0/mlflow/runs/create", json={"experiment_id": exp}).json()["run"]["info"]["run_id"]
        yield http, f"/api/2.0/mlflow-artifacts/artifacts/{exp}/{run}/artifacts", run


def _refused(response: httpx.Response) -> None:
    assert response.status_code == 400, (response.request.url, response.text)
    body = response.json()
    assert body["error_code"] == "INVALID_PARAMETER_VALUE" and "artifact path" in body["message"], body


@pytest.mark.parametrize("name", BAD_NAMES)
def test_the_proxy_refuses_a_bad_path(live: RunningServer, proxy: tuple[httpx.Client, str, str], name: str) -> None:
    http, where, run = proxy
    _refused(http.put(f"{where}/{quote(name, safe='')}", content=b"evil"))
    _refused(http.put(f"{where}/models/{quote(name, safe='')}", content=b"evil"))
    mpu = where.replace("/artifacts/", "/mpu/create/", 1)
    _refused(http.post(f"{mpu}/{quote(name, safe='')}", json={"path": "/home/me/model.bin", "num_parts": 1}))
    assert live.app.state.store.artifacts(run) == []


# a multipart upload names the client's local file: its name (after the last / or \\) lands in the run
@pytest.mark.parametrize("name", ["..", ".", "/home/me/..", "C:\\Users\\me\\..", "C:", "x/a\x1b[2Jb.bin", "dir/"])
def test_multipart_names_keep_the_rule(live: RunningServer, proxy: tuple[httpx.Client, str, str], name: str) -> None:
    http, where, run = proxy
    mpu = where.replace("/artifacts/", "/mpu/create/", 1)
    _refused(http.post(mpu, json={"path": name, "num_parts": 1}))
    _refused(http.post(mpu.replace("/create/", "/complete/"), json={"path": name, "upload_id": "x", "parts": []}))
    assert live.app.state.store.artifacts(run) == []


def test_good_paths_still_upload(live: RunningServer, proxy: tuple[httpx.Client, str, str]) -> None:
    http, where, run = proxy
    assert http.put(f"{where}/model/weights.bin", content=b"w").status_code == 200
    assert http.put(f"{where}/{quote('données é.txt')}", content=b"d").status_code == 200
    for local in ("big.bin", "/home/me/big.bin", "C:\\Users\\me\\big.bin"):  # the client's local path
        made = http.post(where.replace("/artifacts/", "/mpu/create/", 1), json={"path": local, "num_parts": 1})
        assert made.status_code == 200, made.text
    assert sorted(a.path for a in live.app.state.store.artifacts(run)) == ["données é.txt", "model/weights.bin"]
