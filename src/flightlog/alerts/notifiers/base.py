"""What every notifier shares: its routing (which alerts it takes), retries with backoff,
and the one error type a delivery raises.

A notifier's ``send`` raises :class:`DeliveryError` (``permanent=True`` when retrying cannot
help: a 4xx answer, a refused recipient); :func:`deliver` retries the others with exponential
backoff and never raises — the caller records and reports the outcome.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from flightlog.alerts.payload import Notification
from flightlog.alerts.schema import Fields
from flightlog.alerts.types import Alert, severity_rank
from flightlog.errors import FlightlogError

__all__ = ["DeliveryError", "Route", "RetryPolicy", "Notifier", "Outcome", "deliver", "common_fields"]


class DeliveryError(Exception):
    def __init__(self, message: str, *, permanent: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.retry_after = retry_after


@dataclass(frozen=True)
class Route:
    """Which alerts a notifier takes: a minimum severity, label matches, rule names."""

    min_severity: str = "info"
    match: Mapping[str, str] = field(default_factory=dict)
    rules: tuple[str, ...] | None = None
    send_resolved: bool = True

    def takes(self, alert: Alert) -> bool:
        if severity_rank(alert.severity) < severity_rank(self.min_severity):
            return False
        if self.rules is not None and alert.rule not in self.rules:
            return False
        return all(alert.labels.get(k) == v for k, v in self.match.items())


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3
    delay: float = 1.0  # the first backoff; doubles each retry
    max_delay: float = 60.0
    timeout: float = 10.0


class Notifier(Protocol):
    name: str
    kind: str
    route: Route
    retry: RetryPolicy

    def send(self, notification: Notification) -> None: ...
    def references(self) -> list[str]: ...
    def describe(self) -> str: ...


@dataclass
class Outcome:
    notifier: str
    ok: bool
    attempts: int
    error: str | None = None
    seconds: float = 0.0


def deliver(
    notifier: Notifier,
    notification: Notification,
    *,
    sleep: Callable[[float], Any] = time.sleep,
    deadline: float | None = None,
) -> Outcome:
    """Send with retries and backoff; never raises. ``deadline`` (monotonic) cuts retries short."""
    policy = notifier.retry
    started = time.monotonic()
    error = "not sent"
    attempt = 0
    for attempt in range(1, policy.retries + 2):
        try:
            notifier.send(notification)
            return Outcome(notifier.name, True, attempt, None, time.monotonic() - started)
        except DeliveryError as exc:
            error = exc.message
            if exc.permanent:
                break
            wait = min(policy.max_delay, policy.delay * 2 ** (attempt - 1))
            if exc.retry_after is not None:
                wait = min(policy.max_delay, max(wait, exc.retry_after))
        except FlightlogError as exc:  # a ${SECRET} that is not set here: retrying cannot help
            error = exc.message
            break
        except Exception as exc:  # noqa: BLE001 - a notifier bug must not take the evaluator down
            error = f"{type(exc).__name__}: {exc}"
            break
        if attempt > policy.retries or (deadline is not None and time.monotonic() + wait > deadline):
            break
        sleep(wait)
    return Outcome(notifier.name, False, attempt, error, time.monotonic() - started)


def common_fields(f: Fields, kind: str, index: int) -> tuple[str, Route, RetryPolicy]:
    """The fields every notifier takes: name, routing and retries."""
    from flightlog.alerts.types import SEVERITIES

    name = f.text("name", default=f"{kind}-{index + 1}") or f"{kind}-{index + 1}"
    route = Route(
        min_severity=f.choice("min_severity", SEVERITIES, default="info") or "info",
        match=f.string_map("match"),
        rules=tuple(f.text_list("rules") or ()) or None,
        send_resolved=f.flag("send_resolved", default=True),
    )
    retry = RetryPolicy(
        retries=f.integer("retries", default=3, minimum=0) or 0,
        delay=f.duration("retry_delay", default=1.0) or 1.0,
        max_delay=f.duration("max_retry_delay", default=60.0) or 60.0,
        timeout=f.duration("timeout", default=10.0) or 10.0,
    )
    return name, route, retry
