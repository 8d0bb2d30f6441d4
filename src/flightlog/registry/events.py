"""Registry events (version created, alias set or moved, deployment changed) delivered to
webhooks, each exactly once, signed so that a CI job can trust them.

Each change writes its event in its own transaction (an outbox row with a unique dedup key,
``stores/sql.py``). Delivery claims an event by compare-and-set before sending, so two
processes passing over the same store never both send it; a delivered event is marked and
never sent again; a failed one is released for the next pass (the next change in any process over the store,
or ``Registry(client).deliver()``).

The request: ``POST`` of the event's JSON body with
``X-Flightlog-Timestamp: <unix seconds>``, ``X-Flightlog-Event: <kind>``,
``X-Flightlog-Event-Key: <dedup key>`` and, when a secret is configured,
``X-Flightlog-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>." + body under the secret>``;
a receiver recomputes it and refuses a stale timestamp (docs/models.md).

Configured by ``FLIGHTLOG_REGISTRY_WEBHOOK`` (one URL, or several separated by spaces) and
``FLIGHTLOG_REGISTRY_WEBHOOK_SECRET``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from flightlog.errors import InvalidInput
from flightlog.notices import notice
from flightlog.registry.stores.sql import SqlRegistryStore
from flightlog.registry.types import RegistryEvent

__all__ = ["Webhook", "deliver_pending", "sign", "targets_from_env"]

_TIMEOUT = 5.0


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the HMAC-SHA256 of ``timestamp.body``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


@dataclass(frozen=True)
class Webhook:
    url: str
    secret: str | None = None

    def send(self, event: RegistryEvent) -> None:
        body = json.dumps(event.payload, separators=(",", ":"), sort_keys=True, default=str).encode()
        stamp = str(int(time.time()))
        request = urllib.request.Request(self.url, data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        request.add_header("User-Agent", "flightlog-registry")
        request.add_header("X-Flightlog-Timestamp", stamp)
        request.add_header("X-Flightlog-Event", event.kind)
        request.add_header("X-Flightlog-Event-Key", event.key)
        if self.secret:
            request.add_header("X-Flightlog-Signature", sign(self.secret, stamp, body))
        try:
            with urllib.request.urlopen(request, timeout=_TIMEOUT) as response:  # noqa: S310 - http(s) checked
                response.read(65536)
        except urllib.error.HTTPError as exc:
            exc.close()  # its body is the receiver's business
            raise urllib.error.URLError(f"HTTP {exc.code} from {self.url.split('?')[0]}") from None


def targets_from_env(environ: Mapping[str, str] | None = None) -> list[Webhook]:
    env = os.environ if environ is None else environ
    secret = env.get("FLIGHTLOG_REGISTRY_WEBHOOK_SECRET") or None
    urls = (env.get("FLIGHTLOG_REGISTRY_WEBHOOK") or "").split()
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise InvalidInput(f"FLIGHTLOG_REGISTRY_WEBHOOK: {url[:80]!r} is not an http(s) URL")
    return [Webhook(url, secret) for url in urls]


def deliver_pending(store: SqlRegistryStore, targets: Sequence[Webhook] | None = None) -> int:
    """Send every undelivered event to every target, each event once; returns how many were
    delivered. Never raises for a target's trouble: the change is recorded already, and an
    undelivered event waits for the next pass (said on stderr)."""
    try:
        targets = targets_from_env() if targets is None else list(targets)
    except InvalidInput as exc:
        notice(f"warning: registry events not sent: {exc.message}")
        return 0
    if not targets:
        return 0
    sent = 0
    for event in store.events(undelivered=True):
        if not store.claim_event(event.id, time.time()):
            continue  # another process is delivering it
        try:
            for target in targets:
                target.send(event)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            store.release_event(event.id)
            notice(
                f"warning: registry event {event.kind} ({event.key}) not delivered to a webhook: "
                f"{getattr(exc, 'reason', exc)}; it is sent again on the next change"
            )
            continue
        store.mark_delivered(event.id, time.time())
        sent += 1
    return sent
