"""Content is scoped by project: a writer token of project A cannot learn that the server holds
project B's content (``HEAD``), download it, or attach it to an artifact of A by naming its
digest. Uploading the content itself (hash checked) is what lets A use it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import httpx

from flightlog.server.testing import RunningServer
from flightlog.transport import HttpStore
from flightlog.transport.wire import MEDIA_TYPE, encode_batches
from tests.server.conftest import auth, error_of
from tests.server.journal import Writer

SECRET = b"project B's model weights"
DIGEST = hashlib.sha256(SECRET).hexdigest()
RUN_A, RUN_B = "a" * 32, "b" * 32


def _setup(live: RunningServer, token: Callable[..., str], tmp_path: Any) -> httpx.Client:
    """Project B holds SECRET (uploaded and referenced by its run); returns a writer client of project A."""
    admin = HttpStore(live.url, token=token("admin"), home=tmp_path / "seed")
    admin.ingest([Writer(RUN_A).run("a"), Writer(RUN_B).run("b")])
    admin.close()
    with httpx.Client(base_url=live.url + "/api/v1", headers=auth(token("writer", "b")), timeout=30) as b:
        assert b.put(f"/runs/{RUN_B}/artifacts/model.bin", content=SECRET).status_code == 201
    return httpx.Client(base_url=live.url + "/api/v1", headers=auth(token("writer", "a")), timeout=30)


def _ingest_artifact(client: httpx.Client, path: str, role: str = "output") -> dict[str, Any]:
    """An artifact record of run A naming the digest, posted as it is (no upload first, as an attacker would)."""
    record = Writer(RUN_A, writer=f"attacker-{path}").record(
        "artifact",
        role=role,
        kind="file",
        path=path,
        source=None,
        size=len(SECRET),
        sha256=DIGEST,
        uri=f"cas:sha256/{DIGEST}",
        step=None,
        attempt=1,
    )
    [(_, body)] = encode_batches([record])
    response = client.post("/ingest", content=body, headers={"Content-Type": MEDIA_TYPE, "Content-Encoding": "gzip"})
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_another_projects_content_is_invisible_to_a_scoped_writer(
    live: RunningServer, token: Callable[..., str], tmp_path: Any
) -> None:
    with _setup(live, token, tmp_path) as a:
        assert a.head(f"/blobs/sha256/{DIGEST}").status_code == 404
        assert a.get(f"/blobs/sha256/{DIGEST}").status_code == 404
        # naming the digest in an artifact record of A is refused, record by record
        result = _ingest_artifact(a, "stolen.bin")
        assert result["applied"] == 0 and "upload it first" in result["skipped"][0]
        assert a.get(f"/runs/{RUN_A}/artifacts/stolen.bin").status_code == 404
        assert a.get(f"/runs/{RUN_A}/artifacts").json()["artifacts"] == []


def test_uploading_the_content_itself_lets_the_project_use_it(
    live: RunningServer, token: Callable[..., str], tmp_path: Any
) -> None:
    with _setup(live, token, tmp_path) as a:
        wrong = a.put(f"/blobs/sha256/{DIGEST}", content=b"a guess")
        assert wrong.status_code == 400 and error_of(wrong)["code"] == "digest_mismatch"
        assert a.head(f"/blobs/sha256/{DIGEST}").status_code == 404
        put = a.put(f"/blobs/sha256/{DIGEST}", content=SECRET)  # A shows it holds the content
        assert put.status_code == 200 and put.json()["created"] is False
        assert a.head(f"/blobs/sha256/{DIGEST}").status_code == 200
        result = _ingest_artifact(a, "mine.bin")
        assert result["applied"] == 1, result["skipped"]
        assert a.get(f"/runs/{RUN_A}/artifacts/mine.bin").content == SECRET


def test_unscoped_tokens_and_the_sdk_flow_are_unchanged(
    live: RunningServer, token: Callable[..., str], tmp_path: Any
) -> None:
    with (
        _setup(live, token, tmp_path),
        httpx.Client(base_url=live.url + "/api/v1", headers=auth(token("writer")), timeout=30) as w,
    ):
        assert w.head(f"/blobs/sha256/{DIGEST}").status_code == 200
        assert w.put(f"/blobs/sha256/{DIGEST}", content=b"").status_code == 200  # already there: nothing to send


def test_a_scoped_token_s_lineage_names_no_run_of_another_project(
    live: RunningServer, token: Callable[..., str], tmp_path: Any
) -> None:
    """Run A reads the content that run B (project b) wrote: A's lineage, and the lineage of a
    model version registered from A, name B's run to an admin only, never to a token of A."""
    with _setup(live, token, tmp_path) as a:
        assert a.put(f"/blobs/sha256/{DIGEST}", content=SECRET).status_code == 200  # A holds the content too
        assert _ingest_artifact(a, "weights.bin", role="input")["applied"] == 1
        assert a.put(f"/runs/{RUN_A}/artifacts/model.pkl", content=b"a model").status_code == 201
        created = a.post("/models/churn/versions", json={"run": RUN_A, "path": "model.pkl"})
        assert created.status_code == 201, created.text
        as_a = {
            "run": a.get(f"/runs/{RUN_A}/lineage").json()["inputs"],
            "version": a.get("/models/churn/versions/1", params={"lineage": "true"}).json()["inputs"],
        }
    with httpx.Client(base_url=live.url + "/api/v1", headers=auth(token("admin")), timeout=30) as admin:
        as_admin = {
            "run": admin.get(f"/runs/{RUN_A}/lineage").json()["inputs"],
            "version": admin.get("/models/churn/versions/1", params={"lineage": "true", "project": "a"}).json()[
                "inputs"
            ],
        }
    for where in ("run", "version"):
        assert [i["produced_by"] for i in as_admin[where]] == [[RUN_B]], (where, as_admin)
        assert [i["produced_by"] for i in as_a[where]] == [[]], (where, as_a)
