"""DNS rebinding: a server without tokens (``flightlog ui``, ``flightlog server`` without
--auth) answers only requests that name it by a loopback name or an --allowed-hosts name, so
a web page whose own name was made to resolve to 127.0.0.1 cannot read or delete runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.server.conftest import ServerProcess, error_of
from tests.server.journal import Writer

RUN = "c" * 32


@pytest.mark.parametrize(("method", "path"), [("GET", "/api/v1/runs"), ("DELETE", f"/api/v1/runs/{RUN}"), ("GET", "/")])
def test_without_auth_a_foreign_host_is_refused(make_app: Any, method: str, path: str) -> None:
    app = make_app(auth=False)
    app.app.state.store.ingest([Writer(RUN).run("vision")])
    response = app.request(method, path, headers={"Host": "evil.example"})
    assert response.status_code == 400, response.text[:300]
    err = error_of(response)
    assert err["code"] == "host_not_allowed" and "--allowed-hosts" in err["message"]
    assert app.app.state.store.run_projects([RUN]) == {RUN: "vision"}  # nothing deleted


@pytest.mark.parametrize("host", ["127.0.0.1:8765", "localhost:8765", "[::1]:8765", "LOCALHOST", "ui.localhost:8765"])
def test_without_auth_loopback_names_work(make_app: Any, host: str) -> None:
    app = make_app(auth=False)
    assert app.get("/api/v1/runs", headers={"Host": host}).status_code == 200


def test_allowed_hosts_names_more(make_app: Any) -> None:
    app = make_app(auth=False, allowed_hosts=("flightlog.lan", "*.corp.example"))
    assert app.get("/api/v1/runs", headers={"Host": "flightlog.lan:8765"}).status_code == 200
    assert app.get("/api/v1/runs", headers={"Host": "ml.corp.example"}).status_code == 200
    assert app.get("/api/v1/runs", headers={"Host": "corp.example.evil"}).status_code == 400
    assert app.get("/api/v1/runs", headers={"Host": "127.0.0.1"}).status_code == 400  # the list replaces the default


def test_with_auth_any_host_reaches_the_token_check(make_app: Any) -> None:
    app = make_app(auth=True)
    assert app.get("/api/v1/runs", headers={"Host": "flightlog.example.com"}).status_code == 401


def test_the_environment_variable_and_the_server_option(
    server_process: Callable[..., ServerProcess], monkeypatch: pytest.MonkeyPatch, make_app: Any
) -> None:
    monkeypatch.setenv("FLIGHTLOG_ALLOWED_HOSTS", "box.lan")
    assert make_app(auth=False).get("/api/v1/runs", headers={"Host": "box.lan"}).status_code == 200
    monkeypatch.delenv("FLIGHTLOG_ALLOWED_HOSTS")
    proc = server_process("--allowed-hosts", "flightlog.lan")
    url = proc.start()
    try:
        assert httpx.get(url + "/api/v1/runs", headers={"Host": "flightlog.lan"}, timeout=30).status_code == 200
        refused = httpx.get(url + "/api/v1/runs", headers={"Host": "evil.example"}, timeout=30)
        assert refused.status_code == 400 and error_of(refused)["code"] == "host_not_allowed"
    finally:
        proc.stop()


def test_a_forwarded_host_from_loopback_does_not_lift_the_host_check(
    server_process: Callable[..., ServerProcess],
) -> None:
    """A rebinding page in a browser on this machine connects from 127.0.0.1, which `flightlog
    server` trusts as a proxy by default; its own Host still gives it away, whatever it forwards."""
    proc = server_process()  # no --auth: the default --trusted-proxies 127.0.0.1 applies
    url = proc.start()
    try:
        rebinding = {"Host": "evil.example", "X-Forwarded-Host": "localhost"}
        for method in ("GET", "DELETE"):
            refused = httpx.request(
                method,
                url + ("/api/v1/runs" if method == "GET" else f"/api/v1/runs/{RUN}"),
                headers=rebinding,
                timeout=30,
            )
            assert refused.status_code == 400, (method, refused.text)
            err = error_of(refused)
            assert err["code"] == "host_not_allowed" and err["details"]["host"] == "evil.example"
        # a proxy on this host that forwards a name the server answers for still works
        proxied = httpx.get(
            url + "/api/v1/runs",
            headers={"Host": f"127.0.0.1:{proc.port}", "X-Forwarded-Host": "localhost"},
            timeout=30,
        )
        assert proxied.status_code == 200, proxied.text
        forwarded_foreign = httpx.get(
            url + "/api/v1/runs",
            headers={"Host": f"127.0.0.1:{proc.port}", "X-Forwarded-Host": "evil.example"},
            timeout=30,
        )
        assert forwarded_foreign.status_code == 400
    finally:
        proc.stop()
