"""Webhook notifiers (issue 18, item 17): a redirect is never followed (urllib would re-send to
any address it names, as a GET), and the target's answer body never reaches the alert history
that every reader can see: a failure keeps its status and the standard reason only."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from flightlog.alerts.notifiers import deliver
from flightlog.alerts.notifiers.base import RetryPolicy
from flightlog.alerts.notifiers.slack import SlackNotifier
from flightlog.alerts.notifiers.webhook import WebhookNotifier
from flightlog.alerts.payload import Notification


class Target:
    """A real HTTP server on loopback answering every request with ``status``, ``location``, ``body``."""

    def __init__(self, status: int = 200, location: str | None = None, body: bytes = b"") -> None:
        self.status, self.location, self.body = status, location, body
        self.seen: list[tuple[str, str]] = []
        target = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length", "0") or 0)
                self.rfile.read(length)
                target.seen.append((self.command, self.path))
                self.send_response(target.status)
                if target.location:
                    self.send_header("Location", target.location)
                self.send_header("Content-Length", str(len(target.body)))
                self.end_headers()
                self.wfile.write(target.body)

            do_GET = do_POST = _answer  # noqa: N815 - the http.server API

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()  # shutdown() waits a poll

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def targets() -> Iterator[list[Target]]:
    made: list[Target] = []
    yield made
    for t in made:
        t.close()


def _notification() -> Notification:
    return Notification(reason="new", group_key="g", group_labels={}, alerts=[])


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_a_failure_and_is_not_followed(targets: list[Target], status: int) -> None:
    internal = Target()
    redirector = Target(status, location=internal.url.replace("/hook", "/admin/delete-everything"))
    targets += [internal, redirector]
    for notifier in (
        WebhookNotifier("hook", redirector.url, retry=RetryPolicy(retries=2, delay=0.01)),
        SlackNotifier("chat", redirector.url, retry=RetryPolicy(retries=2, delay=0.01)),
    ):
        outcome = deliver(notifier, _notification(), sleep=lambda s: None)
        assert not outcome.ok and outcome.attempts == 1, outcome  # permanent: no retry
        assert f"HTTP {status}" in str(outcome.error) and "redirects are not followed" in str(outcome.error)
        assert "delete-everything" not in str(outcome.error)
    assert internal.seen == [], "the redirect's target was called"
    assert redirector.seen == [("POST", "/hook"), ("POST", "/hook")]


@pytest.mark.parametrize(("status", "retried"), [(400, False), (500, True)])
def test_the_targets_answer_body_is_not_recorded(targets: list[Target], status: int, retried: bool) -> None:
    failing = Target(status, body=b"<h1>db error</h1> postgres://admin:hunter2@db.internal:5432 token=ghp_abcdef")
    targets.append(failing)
    notifier = WebhookNotifier("hook", failing.url, retry=RetryPolicy(retries=1, delay=0.01))
    outcome = deliver(notifier, _notification(), sleep=lambda s: None)
    assert not outcome.ok and outcome.attempts == (2 if retried else 1)
    assert outcome.error == f"http://127.0.0.1:{failing.server.server_address[1]} answered HTTP {status} " + (
        "Bad Request" if status == 400 else "Internal Server Error"
    )
    for leaked in ("hunter2", "db.internal", "ghp_", "<h1>"):
        assert leaked not in str(outcome.error)
