"""``kind: webhook``: the generic JSON payload (docs/alerting.md) POSTed to a URL.

- kind: webhook
  url: https://hooks.example.com/flightlog
  headers: {Authorization: "Bearer ${HOOK_TOKEN}"}   # secret headers: ${ENV} only
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flightlog.alerts.notifiers.base import RetryPolicy, Route, common_fields
from flightlog.alerts.notifiers.http import post_json
from flightlog.alerts.payload import Notification, webhook_payload
from flightlog.alerts.schema import Fields
from flightlog.alerts.secrets import check_secret_value, check_url, references, resolve, secret_key
from flightlog.errors import InvalidInput

__all__ = ["WebhookNotifier", "parse"]


@dataclass
class WebhookNotifier:
    name: str
    url: str
    route: Route = field(default_factory=Route)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    headers: dict[str, str] = field(default_factory=dict)
    kind: str = "webhook"

    def send(self, notification: Notification) -> None:
        post_json(self._url(), webhook_payload(notification), headers=self._headers(), timeout=self.retry.timeout)

    def _url(self) -> str:
        return resolve(self.url)

    def _headers(self) -> dict[str, str]:
        return {k: resolve(v) for k, v in self.headers.items()}

    def references(self) -> list[str]:
        return [*references(self.url), *(n for v in self.headers.values() for n in references(v))]

    def describe(self) -> str:
        return f"webhook {self.url}"


def parse(f: Fields, index: int) -> WebhookNotifier | None:
    name, route, retry = common_fields(f, "webhook", index)
    url = f.text("url", required=True)
    if url is not None:
        try:
            check_url("url", url)
        except InvalidInput as exc:
            f.fail("url", exc.message)
            url = None
    headers = f.string_map("headers")
    for key, value in headers.items():
        try:
            if secret_key(key) or key.lower() in ("authorization", "cookie", "proxy-authorization"):
                check_secret_value(f"headers.{key}", value)
            else:
                references(value)
        except InvalidInput as exc:
            f.fail(("headers", key), exc.message)
    return None if url is None else WebhookNotifier(name, url, route, retry, headers)
