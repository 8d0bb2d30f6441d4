"""``kind: email``: a plain-text email over SMTP, with TLS and authentication options.

    - kind: email
      host: smtp.example.com
      port: 587                  # default: 465 with tls: tls, else 587 (25 with tls: none)
      tls: starttls              # starttls (default) | tls (implicit, SMTPS) | none
      verify: true               # check the server's certificate (ca_file: a private CA)
      username: alerts@example.com
      password: ${SMTP_PASSWORD} # from the environment only
      from: alerts@example.com
      to: [oncall@example.com]

A password is refused over ``tls: none`` unless the server is on this machine.
"""

from __future__ import annotations

import smtplib
import ssl
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from flightlog.alerts.notifiers.base import DeliveryError, RetryPolicy, Route, common_fields
from flightlog.alerts.payload import Notification, text_lines, title
from flightlog.alerts.schema import Fields
from flightlog.alerts.secrets import check_secret_value, references, resolve
from flightlog.errors import InvalidInput

__all__ = ["EmailNotifier", "parse", "email_message"]

_LOCAL = ("localhost", "127.0.0.1", "::1")


@dataclass
class EmailNotifier:
    name: str
    host: str
    sender: str
    to: list[str]
    route: Route = field(default_factory=Route)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    port: int = 587
    tls: str = "starttls"
    verify: bool = True
    ca_file: str | None = None
    username: str | None = None
    password: str | None = None
    kind: str = "email"

    def _context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca_file)
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def send(self, notification: Notification) -> None:
        host = resolve(self.host)
        message = email_message(notification, resolve(self.sender), [resolve(t) for t in self.to])
        timeout = self.retry.timeout
        try:
            if self.tls == "tls":
                smtp: smtplib.SMTP = smtplib.SMTP_SSL(host, self.port, timeout=timeout, context=self._context())
            else:
                smtp = smtplib.SMTP(host, self.port, timeout=timeout)
            with smtp:
                smtp.ehlo()
                if self.tls == "starttls":
                    smtp.starttls(context=self._context())
                    smtp.ehlo()
                if self.username:
                    smtp.login(resolve(self.username), resolve(self.password or ""))
                refused = smtp.send_message(message)
        except smtplib.SMTPAuthenticationError as exc:
            raise DeliveryError(
                f"SMTP {host}:{self.port} refused the login: {exc.smtp_code} {_text(exc.smtp_error)}", permanent=True
            ) from None
        except smtplib.SMTPRecipientsRefused as exc:
            raise DeliveryError(
                f"SMTP {host}:{self.port} refused every recipient: {sorted(exc.recipients)}", permanent=True
            ) from None
        except smtplib.SMTPResponseException as exc:
            permanent = 500 <= exc.smtp_code < 600
            raise DeliveryError(
                f"SMTP {host}:{self.port} answered {exc.smtp_code} {_text(exc.smtp_error)}", permanent=permanent
            ) from None
        except smtplib.SMTPNotSupportedError as exc:
            raise DeliveryError(f"SMTP {host}:{self.port}: {exc} (check the tls option)", permanent=True) from None
        except (TimeoutError, smtplib.SMTPException, ssl.SSLError, OSError) as exc:
            raise DeliveryError(f"SMTP {host}:{self.port}: {exc}") from None
        if refused:
            raise DeliveryError(f"SMTP {host}:{self.port} refused {sorted(refused)}", permanent=True)

    def references(self) -> list[str]:
        values = [self.host, self.sender, *self.to, self.username or "", self.password or ""]
        return [n for v in values for n in references(v)]

    def describe(self) -> str:
        return f"email to {', '.join(self.to)} via {self.host}:{self.port} ({self.tls})"


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def email_message(n: Notification, sender: str, to: list[str]) -> EmailMessage:
    import json

    from flightlog.alerts.payload import webhook_payload

    message = EmailMessage()
    message["Subject"] = f"flightlog {title(n)}"
    message["From"] = sender
    message["To"] = ", ".join(to)
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(domain="flightlog")
    message["X-Flightlog-Group"] = n.group_key[:200]
    body = "\n".join(text_lines(n))
    body += "\n\n-- \nThe alerts as JSON (the webhook payload):\n"
    body += json.dumps(webhook_payload(n), indent=2, ensure_ascii=False, default=str)
    message.set_content(body)
    return message


def parse(f: Fields, index: int) -> EmailNotifier | None:
    name, route, retry = common_fields(f, "email", index)
    host = f.text("host", required=True)
    tls = f.choice("tls", ("starttls", "tls", "none"), default="starttls") or "starttls"
    default_port = {"tls": 465, "starttls": 587, "none": 25}[tls]
    port = f.integer("port", default=default_port, minimum=1) or default_port
    sender = f.text("from", required=True)
    to = f.text_list("to", required=True) or []
    username, password = f.text("username"), f.text("password")
    verify = f.flag("verify", default=True)
    ca_file = f.text("ca_file")
    if password is not None:
        try:
            check_secret_value("password", password, env_name="SMTP_PASSWORD")
        except InvalidInput as exc:
            f.fail("password", exc.message)
    if username and password is None:
        f.fail((), "username needs a password: password: ${SMTP_PASSWORD}")
    if password is not None and not username:
        f.fail("password", "a password needs a username")
    if password and tls == "none" and host not in _LOCAL:
        f.fail("tls", "would send the password in clear: use tls: starttls or tls: tls")
    if host is None or sender is None or not to:
        return None
    return EmailNotifier(name, host, sender, to, route, retry, port, tls, verify, ca_file, username, password)
