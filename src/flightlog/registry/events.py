"""Registry events (version created, alias set, moved or removed, deployment changed) delivered
through the alert notifiers' kinds — a signed webhook, Slack, a command — each exactly once.

Each change writes its event in its own transaction (an outbox row with a unique dedup key,
``stores/sql.py``). Delivery claims an event by compare-and-set before sending, so two
processes passing over the same store never both send it; each destination that got it is
recorded (``registry_event_sends``), so a retry goes only to the ones that failed; an event
every destination got is marked and never sent again. A failure is said on stderr and the
event waits for the next pass: the next change in any process over the store, the background
pump of a flightlog server over that store (`EventPump`), or ``Registry(client).deliver()``.

Where they go (docs/models.md):

* ``FLIGHTLOG_REGISTRY_NOTIFY``: a YAML file with a ``notifiers:`` list in the rules file's
  notifier syntax (kinds ``webhook``, ``slack``, ``command``), each optionally limited to
  ``events:`` (kinds) and ``models:``; a webhook may have a ``secret: ${ENV}`` that signs it.
* ``FLIGHTLOG_REGISTRY_WEBHOOK`` (URLs separated by spaces) and
  ``FLIGHTLOG_REGISTRY_WEBHOOK_SECRET``: plain signed webhooks, as before.

A webhook gets a ``POST`` of the event's JSON (with a readable ``summary``) and
``X-Flightlog-Timestamp: <unix seconds>``, ``X-Flightlog-Event: <kind>``,
``X-Flightlog-Event-Key: <dedup key>`` and, with a secret,
``X-Flightlog-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>." + body under the secret>``.
Slack gets the summary line; a command gets the JSON on stdin and the summary, kind and key in
``FLIGHTLOG_EVENT_SUMMARY``, ``FLIGHTLOG_EVENT_KIND`` and ``FLIGHTLOG_EVENT_KEY``.

A CLI command or an API request waits at most ``_INLINE_TIMEOUT`` per destination and
``_INLINE_BUDGET`` for the pass; what is left is sent by the next pass.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flightlog.alerts.config import parse_notifiers
from flightlog.alerts.notifiers import DeliveryError
from flightlog.alerts.notifiers.command import CommandNotifier, run_command
from flightlog.alerts.notifiers.http import post_bytes, post_json
from flightlog.alerts.notifiers.slack import SlackNotifier
from flightlog.alerts.notifiers.webhook import WebhookNotifier
from flightlog.alerts.schema import Fields
from flightlog.alerts.secrets import check_secret_value, resolve
from flightlog.alerts.yamlsource import Problem, RulesFileError, load_located
from flightlog.errors import FlightlogError, InvalidInput
from flightlog.notices import notice
from flightlog.registry.stores.sql import SqlRegistryStore
from flightlog.registry.types import RegistryEvent

__all__ = [
    "EVENT_KINDS",
    "Destination",
    "EventPump",
    "deliver_pending",
    "deliver_soon",
    "destinations_from_env",
    "load_destinations",
    "sign",
    "summary",
]

EVENT_KINDS = (
    "version_created",
    "version_deleted",
    "model_deleted",
    "model_renamed",
    "alias_set",
    "alias_moved",
    "alias_removed",
    "deployment_changed",
)
NOTIFY_ENV = "FLIGHTLOG_REGISTRY_NOTIFY"
WEBHOOK_ENV = "FLIGHTLOG_REGISTRY_WEBHOOK"
SECRET_ENV = "FLIGHTLOG_REGISTRY_WEBHOOK_SECRET"
_KINDS = ("webhook", "slack", "command")  # the notifier kinds that can carry an event
_INLINE_TIMEOUT = 3.0  # seconds a CLI command or an API request waits for one destination
_INLINE_BUDGET = 5.0  # and for the whole pass
_PASS_LIMIT = 200  # events one pass looks at (the rest wait for the next)
_MAX_WAIT = 60.0  # the longest a server's pump waits between passes while events are stuck


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature header's value: ``sha256=`` and the HMAC-SHA256 of ``timestamp.body``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def _v(n: Any) -> str:
    return "none" if n is None else f"v{n}"


def summary(event: RegistryEvent) -> str:
    """The readable line: ``fraud@production moved v3 → v4 by alice``."""
    p = event.payload
    by = f" by {p['actor']}" if p.get("actor") else ""
    model = p.get("model", "?")
    if event.kind == "version_created":
        run = str(p.get("run_id") or "")[:12]
        return f"{model} {_v(p.get('version'))} registered from run {run}{by}"
    if event.kind == "version_deleted":
        return f"{model} {_v(p.get('version'))} deleted{by}"
    if event.kind == "model_deleted":
        versions = ", ".join(_v(n) for n in p.get("versions") or []) or "no versions"
        return f"{model} deleted with {versions}{by}"
    if event.kind == "model_renamed":
        return f"{p.get('from_name')} renamed to {model}{by}"
    if event.kind in ("alias_set", "alias_moved", "alias_removed"):
        where = f"{model}@{p.get('alias')}"
        if event.kind == "alias_set":
            return f"{where} set to {_v(p.get('to_version'))}{by}"
        if event.kind == "alias_removed":
            return f"{where} removed (was {_v(p.get('from_version'))}){by}"
        return f"{where} moved {_v(p.get('from_version'))} → {_v(p.get('to_version'))}{by}"
    if event.kind == "deployment_changed":
        was = f" (was {_v(p.get('from_version'))})" if p.get("from_version") is not None else ""
        return f"{p.get('endpoint')} ({p.get('env')}) now serves {model} {_v(p.get('to_version'))}{was}{by}"
    return f"{event.kind} {event.key}"


def _body(event: RegistryEvent) -> bytes:
    return json.dumps(
        {**event.payload, "summary": summary(event)}, separators=(",", ":"), sort_keys=True, default=str
    ).encode()


@dataclass(frozen=True)
class Destination:
    """One place events go: an alert notifier (webhook, Slack, command) and which events it takes.

    ``key`` names it in ``registry_event_sends``: its kind and name (a notifier's, or a digest
    of an environment webhook's URL)."""

    key: str
    notifier: Any
    secret: str | None = None  # a webhook's signing secret (``${ENV}`` in a file)
    kinds: frozenset[str] | None = None
    models: frozenset[str] | None = None

    def takes(self, event: RegistryEvent) -> bool:
        if self.kinds is not None and event.kind not in self.kinds:
            return False
        return self.models is None or event.payload.get("model") in self.models

    @property
    def timeout(self) -> float:
        return float(self.notifier.retry.timeout)

    def describe(self) -> str:
        if self.key.startswith("env-webhook:"):
            return f"a webhook of {WEBHOOK_ENV}"
        return f"the {self.notifier.kind} notifier {self.notifier.name!r}"

    def send(self, event: RegistryEvent, timeout: float) -> None:
        """Deliver once (no retries here: the next pass is the retry); raises `DeliveryError`."""
        n = self.notifier
        if isinstance(n, WebhookNotifier):
            body = _body(event)
            stamp = str(int(time.time()))
            headers = {k: resolve(v) for k, v in n.headers.items()}
            headers.update(
                {
                    "User-Agent": "flightlog-registry",
                    "X-Flightlog-Timestamp": stamp,
                    "X-Flightlog-Event": event.kind,
                    "X-Flightlog-Event-Key": event.key,
                }
            )
            if self.secret:
                headers["X-Flightlog-Signature"] = sign(resolve(self.secret), stamp, body)
            post_bytes(resolve(n.url), body, headers=headers, timeout=timeout)
        elif isinstance(n, SlackNotifier):
            line = f"[{event.project}] {summary(event)}"
            message: dict[str, Any] = {"text": line}
            if n.channel:
                message["channel"] = n.channel
            if n.username:
                message["username"] = n.username
            post_json(resolve(n.url), message, headers={"User-Agent": "flightlog-registry"}, timeout=timeout)
        elif isinstance(n, CommandNotifier):
            env = dict(os.environ)
            env.update({k: resolve(v) for k, v in n.env.items()})
            env.update(
                FLIGHTLOG_EVENT_KIND=event.kind, FLIGHTLOG_EVENT_KEY=event.key, FLIGHTLOG_EVENT_SUMMARY=summary(event)
            )
            run_command(n.command, _body(event), env, timeout)
        else:  # refused when the file is read; a guard for a Destination built by hand
            raise DeliveryError(f"a {n.kind} notifier cannot carry registry events", permanent=True)


def parse_destinations(text: str, source: str) -> list[Destination]:
    """The ``notifiers:`` of a registry-events file; every problem at once, with its line
    (`RulesFileError`, an `InvalidInput`)."""
    doc = load_located(text, source)
    if doc.value is None:
        doc.value = {}
    problems: list[Problem] = []
    top = Fields(doc, (), problems)
    raw = top.raw("notifiers")
    top.finish()
    found = parse_notifiers(doc, raw, problems, kinds=_KINDS, extra=_event_fields)
    errors = [p for p in problems if not p.warning]
    if errors:
        raise RulesFileError(source, errors)
    return [Destination(f"{n.kind}:{n.name}", n, *more) for n, more in found]


def _event_fields(f: Fields, kind: str | None) -> tuple[str | None, frozenset[str] | None, frozenset[str] | None]:
    """What a registry destination adds to a notifier entry: its secret, event kinds and models."""
    kinds = f.text_list("events")
    for k in kinds or ():
        if k not in EVENT_KINDS:
            f.fail("events", f"{k!r} is not an event kind; the kinds: {', '.join(EVENT_KINDS)}")
    models = f.text_list("models")
    secret = f.text("secret")
    if secret is not None:
        if kind != "webhook":
            f.fail("secret", "only a webhook is signed")
        try:
            check_secret_value("secret", secret, env_name="REGISTRY_HOOK_SECRET")
        except InvalidInput as exc:
            f.fail("secret", exc.message)
    return secret, frozenset(kinds) if kinds else None, frozenset(models) if models else None


_loaded: dict[str, tuple[float, int, list[Destination]]] = {}


def load_destinations(path: str | os.PathLike[str]) -> list[Destination]:
    """The destinations of a registry-events file, read again only when it changed."""
    p = Path(path)
    try:
        st = p.stat()
        cached = _loaded.get(str(p))
        if cached is not None and cached[:2] == (st.st_mtime, st.st_size):
            return cached[2]
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidInput(f"{NOTIFY_ENV}: no file at {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{NOTIFY_ENV}: cannot read {p}: {exc}") from None
    found = parse_destinations(text, str(p))
    _loaded[str(p)] = (st.st_mtime, st.st_size, found)
    return found


def destinations_from_env(environ: Mapping[str, str] | None = None) -> list[Destination]:
    """Where this process sends events: the file ``FLIGHTLOG_REGISTRY_NOTIFY`` names, then the
    webhooks of ``FLIGHTLOG_REGISTRY_WEBHOOK``. Raises InvalidInput for a bad setting."""
    env = os.environ if environ is None else environ
    out: list[Destination] = []
    path = (env.get(NOTIFY_ENV) or "").strip()
    if path:
        out.extend(load_destinations(path))
    secret = env.get(SECRET_ENV) or None
    for url in (env.get(WEBHOOK_ENV) or "").split():
        if not url.startswith(("http://", "https://")):
            raise InvalidInput(f"{WEBHOOK_ENV}: {url[:80]!r} is not an http(s) URL")
        digest = hashlib.sha256(url.encode()).hexdigest()[:16]
        hook = WebhookNotifier(f"env-{digest}", url.replace("$", "$$"))  # sent as given, not as ${...}
        out.append(Destination(f"env-webhook:{digest}", hook, None if secret is None else "${" + SECRET_ENV + "}"))
    return out


def deliver_pending(
    store: SqlRegistryStore,
    targets: Sequence[Destination] | None = None,
    *,
    timeout: float | None = None,
    budget: float | None = None,
) -> int:
    """Send every undelivered event to every destination that takes it, each once; returns how
    many events were delivered whole. ``timeout`` caps each send, ``budget`` the pass (seconds).
    Never raises for a destination's trouble: the change is recorded already, and an
    undelivered event waits for the next pass (said on stderr)."""
    try:
        dests = destinations_from_env() if targets is None else list(targets)
    except FlightlogError as exc:
        notice(f"warning: registry events not sent: {exc.message}")
        return 0
    if not dests:
        return 0
    deadline = None if budget is None else time.monotonic() + budget
    sent = 0
    for event in store.events(undelivered=True, limit=_PASS_LIMIT):
        if deadline is not None and time.monotonic() >= deadline:
            break  # the rest waits for the next pass
        if not store.claim_event(event.id, time.time()):
            continue  # another process is delivering it
        if _deliver_one(store, event, dests, timeout, deadline):
            store.mark_delivered(event.id, time.time())
            sent += 1
        else:
            store.release_event(event.id)
    return sent


def _deliver_one(
    store: SqlRegistryStore,
    event: RegistryEvent,
    dests: Sequence[Destination],
    timeout: float | None,
    deadline: float | None,
) -> bool:
    done = store.sent_to(event.id)
    whole = True
    for d in dests:
        if d.key in done or not d.takes(event):
            continue
        wait = d.timeout if timeout is None else min(d.timeout, timeout)
        if deadline is not None:
            wait = min(wait, deadline - time.monotonic())
            if wait <= 0:
                return False
        try:
            d.send(event, wait)
        except DeliveryError as exc:
            whole = False
            notice(
                f"warning: registry event {event.kind} ({event.key}) not delivered to {d.describe()}: "
                f"{exc.message}; it is sent again on the next pass"
            )
            continue
        except FlightlogError as exc:  # a ${SECRET} that is not set in this process
            whole = False
            notice(f"warning: registry event {event.kind} not delivered to {d.describe()}: {exc.message}")
            continue
        store.mark_sent(event.id, d.key, time.time())
    return whole


class EventPump:
    """Delivers pending events in the background, every ``interval`` seconds and at once when
    woken: a flightlog server runs one over its store, so an event written there by any
    process (a CLI over the same database included) is sent while the server runs."""

    def __init__(self, store: SqlRegistryStore, interval: float = 2.0) -> None:
        self.store = store
        self.interval = interval
        # what the pump did, for whoever watches it (a test waits on these, not on the clock):
        # delivery passes made, and the wait it chose after the last one (its backoff)
        self.passes = 0
        self.next_wait = interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="flightlog-registry-events", daemon=True)

    def start(self) -> EventPump:
        with _pumps_lock:
            _pumps.append(self)
        self._thread.start()
        return self

    def wake(self) -> None:
        self._wake.set()

    def _loop(self) -> None:
        wait = self.interval
        while not self._stop.is_set():
            if self._wake.wait(wait):
                wait = self.interval  # a new change: its events go now, and failed ones are tried again
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                sent = deliver_pending(self.store)
                stuck = not sent and _configured() and bool(self.store.events(undelivered=True, limit=1))
            except Exception as exc:  # noqa: BLE001 - a store hiccup must not end the pump
                notice(f"warning: registry events: delivery pass failed: {type(exc).__name__}: {exc}")
                stuck = True
            # a destination that keeps failing is tried less and less often (up to once a minute),
            # so a server's log is not one warning every pass
            wait = min(_MAX_WAIT, wait * 2) if stuck else self.interval
            self.next_wait = wait
            self.passes += 1

    def stop(self, final: bool = True) -> None:
        with _pumps_lock:
            if self in _pumps:
                _pumps.remove(self)
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10.0)


def _configured() -> bool:
    """Whether this process has destinations (a bad setting counts: its events are stuck)."""
    try:
        return bool(destinations_from_env())
    except FlightlogError:
        return True


_pumps: list[EventPump] = []
_pumps_lock = threading.Lock()


def deliver_soon(store: SqlRegistryStore) -> int:
    """After a change: wake this process's pump over the same database (a server's: the request
    returns at once), else deliver now within the inline bounds. Returns the events delivered now."""
    with _pumps_lock:
        pump = next((p for p in _pumps if p.store.db is store.db), None)
    if pump is not None:
        pump.wake()
        return 0
    return deliver_pending(store, timeout=_INLINE_TIMEOUT, budget=_INLINE_BUDGET)
