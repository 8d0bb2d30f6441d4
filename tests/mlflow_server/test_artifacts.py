"""MLflow's artifact proxy against a real `flightlog server` (auth on), driven by the real MLflow
client (the pinned `mlflow` in .bench-venv) in a subprocess: files up and down, a directory, a
file above the multipart threshold, listings and deletion; the flightlog side sees each file as
an artifact of its run, with its digest."""

from __future__ import annotations

import hashlib
import json
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import flightlog
from flightlog.mlflow_server.api.artifacts import artifact_uri
from flightlog.server.testing import RunningServer, serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
# each script starts the real MLflow client: seconds alone, more on two busy cores
pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RunningServer]:
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_TOKEN", "FLIGHTLOG_STORE", "FLIGHTLOG_RUN_ID", "FLIGHTLOG_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "off")
    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "client"))
    with serve_in_thread(tmp_path / "srv", auth=True) as running:
        monkeypatch.setenv("FLIGHTLOG_URL", running.url)
        monkeypatch.setenv("FLIGHTLOG_TOKEN", running.token("admin", name="ci-admin"))
        yield running


def mlflow_script(python: Path, server: RunningServer, home: Path, code: str, *args: str, **env: str) -> Any:
    """Run ``code`` with the real MLflow client pointed at ``server``; returns the JSON it prints last."""
    proc = subprocess.run(
        [str(python), "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),  # MLflow writes its config under ~/.config
            "MLFLOW_TRACKING_URI": server.url,
            "MLFLOW_TRACKING_TOKEN": server.token("writer", name="mlflow-client"),
            "MLFLOW_ENABLE_ASYNC_LOGGING": "false",
            "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
            **env,
        },
    )
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-6000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


_ROUND_TRIP = """
import json, os, sys
from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

uri, work = sys.argv[1], sys.argv[2]
repo = get_artifact_repository(uri)
repo.log_artifact(os.path.join(work, "notes.txt"))
repo.log_artifacts(os.path.join(work, "model"), "model")
repo.log_artifact(os.path.join(work, "big.bin"), "weights")
root = sorted((f.path, f.is_dir, f.file_size) for f in repo.list_artifacts())
inner = sorted((f.path, f.is_dir, f.file_size) for f in repo.list_artifacts("model"))
deep = sorted((f.path, f.is_dir) for f in repo.list_artifacts("model/sub"))
os.makedirs(os.path.join(work, "down"))
down = repo.download_artifacts("", os.path.join(work, "down"))
repo.delete_artifacts("notes.txt")
after = sorted(f.path for f in repo.list_artifacts())
print(json.dumps({"root": root, "inner": inner, "deep": deep, "down": down, "after": after}))
"""


def test_artifacts_up_down_multipart_and_delete(mlflow_python: Path, server: RunningServer, tmp_path: Path) -> None:
    run = flightlog.init(project="default", name="mlflow-artifacts")
    run.finish()
    work = tmp_path / "work"
    (work / "model" / "sub").mkdir(parents=True)
    (work / "notes.txt").write_text("hello from mlflow\n")
    (work / "model" / "MLmodel").write_text("flavors: {}\n")
    (work / "model" / "sub" / "w.npy").write_bytes(b"\x93NUMPY" + bytes(range(200)))
    big = bytes(i % 251 for i in range(700_000))  # above the 256 KiB threshold: three parts of 256 KiB
    (work / "big.bin").write_bytes(big)

    out = mlflow_script(
        mlflow_python,
        server,
        tmp_path,
        _ROUND_TRIP,
        artifact_uri(run.id, "0"),
        str(work),
        MLFLOW_ENABLE_PROXY_MULTIPART_UPLOAD="true",
        MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE=str(256 * 1024),
        MLFLOW_MULTIPART_UPLOAD_CHUNK_SIZE=str(256 * 1024),
    )
    assert out["root"] == [["model", True, None], ["notes.txt", False, 18], ["weights", True, None]]
    assert out["inner"] == [["model/MLmodel", False, 12], ["model/sub", True, None]]
    assert out["deep"] == [["model/sub/w.npy", False]]
    down = Path(out["down"])
    assert (down / "weights" / "big.bin").read_bytes() == big
    assert (down / "model" / "sub" / "w.npy").read_bytes() == (work / "model" / "sub" / "w.npy").read_bytes()
    assert out["after"] == ["model", "weights"]

    # the flightlog side: each file an artifact of the run, content-addressed
    with flightlog.Client() as client:
        arts = {a.path: a for a in client.artifacts(run.id)}
    assert arts["weights/big.bin"].sha256 == hashlib.sha256(big).hexdigest()
    assert arts["weights/big.bin"].size == len(big)
    assert arts["weights/big.bin"].meta == {"multipart_parts": 3}  # it went up in parts
    assert arts["model/MLmodel"].sha256 == hashlib.sha256(b"flavors: {}\n").hexdigest()
    assert arts["notes.txt"].kind == "deleted"  # a tombstone: the history keeps what was there


