"""The web UI's session: the cookie holds a session id (never the API token), lasts hours not
weeks, and dies on the server when its holder signs out or its token is revoked. Proxy
headers (X-Forwarded-Host/-Proto/-For) count only from a trusted proxy."""

from __future__ import annotations

from typing import Any

import httpx

from flightlog.server.auth import COOKIE
from flightlog.server.tokens import create_token, revoke_token
from tests.server.conftest import error_of

SITE = "http://127.0.0.1:8765"


def _sign_in(app: Any, secret: str, **headers: str) -> tuple[str, str]:
    """Sign in; returns (the cookie's value, the whole Set-Cookie header)."""
    response = app.request("POST", "/api/v1/session", json={"token": secret}, headers=headers)
    assert response.status_code == 200, response.text
    header = response.headers["set-cookie"]
    return header.split(";")[0].split("=", 1)[1], header


def _with_cookie(value: str, **headers: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE}={value}", **headers}


def test_the_cookie_holds_a_session_not_the_token(make_app: Any) -> None:
    app = make_app(auth=True)
    secret = create_token(app.app.state.store, "writer").secret
    value, header = _sign_in(app, secret)
    # the random part after `flt_<id>_` (base64url: it may hold "_" itself, so split twice only)
    assert secret not in value and secret.split("_", 2)[2] not in header
    max_age = int(header.lower().split("max-age=")[1].split(";")[0])
    assert 0 < max_age <= 24 * 3600
    assert app.get("/api/v1/whoami", headers=_with_cookie(value)).json()["via"] == "cookie"
    # the raw token in the cookie (what older servers set) is not a session
    assert app.get("/api/v1/whoami", headers=_with_cookie(secret)).status_code == 401


def test_signing_out_revokes_the_session_on_the_server(make_app: Any) -> None:
    app = make_app(auth=True)
    secret = create_token(app.app.state.store, "writer").secret
    value, _ = _sign_in(app, secret)
    other, _ = _sign_in(app, secret)  # another browser of the same person
    out = app.request("DELETE", "/api/v1/session", headers=_with_cookie(value))
    assert out.status_code == 200
    replay = app.get("/api/v1/whoami", headers=_with_cookie(value))  # a copy of the cookie, kept from before
    assert replay.status_code == 401 and "sign in again" in error_of(replay)["message"]
    assert app.get("/api/v1/whoami", headers=_with_cookie(other)).status_code == 200
    assert (
        app.get("/api/v1/whoami", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    )  # the token lives on


def test_revoking_the_token_ends_its_sessions(make_app: Any) -> None:
    app = make_app(auth=True)
    new = create_token(app.app.state.store, "reader")
    value, _ = _sign_in(app, new.secret)
    revoke_token(app.app.state.store, new.id)
    assert app.get("/api/v1/whoami", headers=_with_cookie(value)).status_code == 401


def test_a_sessions_lifetime_is_enforced_by_the_server(make_app: Any) -> None:
    app = make_app(auth=True, session_hours=-1.0)  # already over when made: the cookie outlives it
    value, _ = _sign_in(app, create_token(app.app.state.store, "reader").secret)
    assert app.get("/api/v1/whoami", headers=_with_cookie(value)).status_code == 401


def test_x_forwarded_host_from_an_untrusted_client_is_ignored(make_app: Any) -> None:
    app = make_app(auth=True, client=("203.0.113.9", 40000))
    value, _ = _sign_in(app, create_token(app.app.state.store, "writer").secret)
    forged = app.request(
        "POST",
        "/api/v1/runs/x/notes",
        json={"text": "hi"},
        headers=_with_cookie(value, Origin="http://evil.example", **{"X-Forwarded-Host": "evil.example"}),
    )
    assert forged.status_code == 403, forged.text
    # nor does its X-Forwarded-Proto make the cookie Secure
    _, header = _sign_in(app, create_token(app.app.state.store, "reader").secret, **{"X-Forwarded-Proto": "https"})
    assert "secure" not in header.lower()


def test_a_trusted_proxy_forwards_host_scheme_and_client(make_app: Any) -> None:
    app = make_app(auth=True, trusted_proxies=("10.0.0.0/8",), client=("10.1.2.3", 40000))
    proxied = {
        "X-Forwarded-Host": "flightlog.example.com",
        "X-Forwarded-Proto": "https",
        "X-Forwarded-For": "198.51.100.7",
    }
    value, header = _sign_in(app, create_token(app.app.state.store, "writer").secret, **proxied)
    assert "secure" in header.lower()
    same_site = app.request(
        "POST",
        "/api/v1/runs/x/notes",
        json={"text": "hi"},
        headers=_with_cookie(value, Origin="https://flightlog.example.com", **proxied),
    )
    assert same_site.status_code == 404, same_site.text  # past the origin check: the run does not exist
    cross = app.request(
        "POST",
        "/api/v1/runs/x/notes",
        json={"text": "hi"},
        headers=_with_cookie(value, Origin="https://evil.example", **proxied),
    )
    assert cross.status_code == 403


def test_the_cookie_is_limited_to_the_root_path(server_process: Any) -> None:
    """Under `--root-path /flightlog` (a proxy serving it at https://host/flightlog/) the cookie
    goes to /flightlog only, not to every application of the host."""
    from flightlog.server.config import ServerConfig
    from flightlog.store.registry import open_store

    proc = server_process("--auth", "--root-path", "/flightlog")
    store = open_store(ServerConfig.for_home(proc.home).store_uri)
    secret = create_token(store, "reader").secret  # type: ignore[arg-type]
    store.close()
    url = proc.start()
    try:
        signed = httpx.post(url.removesuffix("/flightlog") + "/api/v1/session", json={"token": secret}, timeout=30)
        assert signed.status_code == 200, signed.text
        attributes = [a.strip().lower() for a in signed.headers["set-cookie"].split(";")]
        assert "path=/flightlog" in attributes, attributes
        out = httpx.delete(
            url.removesuffix("/flightlog") + "/api/v1/session",
            timeout=30,
            headers={"Cookie": f"{COOKIE}={signed.cookies[COOKIE]}"},
        )
        assert "path=/flightlog" in [a.strip().lower() for a in out.headers["set-cookie"].split(";")]
    finally:
        proc.stop()
