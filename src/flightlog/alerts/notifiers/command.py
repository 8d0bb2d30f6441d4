"""``kind: command``: run a program with the JSON payload on its standard input.

    - kind: command
      command: ["/usr/local/bin/page-oncall", "--team", "ml"]   # or one string, split like a shell
      env: {PAGER_KEY: "${PAGER_KEY}"}                           # secret values: ${ENV} only

The program also gets ``FLIGHTLOG_ALERT_STATUS`` (firing|resolved), ``FLIGHTLOG_ALERT_TITLE``,
``FLIGHTLOG_ALERT_COUNT`` and ``FLIGHTLOG_ALERT_GROUP``. A non-zero exit is a failed delivery
(retried); one that runs past ``timeout`` is killed.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from dataclasses import dataclass, field

from flightlog.alerts.notifiers.base import DeliveryError, RetryPolicy, Route, common_fields
from flightlog.alerts.payload import Notification, title, webhook_payload
from flightlog.alerts.schema import Fields
from flightlog.alerts.secrets import check_secret_value, references, resolve, secret_key
from flightlog.errors import InvalidInput

__all__ = ["CommandNotifier", "parse", "run_command"]


@dataclass
class CommandNotifier:
    name: str
    command: list[str]
    route: Route = field(default_factory=Route)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    env: dict[str, str] = field(default_factory=dict)
    kind: str = "command"

    def send(self, notification: Notification) -> None:
        env = dict(os.environ)
        env.update({k: resolve(v) for k, v in self.env.items()})
        env.update(
            FLIGHTLOG_ALERT_STATUS=notification.status,
            FLIGHTLOG_ALERT_TITLE=title(notification),
            FLIGHTLOG_ALERT_COUNT=str(len(notification.alerts)),
            FLIGHTLOG_ALERT_GROUP=notification.group_key,
        )
        body = json.dumps(webhook_payload(notification), ensure_ascii=False, default=str).encode()
        run_command(self.command, body, env, self.retry.timeout)

    def references(self) -> list[str]:
        return [n for v in self.env.values() for n in references(v)]

    def describe(self) -> str:
        return "command " + " ".join(shlex.quote(c) for c in self.command)


def run_command(command: list[str], body: bytes, env: dict[str, str], timeout: float) -> None:
    """Run ``command`` with ``body`` on its standard input; a failure is a `DeliveryError`
    (permanent when the program cannot be run at all). Shared with the registry's events."""
    try:
        proc = subprocess.run(command, input=body, env=env, capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise DeliveryError(f"command not found: {command[0]}", permanent=True) from None
    except subprocess.TimeoutExpired:
        raise DeliveryError(f"{command[0]} ran past {timeout:g}s and was killed") from None
    except OSError as exc:
        raise DeliveryError(f"cannot run {command[0]}: {exc}", permanent=True) from None
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        raise DeliveryError(f"{command[0]} exited with {proc.returncode}" + (f": {' / '.join(tail)}" if tail else ""))


def parse(f: Fields, index: int) -> CommandNotifier | None:
    name, route, retry = common_fields(f, "command", index)
    raw = f.raw("command")
    command: list[str] | None = None
    if raw is None:
        f.fail((), "needs the field 'command': a list of arguments or one string")
    elif isinstance(raw, str) and raw.strip():
        try:
            command = shlex.split(raw)
        except ValueError as exc:
            f.fail("command", f"cannot be split into arguments: {exc}")
    elif (
        isinstance(raw, list) and raw and all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in raw)
    ):
        command = [str(a) for a in raw]
    else:
        f.fail("command", "must be a list of arguments or one string")
    env = f.string_map("env")
    for key, value in env.items():
        try:
            if secret_key(key):
                check_secret_value(f"env.{key}", value)
            else:
                references(value)
        except InvalidInput as exc:
            f.fail(("env", key), exc.message)
    return None if not command else CommandNotifier(name, command, route, retry, env)
