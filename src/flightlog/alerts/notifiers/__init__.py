"""Notifiers, by kind: webhook, slack, email, command. A new one is a module and one line here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flightlog.alerts.notifiers import command, email, slack, webhook
from flightlog.alerts.notifiers.base import (
    DeliveryError,
    Notifier,
    Outcome,
    RetryPolicy,
    Route,
    deliver,
)

__all__ = ["NOTIFIER_KINDS", "Notifier", "DeliveryError", "Outcome", "Route", "RetryPolicy", "deliver"]

NOTIFIER_KINDS: dict[str, Callable[[Any, int], Any]] = {
    "webhook": webhook.parse,
    "slack": slack.parse,
    "email": email.parse,
    "command": command.parse,
}
