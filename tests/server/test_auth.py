"""Who may do what: tokens (hashed, roles, project scope, revocation), the session cookie,
`flightlog token`, and the loopback rule of a server without --auth."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog.errors import Forbidden, Unauthorized
from flightlog.server.testing import RunningServer
from flightlog.transport import HttpStore
from tests.helpers import child_env, cli, cli_json
from tests.server.conftest import FLIGHTLOG, auth, error_of
from tests.server.journal import Writer


def _seed(live: RunningServer, token: Callable[..., str], tmp_path: Path) -> tuple[str, str]:
    store = HttpStore(live.url, token=token("admin"), home=tmp_path / "seed")
    vision, audio = Writer("visionrun"), Writer("audiorun")
    store.ingest([vision.run("vision"), audio.run("audio")])
    store.close()
    return vision.run_id, audio.run_id


def test_missing_wrong_and_revoked_tokens_get_401(
    live: RunningServer, token: Callable[..., str], tmp_path: Path
) -> None:
    _seed(live, token, tmp_path)
    base = live.url + "/api/v1"
    none = httpx.get(base + "/runs")
    assert none.status_code == 401 and none.headers["www-authenticate"].startswith("Bearer")
    assert "token" in error_of(none)["message"]
    wrong = httpx.get(base + "/runs", headers=auth("flt_000000000000_not-a-real-secret"))
    assert wrong.status_code == 401 and error_of(wrong)["code"] == "unauthorized"
    assert httpx.get(base + "/runs", headers={"Authorization": "Basic abc"}).status_code == 401
    reader = token("reader")
    assert httpx.get(base + "/runs", headers=auth(reader)).status_code == 200
    admin = httpx.Client(base_url=base, headers=auth(token("admin")))
    token_id = reader.split("_")[1]
    assert admin.delete(f"/tokens/{token_id}").status_code == 200
    revoked = httpx.get(base + "/runs", headers=auth(reader))
    assert revoked.status_code == 401 and "revoked" in error_of(revoked)["message"]
    admin.close()
    # public: health, metrics, the API description
    for path in ("/healthz", "/metrics", "/api/v1/openapi.json"):
        assert httpx.get(live.url + path).status_code == 200


def test_reader_cannot_write_and_writer_cannot_administer(
    live: RunningServer, token: Callable[..., str], tmp_path: Path
) -> None:
    vision, _ = _seed(live, token, tmp_path)
    base = live.url + "/api/v1"
    reader = auth(token("reader"))
    for method, path, body in (
        ("POST", f"/runs/{vision}/notes", {"text": "x"}),
        ("PATCH", f"/runs/{vision}", {"status": "failed"}),
        ("DELETE", f"/runs/{vision}", None),
        ("POST", "/tokens", {"role": "admin"}),
    ):
        r = httpx.request(method, base + path, json=body, headers=reader)
        assert r.status_code == 403 and "reader" in error_of(r)["message"], (method, path)
    with pytest.raises(Forbidden, match="reader"):
        HttpStore(live.url, token=token("reader"), home=tmp_path / "r").ingest([Writer("x").run("vision")])
    writer = auth(token("writer"))
    assert httpx.post(base + f"/runs/{vision}/notes", json={"text": "ok"}, headers=writer).status_code == 201
    assert httpx.get(base + "/tokens", headers=writer).status_code == 403
    made = httpx.post(base + "/tokens", json={"role": "writer", "project": "vision"}, headers=auth(token("admin")))
    assert made.status_code == 201 and made.json()["token"].startswith("flt_")
    assert httpx.post(base + "/tokens", json={"role": "god"}, headers=auth(token("admin"))).status_code == 400


def test_a_project_token_cannot_see_or_write_another_project(
    live: RunningServer, token: Callable[..., str], tmp_path: Path
) -> None:
    vision, audio = _seed(live, token, tmp_path)
    base = live.url + "/api/v1"
    scoped = auth(token("writer", "vision"))
    assert [r["id"] for r in httpx.get(base + "/runs", headers=scoped).json()["runs"]] == [vision]
    assert [p["name"] for p in httpx.get(base + "/projects", headers=scoped).json()["projects"]] == ["vision"]
    for path in (f"/runs/{audio}", f"/runs/{audio}/logs", f"/runs/{audio}/metrics", f"/runs/{audio}/stream"):
        r = httpx.get(base + path, headers=scoped)
        assert r.status_code == 404 and "vision" in error_of(r)["message"], path  # as if it did not exist (issue 18)
    other = httpx.get(base + "/runs", params={"project": "audio"}, headers=scoped)
    assert other.status_code == 403
    store = HttpStore(live.url, token=token("writer", "vision"), home=tmp_path / "s")
    with pytest.raises(Forbidden, match="audio"):
        store.ingest([Writer(audio, "w9").record("tags", data={"x": "1"})])
    with pytest.raises(Forbidden, match="vision"):
        store.ingest([Writer("newrun").run("audio")])  # nor create a run elsewhere
    assert store.ingest([Writer("newvision").run("vision")]).applied == 1
    store.close()


def test_tokens_are_stored_hashed_and_managed_by_the_cli(tmp_path: Path, clean_env: Path) -> None:
    home = tmp_path / "srv"
    made = cli_json(
        clean_env, "token", "create", "--role", "writer", "--project", "vision", "--name", "ci", "--home", str(home)
    )
    assert made["role"] == "writer" and made["project"] == "vision" and made["token"].startswith(f"flt_{made['id']}_")
    text = cli(clean_env, "token", "create", "--role", "reader", "--home", str(home))
    assert text.stdout.strip().startswith("flt_") and "only time" in text.stderr
    listed = cli_json(clean_env, "token", "ls", "--home", str(home))
    assert [(t["role"], t["project"], t["revoked"]) for t in listed] == [
        ("writer", "vision", None),
        ("reader", None, None),
    ]
    assert made["token"] not in json.dumps(listed)
    with sqlite3.connect(home / "flightlog.db") as db:
        stored = db.execute("SELECT hash FROM tokens WHERE id=?", (made["id"],)).fetchone()[0]
        dump = "\n".join(db.iterdump())
    assert stored == hashlib.sha256(made["token"].encode()).hexdigest() and made["token"] not in dump
    assert cli_json(clean_env, "token", "revoke", made["id"], "--home", str(home)) == {"revoked": made["id"]}
    assert cli_json(clean_env, "token", "ls", "--home", str(home))[0]["revoked"] is not None
    missing = cli(clean_env, "token", "revoke", "0123456789ab", "--home", str(home), check=False)
    assert missing.returncode == 1 and "no token" in missing.stderr
    bad = cli(clean_env, "token", "create", "--role", "root", "--home", str(home), check=False)
    assert bad.returncode != 0 and "reader" in bad.stderr


def test_session_cookie_signs_in_the_web_ui(live: RunningServer, token: Callable[..., str], tmp_path: Path) -> None:
    vision, _ = _seed(live, token, tmp_path)
    base = live.url + "/api/v1"
    bad = httpx.post(base + "/session", json={"token": "flt_nope"})
    assert bad.status_code == 401
    with httpx.Client(base_url=base) as browser:
        signed = browser.post("/session", json={"token": token("writer", "vision")})
        assert signed.status_code == 200 and signed.json()["project"] == "vision"
        cookie = signed.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
        assert browser.get("/whoami").json()["via"] == "cookie"
        assert browser.get(f"/runs/{vision}").status_code == 200
        host = live.url.split("//")[1]
        same = browser.post(f"/runs/{vision}/notes", json={"text": "from the ui"}, headers={"Origin": f"http://{host}"})
        assert same.status_code == 201
        forged = browser.post(f"/runs/{vision}/notes", json={"text": "csrf"}, headers={"Origin": "http://evil.example"})
        assert forged.status_code == 403
        assert browser.delete("/session").status_code == 200
        assert browser.get("/whoami").status_code == 401


def test_without_auth_only_loopback_unless_insecure(tmp_path: Path, clean_env: Path) -> None:
    import subprocess

    proc = subprocess.run(
        [FLIGHTLOG, "server", "--host", "0.0.0.0", "--port", "0", "--home", str(tmp_path / "s")],
        env=child_env(clean_env),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1 and "--auth" in proc.stderr and "--insecure" in proc.stderr


def test_sdk_with_a_bad_token_keeps_training_and_tells(
    server: RunningServer, clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers import run_script

    monkeypatch.setenv("FLIGHTLOG_TOKEN", "flt_000000000000_wrong")
    proc = run_script(
        clean_env,
        """
        import flightlog
        run = flightlog.init(project="p", resources=False)
        for i in range(100):
            run.log({"x": float(i)})
        run.finish()
        print("trained")
        """,
        env={**child_env(clean_env), "FLIGHTLOG_FLUSH_INTERVAL": "0.1"},
        timeout=120,
    )
    assert proc.stdout.strip() == "trained"
    assert "token is not valid" in proc.stderr and "flightlog sync" in proc.stderr
    with pytest.raises(Unauthorized):
        HttpStore(server.url, token="flt_000000000000_wrong", home=clean_env).get_run("x")


def test_requests_that_arrive_while_a_token_is_looked_up_share_that_one_lookup(tmp_path: Path) -> None:
    """Issue #32: under a few hundred requests a second, each request that came while the
    remembered row was being looked up again made its own lookup (a worker thread and a store
    round trip each); now they wait for the one under way, and all get its row."""
    import asyncio

    from flightlog.server.auth import _token_row
    from flightlog.server.tokens import create_token, hash_token
    from flightlog.store.sqlite.store import SqliteStore

    store = SqliteStore(tmp_path / "flightlog.db")
    made = create_token(store, "writer", None, "load")
    lookups: list[str] = []
    real_lookup = store.token_by_hash

    def counted(digest: str) -> dict[str, Any] | None:
        lookups.append(digest)
        return real_lookup(digest)

    store.token_by_hash = counted  # type: ignore[method-assign]

    async def twenty_at_once() -> list[dict[str, Any] | None]:
        digest = hash_token(made.secret)
        return await asyncio.gather(*(_token_row(store, digest, time.time()) for _ in range(20)))

    try:
        rows = asyncio.run(twenty_at_once())
    finally:
        store.close()
    assert len(lookups) == 1
    assert [row["role"] if row else None for row in rows] == ["writer"] * 20
