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
from flightlog.plugins import features

__all__ = [
    "NOTIFIER_KINDS",
    "notifier_kinds",
    "Notifier",
    "DeliveryError",
    "Outcome",
    "Route",
    "RetryPolicy",
    "deliver",
]

NOTIFIER_KINDS: dict[str, Callable[[Any, int], Any]] = {
    "webhook": webhook.parse,
    "slack": slack.parse,
    "email": email.parse,
    "command": command.parse,
}


def notifier_kinds() -> dict[str, Callable[[Any, int], Any]]:
    """Every notifier kind the feature table knows (alerts registers the ones above; a feature
    of its own may add more), by name: each parses one ``notifiers:`` entry."""
    return features().notifiers() or dict(NOTIFIER_KINDS)