def test_bad_artifact_requests_get_mlflow_errors(server: RunningServer) -> None:
    run = flightlog.init(project="default")
    run.finish()
    base = server.url + "/api/2.0/mlflow-artifacts"
    writer = {"Authorization": f"Bearer {server.token('writer')}"}
    reader = {"Authorization": f"Bearer {server.token('reader')}"}
    with httpx.Client(timeout=30) as http:
        cases = [
            (
                http.get(f"{base}/artifacts/0/{run.id}/artifacts/nope.txt", headers=reader),
                404,
                "RESOURCE_DOES_NOT_EXIST",
            ),
            (http.get(f"{base}/artifacts/0/no-such-run/artifacts/x", headers=reader), 404, "RESOURCE_DOES_NOT_EXIST"),
            (
                http.put(f"{base}/artifacts/0/{run.id}/artifacts/x.txt", content=b"x", headers=reader),
                403,
                "PERMISSION_DENIED",
            ),
            (http.put(f"{base}/artifacts/0/{run.id}/artifacts/x.txt", content=b"x"), 401, "UNAUTHENTICATED"),
            (http.get(f"{base}/artifacts/somewhere/else", headers=reader), 404, "RESOURCE_DOES_NOT_EXIST"),
            (
                http.get(f"{base}/artifacts", params={"path": f"0/{run.id}/artifacts/../x"}, headers=reader),
                400,
                "INVALID_PARAMETER_VALUE",
            ),
            (http.put(f"{base}/mpu/parts/made-up/1", content=b"x"), 404, "RESOURCE_DOES_NOT_EXIST"),
            (
                http.post(
                    f"{base}/mpu/complete/0/{run.id}/artifacts", json={"path": "f", "upload_id": "zz"}, headers=writer
                ),
                404,
                "RESOURCE_DOES_NOT_EXIST",
            ),
            (
                http.post(
                    f"{base}/mpu/create/0/{run.id}/artifacts", json={"path": "f", "num_parts": 0}, headers=writer
                ),
                400,
                "INVALID_PARAMETER_VALUE",
            ),
        ]
        for response, status, code in cases:
            assert response.status_code == status, (response.request.url, response.text)
            assert response.json()["error_code"] == code, response.text

        # a multipart upload missing a part cannot complete, and an aborted one is gone
        made = http.post(
            f"{base}/mpu/create/0/{run.id}/artifacts", json={"path": "/tmp/f.bin", "num_parts": 2}, headers=writer
        )
        assert made.status_code == 200, made.text
        upload = made.json()
        first = http.put(upload["credentials"][0]["url"], content=b"part one")
        assert first.status_code == 200 and first.headers["etag"].strip('"') == hashlib.sha256(b"part one").hexdigest()
        body = {"path": "/tmp/f.bin", "upload_id": upload["upload_id"], "parts": []}
        short = http.post(f"{base}/mpu/complete/0/{run.id}/artifacts", json=body, headers=writer)
        assert short.status_code == 400 and "never received" in short.json()["message"]
        assert http.post(f"{base}/mpu/abort/0/{run.id}/artifacts", json=body, headers=writer).status_code == 200
        assert http.put(upload["credentials"][1]["url"], content=b"late").status_code == 404
