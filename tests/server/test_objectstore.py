"""Artifacts in S3-compatible object storage (FLIGHTLOG_ARTIFACTS=s3://bucket/prefix), against a
real S3 server on 127.0.0.1 (moto's server mode, a separate process): content-addressed keys,
multipart uploads, hash checks both ways, clear errors for a missing bucket or denied access,
and no half-sent upload ever visible under a digest."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog.errors import StoreUnavailable
from flightlog.server.testing import serve_in_thread
from flightlog.store.objectstore import MULTIPART_THRESHOLD
from flightlog.transport import HttpStore
from tests.helpers import child_env, cli, run_script
from tests.server.conftest import auth, error_of
from tests.server.journal import Writer

FLIGHTLOG_ENV = [name for name in os.environ if name.startswith("FLIGHTLOG_")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class S3Server:
    """moto's S3 server as a real process; ``enforce_auth`` makes it check credentials (all unknown)."""

    def __init__(self, tmp: Path, *, enforce_auth: bool = False) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, **({"INITIAL_NO_AUTH_ACTION_COUNT": "0"} if enforce_auth else {})}
        self.log = open(tmp / f"moto-{self.port}.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(self.url, timeout=2)
                return
            except httpx.HTTPError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the S3 test server did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.log.close()


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    server = S3Server(tmp_path_factory.mktemp("s3"))
    yield server
    server.stop()


@pytest.fixture
def bucket(s3: S3Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """A fresh bucket; the AWS_ variables point boto3 (here and in child processes) at the server."""
    import boto3

    for name in FLIGHTLOG_ENV:
        monkeypatch.delenv(name, raising=False)
    for name, value in (
        ("AWS_ENDPOINT_URL", s3.url),
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    client = boto3.client("s3")
    name = f"b{time.monotonic_ns()}"
    client.create_bucket(Bucket=name)
    yield client, name


def _keys(client: Any, name: str) -> dict[str, Any]:
    objects = client.list_objects_v2(Bucket=name).get("Contents", [])
    return {o["Key"]: o for o in objects}


def test_artifacts_round_trip_through_the_bucket_with_hash_checks(bucket: Any, tmp_path: Path) -> None:
    client, name = bucket
    small = tmp_path / "config.json"
    small.write_bytes(b'{"lr": 0.1}')
    big = tmp_path / "model.bin"
    big.write_bytes(os.urandom(MULTIPART_THRESHOLD + (3 << 20)))  # over the threshold: a multipart upload
    home = tmp_path / "home"
    env = child_env(home, FLIGHTLOG_ARTIFACTS=f"s3://{name}/team/runs")
    out = run_script(
        home,
        f"""
        import flightlog
        run = flightlog.init(project="s3", resources=False)
        run.log_artifact({str(small)!r})
        run.log_artifact({str(big)!r}, kind="model")
        run.finish()
        print(run.id)
    """,
        env=env,
    ).stdout.strip()
    keys = _keys(client, name)
    for path in (small, big):
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        obj = keys[f"team/runs/sha256/{sha[:2]}/{sha[2:]}"]
        assert obj["Size"] == path.stat().st_size
    big_sha = hashlib.sha256(big.read_bytes()).hexdigest()
    assert "-" in keys[f"team/runs/sha256/{big_sha[:2]}/{big_sha[2:]}"]["ETag"], "sent as a multipart upload"
    assert not (home / "artifacts" / "sha256").exists(), "nothing kept on local disk but the bucket"

    got = tmp_path / "got.bin"
    cli(home, "artifacts", out, "get", "model.bin", "-o", str(got), env=env)
    assert got.read_bytes() == big.read_bytes()

    # the bucket's copy is damaged: a reader with an empty cache refuses it
    small_sha = hashlib.sha256(small.read_bytes()).hexdigest()
    client.put_object(Bucket=name, Key=f"team/runs/sha256/{small_sha[:2]}/{small_sha[2:]}", Body=b"tampered")
    other = tmp_path / "reader"
    bad = cli(
        other,
        "artifacts",
        out,
        "get",
        "config.json",
        "-o",
        str(tmp_path / "c.json"),
        check=False,
        env={**env, "FLIGHTLOG_HOME": str(other), "FLIGHTLOG_STORE": f"sqlite:///{home / 'flightlog.db'}"},
    )
    assert bad.returncode != 0 and "damaged" in bad.stderr and not (tmp_path / "c.json").exists()


def test_a_missing_bucket_is_a_clear_error_for_the_sdk_the_cli_and_the_server(bucket: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = child_env(home, FLIGHTLOG_ARTIFACTS="s3://no-such-bucket/x")
    proc = run_script(
        home,
        f"""
        import flightlog
        run = flightlog.init(project="s3", resources=False)
        (__import__("pathlib").Path({str(tmp_path)!r}) / "f.txt").write_text("x")
        print(run.log_artifact({str(tmp_path / "f.txt")!r})["uri"])
        run.finish()
    """,
        env=env,
    )
    assert proc.stdout.strip() == "None", "recorded without content; the workload goes on"
    assert "bucket 'no-such-bucket' does not exist" in proc.stderr
    with (
        pytest.raises(StoreUnavailable, match="bucket 'no-such-bucket' does not exist: create it"),
        serve_in_thread(tmp_path / "srv", artifacts="s3://no-such-bucket/x"),
    ):
        pass


def test_denied_access_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    closed = S3Server(tmp_path, enforce_auth=True)
    try:
        for name, value in (
            ("AWS_ENDPOINT_URL", closed.url),
            ("AWS_ACCESS_KEY_ID", "unknown"),
            ("AWS_SECRET_ACCESS_KEY", "wrong"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
        ):
            monkeypatch.setenv(name, value)
        with (
            pytest.raises(StoreUnavailable, match="access to the bucket 'team' is denied: check the credentials"),
            serve_in_thread(tmp_path / "srv", artifacts="s3://team/flightlog"),
        ):
            pass
    finally:
        closed.stop()


def test_server_uploads_land_in_the_bucket_and_a_cut_upload_never_does(bucket: Any, tmp_path: Path) -> None:
    client, name = bucket
    with (
        serve_in_thread(tmp_path / "srv", auth=True, artifacts=f"s3://{name}/srv") as server,
        httpx.Client(base_url=server.url + "/api/v1", headers=auth(server.token("admin")), timeout=60) as api,
    ):
        blob = os.urandom(1 << 20)
        digest = hashlib.sha256(blob).hexdigest()
        assert api.head(f"/blobs/sha256/{digest}").status_code == 404
        assert api.put(f"/blobs/sha256/{digest}", content=blob).status_code == 201
        assert api.head(f"/blobs/sha256/{digest}").headers["content-length"] == str(len(blob))
        assert set(_keys(client, name)) == {f"srv/sha256/{digest[:2]}/{digest[2:]}"}
        assert api.get(f"/blobs/sha256/{digest}").content == blob

        wrong = api.put(f"/blobs/sha256/{'0' * 64}", content=b"not that")
        assert wrong.status_code == 400 and error_of(wrong)["code"] == "digest_mismatch"
        store = HttpStore(server.url, token=server.token("admin"), home=tmp_path / "seed")
        w = Writer("cut")
        store.ingest([w.run("vision")])
        store.close()
        host, port = server.url.split("//")[1].rsplit(":", 1)
        uploads = server.home / "artifacts" / "tmp"
        with socket.create_connection((host, int(port))) as sock:  # declares 1 MiB, sends 64 KiB, hangs up
            sock.sendall(
                f"PUT /api/v1/runs/{w.run_id}/artifacts/cut.bin HTTP/1.1\r\nHost: x\r\n"
                f"Authorization: {api.headers['authorization']}\r\nContent-Length: {1 << 20}\r\n\r\n".encode()
                + b"x" * (64 << 10)
            )
            wait_for(lambda: list(uploads.glob("upload-*")), "the server to start receiving")
        wait_for(lambda: not list(uploads.glob("upload-*")), "the server to drop the cut upload")
        assert set(_keys(client, name)) == {f"srv/sha256/{digest[:2]}/{digest[2:]}"}, "nothing half-sent is visible"
        assert [a.path for a in server.app.state.store.artifacts(w.run_id)] == []


def wait_for(check: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_gc_removes_only_unreferenced_objects_from_the_bucket(bucket: Any, tmp_path: Path) -> None:
    from flightlog.store.artifacts import open_artifact_store

    client, name = bucket
    store = open_artifact_store(tmp_path / "home", f"s3://{name}/gc")
    digests = []
    for i, body in enumerate((b"kept", b"dropped!")):
        path = tmp_path / f"f{i}"
        path.write_bytes(body)
        digests.append(hashlib.sha256(body).hexdigest())
        store.put_verified(path, digests[-1])
    kept, dropped = digests
    assert store.remove_unreferenced({kept}, dry_run=True) == (1, len(b"dropped!"))
    assert len(_keys(client, name)) == 2, "a dry run removes nothing"
    assert store.remove_unreferenced({kept}) == (1, len(b"dropped!"))
    assert set(_keys(client, name)) == {f"gc/sha256/{kept[:2]}/{kept[2:]}"}
