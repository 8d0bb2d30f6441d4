"""Artifacts over HTTP: streamed uploads with size and hash checked, downloads that cannot run
script, paths that cannot leave their run, and the SDK's artifacts reaching the server."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

import flightlog
from flightlog.server.testing import RunningServer
from flightlog.transport import HttpStore
from tests.server.conftest import auth, error_of
from tests.server.journal import Writer


@pytest.fixture
def run_id(live: RunningServer, token: Callable[..., str], tmp_path: Path) -> str:
    store = HttpStore(live.url, token=token("admin"), home=tmp_path / "seed")
    w = Writer("artrun")
    store.ingest([w.run("vision")])
    store.close()
    return w.run_id


@pytest.fixture
def writer(live: RunningServer, token: Callable[..., str]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live.url + "/api/v1", headers=auth(token("writer")), timeout=60) as client:
        yield client


def test_html_and_svg_artifacts_are_attachments_in_a_sandbox(writer: httpx.Client, run_id: str) -> None:
    for name, body in (
        ("report.html", b"<script>alert(document.cookie)</script>"),
        ("plots/loss.svg", b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>'),
    ):
        put = writer.put(f"/runs/{run_id}/artifacts/{name}", content=body, params={"kind": "report"})
        assert put.status_code == 201 and put.json()["sha256"] == hashlib.sha256(body).hexdigest()
        got = writer.get(f"/runs/{run_id}/artifacts/{name}")
        assert got.status_code == 200 and got.content == body
        assert got.headers["content-type"] == "application/octet-stream"
        assert got.headers["content-disposition"].startswith("attachment;")
        assert (
            "sandbox" in got.headers["content-security-policy"]
            and "default-src 'none'" in got.headers["content-security-policy"]
        )
        assert got.headers["x-content-type-options"] == "nosniff"
    listed = writer.get(f"/runs/{run_id}/artifacts").json()["artifacts"]
    assert [a["path"] for a in listed] == ["report.html", "plots/loss.svg"]


@pytest.mark.parametrize(
    "path",
    [
        "../../etc/passwd",
        "a/../../b",
        "./x",
        "a//b",
        "%2e%2e/%2e%2e/etc/passwd",
        "..%2Fsecret",
        "..\\windows",
        "/etc/passwd",
        "%2Fetc%2Fpasswd",
        "C:/boot.ini",
        "x%00y",
        "%2e/x",
    ],
)
def test_artifact_paths_cannot_leave_their_run(
    live: RunningServer, token: Callable[..., str], run_id: str, path: str
) -> None:
    import http.client
    import json

    host, port = live.url.split("//")[1].rsplit(":", 1)
    for method in ("PUT", "GET"):
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        # sent as written: no client-side normalization of the dots
        conn.request(
            method,
            f"/api/v1/runs/{run_id}/artifacts/{path}",
            body=b"x" if method == "PUT" else None,
            headers={"Authorization": f"Bearer {token('writer')}"},
        )
        response = conn.getresponse()
        body = json.loads(response.read())
        conn.close()
        assert response.status in (400, 404), (method, path, response.status)
        assert body["error"]["message"]
        if response.status == 400:
            assert "artifact path" in body["error"]["message"]
    with httpx.Client(base_url=live.url + "/api/v1", headers=auth(token("reader"))) as api:
        assert api.get(f"/runs/{run_id}/artifacts").json()["artifacts"] == []


def test_ingested_artifact_records_with_escaping_paths_are_refused(
    live: RunningServer, token: Callable[..., str], run_id: str, tmp_path: Path
) -> None:
    store = HttpStore(live.url, token=token("writer"), home=tmp_path / "c")
    w = Writer(run_id, "w2")
    result = store.ingest(
        [
            w.record("artifact", role="output", path="../../evil", uri=None),
            w.record("artifact", role="output", path="fine/model.bin", uri=None),
        ]
    )
    assert result.applied == 1 and "cannot leave their run" in result.skipped[0]
    store.close()


def test_uploads_are_streamed_and_checked(writer: httpx.Client, live: RunningServer, run_id: str) -> None:
    blob = os.urandom(5 << 20)
    digest = hashlib.sha256(blob).hexdigest()

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(blob), 64 << 10):
            yield blob[i : i + (64 << 10)]

    assert writer.head(f"/blobs/sha256/{digest}").status_code == 404
    put = writer.put(f"/blobs/sha256/{digest}", content=chunks())  # chunked transfer encoding
    assert put.status_code == 201 and put.json()["size"] == len(blob)
    assert writer.head(f"/blobs/sha256/{digest}").headers["content-length"] == str(len(blob))
    assert writer.put(f"/blobs/sha256/{digest}", content=b"").status_code == 200  # already there
    wrong = writer.put(f"/blobs/sha256/{'0' * 64}", content=b"not that")
    assert wrong.status_code == 400 and error_of(wrong)["code"] == "digest_mismatch"
    short = writer.put(f"/blobs/sha256/{'1' * 64}", content=b"abc", headers={"X-Content-SHA256": "nope"})
    assert short.status_code == 400
    too_big = writer.put(f"/runs/{run_id}/artifacts/huge.bin", content=iter([b"\0" * (1 << 20)] * 9))
    assert too_big.status_code == 413 and error_of(too_big)["details"]["limit"] == 8 << 20
    assert (
        _declared_too_big(live.url, writer.headers["authorization"], f"/api/v1/runs/{run_id}/artifacts/huge.bin") == 413
    )
    checked = writer.put(f"/runs/{run_id}/artifacts/model.bin", content=blob, headers={"X-Content-SHA256": "f" * 64})
    assert checked.status_code == 400 and error_of(checked)["code"] == "digest_mismatch"
    assert list((live.home / "artifacts" / "tmp").iterdir()) == [], "nothing half-written is left behind"
    with writer.stream("GET", f"/blobs/sha256/{digest}") as got:
        assert hashlib.sha256(b"".join(got.iter_bytes())).hexdigest() == digest
    assert writer.get(f"/blobs/sha256/{'a' * 64}").status_code == 404
    assert writer.get("/blobs/sha256/not-hex").status_code == 400


def test_sdk_artifacts_reach_the_server_and_a_project_token_sees_only_its_own(
    server: RunningServer, tmp_path: Path, clean_env: Path
) -> None:
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights" * 1000)
    run = flightlog.init(project="vision", resources=False)
    run.log_artifact(model, kind="model")
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    (folder / "sub").mkdir()
    (folder / "sub" / "b.txt").write_text("b")
    run.log_artifact(folder)
    run.finish()
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    assert (server.home / "artifacts" / "sha256" / digest[:2] / digest[2:]).read_bytes() == model.read_bytes()
    client = flightlog.Client(home=tmp_path / "elsewhere")  # a reader on another machine: no local copy
    out = client.download_artifact(run.id, "ckpt/sub/b.txt", tmp_path / "b.txt")
    assert out.read_text() == "b"
    client.close()
    other = httpx.get(f"{server.url}/api/v1/blobs/sha256/{digest}", headers=auth(server.token("reader", "audio")))
    assert other.status_code == 404
    mine = httpx.get(f"{server.url}/api/v1/blobs/sha256/{digest}", headers=auth(server.token("reader", "vision")))
    assert mine.status_code == 200 and mine.content == model.read_bytes()


def _declared_too_big(url: str, authorization: str, path: str) -> int:
    """A body announced at 9 MiB is refused before a byte of it is read."""
    import http.client

    host, port = url.split("//")[1].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.putrequest("PUT", path)
    conn.putheader("Authorization", authorization)
    conn.putheader("Content-Length", str(9 << 20))
    conn.endheaders()
    status = conn.getresponse().status
    conn.close()
    return status
