"""The middleware's ``skip_paths``: probes pass through unrecorded by default, a user's own list
replaces the default (exact paths and ``/prefix/*``), and a list that cannot be paths is refused
where it is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from flightlog import Client, serving
from tests.helpers import run_script


def test_a_users_skip_list_replaces_the_default(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run_script(
        home,
        """
        import asyncio
        from flightlog import serving

        async def app(scope, receive, send):
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"{}"})

        async def receive():
            return {"type": "http.request", "body": b"{}"}

        async def send(message):
            pass

        replica = serving.attach(version="2", endpoint="fraud-skip", project="fraud", sample=1.0)
        wrapped = serving.ServingMiddleware(app, skip_paths=["/ping", "/static/*"])
        paths = ["/score", "/ping", "/static/app.js", "/static/css/a.css", "/healthz", "/statics"]
        for i, path in enumerate(paths):
            scope = {"type": "http", "path": path, "headers": [(b"x-request-id", f"r{i}".encode())]}
            asyncio.run(wrapped(scope, receive, send))
    """,
    )
    with Client(home) as client:
        recorded = {r["request_id"] for r in serving.predictions(client, "fraud-skip")}
        assert sum(a["requests"] for a in serving.aggregates(client, "fraud-skip")) == 3
    assert recorded == {"r0", "r4", "r5"}  # /score, /healthz (the default is replaced), /statics (not /static/)


@pytest.mark.parametrize(
    ("skip", "error", "message"),
    [
        ("/healthz", TypeError, "write skip_paths=['/healthz']"),
        (["healthz"], ValueError, "'healthz' is not a request path"),
        ([3], ValueError, "3 is not a request path"),
    ],
)
def test_a_skip_list_that_cannot_be_paths_is_refused(skip: object, error: type[Exception], message: str) -> None:
    async def app(scope: object, receive: object, send: object) -> None:
        raise AssertionError("never called")

    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        serving.ServingMiddleware(app, skip_paths=skip)  # type: ignore[arg-type]
