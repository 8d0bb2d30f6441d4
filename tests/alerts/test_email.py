"""The email notifier against a real SMTP server (aiosmtpd) on 127.0.0.1: plain with a login,
STARTTLS and implicit TLS with a certificate checked against its CA, a refused login, and a
password that only ever comes from the environment."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import time
from collections.abc import Iterator
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any

import pytest

from flightlog.alerts.config import parse_config
from flightlog.alerts.notifiers import deliver
from flightlog.alerts.payload import AlertView, Notification
from flightlog.alerts.types import Alert
from tests.alerts.conftest import free_port


def notification() -> Notification:
    alert = Alert(
        "a1",
        "f1",
        "gpu-idle",
        "threshold",
        "warning",
        {"run": "r1", "project": "vision", "gpu": "0"},
        "firing",
        run_id="r1",
        project="vision",
        value=3.0,
        summary="GPU 0 idle at 3% for 30m",
        fired_at=time.time(),
    )
    return Notification(
        "new",
        "run=r1",
        {"run": "r1"},
        [AlertView(alert, {"id": "r1", "name": "train.py", "project": "vision", "status": "running"})],
    )


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    d = tmp_path_factory.mktemp("tls")
    key, crt = d / "key.pem", d / "cert.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(crt),
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    return key, crt


class Server:
    def __init__(self, port: int, mode: str) -> None:
        self.port = port
        self.mode = mode
        self.messages: list[Any] = []
        self.logins: list[tuple[str, str]] = []


@pytest.fixture
def server(request: pytest.FixtureRequest, cert: tuple[Path, Path]) -> Iterator[Server]:
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword

    mode = request.param
    srv = Server(free_port(), mode)

    class Handler:
        async def handle_DATA(self, smtp: Any, session: Any, envelope: Any) -> str:  # noqa: N802 - aiosmtpd's API
            srv.messages.append(envelope)
            return "250 OK"

    def authenticator(smtp: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        if not isinstance(data, LoginPassword):
            return AuthResult(success=False, handled=False)
        user, password = data.login.decode(), data.password.decode()
        srv.logins.append((user, password))
        return AuthResult(success=(user, password) == ("alerts", "s3cret"), handled=False)

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert[1]), str(cert[0]))
    options: dict[str, Any] = {"authenticator": authenticator}
    if mode == "plain":
        options["auth_require_tls"] = False
    elif mode == "starttls":
        options.update(tls_context=context, require_starttls=True)
    else:  # implicit TLS (SMTPS): the connection is encrypted from its first byte
        options.update(ssl_context=context, auth_require_tls=False)
    controller = Controller(Handler(), hostname="127.0.0.1", port=srv.port, server_hostname="localhost", **options)
    controller.start()
    try:
        yield srv
    finally:
        controller.stop()


def email(port: int, tls: str, ca: Path, *, password: str = "${SMTP_PASSWORD}") -> Any:
    config = parse_config(
        f"""
notifiers:
  - kind: email
    host: localhost
    port: {port}
    tls: {tls}
    ca_file: {ca}
    username: alerts
    password: "{password}"
    from: flightlog@example.com
    to: [oncall@example.com, ml@example.com]
    retries: 0
    timeout: 5s
""",
        "rules.yaml",
    )
    return config.notifiers[0]


@pytest.mark.parametrize("server", ["plain", "starttls", "tls"], indirect=True)
def test_email_is_delivered_with_a_login(
    server: Server, cert: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SMTP_PASSWORD", "s3cret")
    tls = {"plain": "none"}.get(server.mode, server.mode)
    outcome = deliver(email(server.port, tls, cert[1]), notification())
    assert outcome.ok, outcome.error
    assert server.logins == [("alerts", "s3cret")]
    [envelope] = server.messages
    assert envelope.mail_from == "flightlog@example.com"
    assert envelope.rcpt_tos == ["oncall@example.com", "ml@example.com"]
    message = message_from_bytes(envelope.content, policy=policy.default)
    assert message["Subject"] == "flightlog [FIRING:1] gpu-idle · vision/train.py"
    text = message.get_content()
    assert "WARNING gpu-idle: GPU 0 idle at 3% for 30m" in text and '"group_key": "run=r1"' in text


@pytest.mark.parametrize("server", ["starttls"], indirect=True)
def test_refused_login_and_bad_certificate_are_reported_not_raised(
    server: Server, cert: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SMTP_PASSWORD", "wrong")
    outcome = deliver(email(server.port, "starttls", cert[1]), notification())
    assert not outcome.ok and outcome.attempts == 1  # a refused login is not retried
    assert outcome.error is not None and "refused the login" in outcome.error
    other = tmp_path / "other.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(tmp_path / "k.pem"),
            "-out",
            str(other),
            "-days",
            "1",
            "-subj",
            "/CN=other",
        ],
        check=True,
        capture_output=True,
    )
    monkeypatch.setenv("SMTP_PASSWORD", "s3cret")
    outcome = deliver(email(server.port, "starttls", other), notification())
    assert not outcome.ok and outcome.error is not None and "CERTIFICATE_VERIFY_FAILED" in outcome.error
    monkeypatch.delenv("SMTP_PASSWORD")
    outcome = deliver(email(server.port, "starttls", cert[1]), notification())
    assert (
        not outcome.ok
        and outcome.error == "the environment variable SMTP_PASSWORD is not set (referenced as ${SMTP_PASSWORD})"
    )
    assert server.messages == []
