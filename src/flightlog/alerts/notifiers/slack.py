"""``kind: slack``: a Slack-compatible incoming webhook (Slack, Mattermost, Rocket.Chat, ...).

    - kind: slack
      url: ${SLACK_WEBHOOK_URL}     # the URL is the credential: from the environment only
      channel: "#ml-alerts"         # optional override, where the service allows it

The message has a plain ``text`` (what every compatible service shows) and Slack ``blocks``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flightlog.alerts.notifiers.base import RetryPolicy, Route, common_fields
from flightlog.alerts.notifiers.http import post_json
from flightlog.alerts.payload import Notification, text_lines, title
from flightlog.alerts.schema import Fields
from flightlog.alerts.secrets import check_url, references, resolve
from flightlog.errors import InvalidInput

__all__ = ["SlackNotifier", "parse", "slack_message"]

_EMOJI = {"critical": ":rotating_light:", "warning": ":warning:", "info": ":information_source:"}


@dataclass
class SlackNotifier:
    name: str
    url: str
    route: Route = field(default_factory=Route)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    channel: str | None = None
    username: str | None = None
    kind: str = "slack"

    def send(self, notification: Notification) -> None:
        body = slack_message(notification)
        if self.channel:
            body["channel"] = self.channel
        if self.username:
            body["username"] = self.username
        post_json(resolve(self.url), body, headers={}, timeout=self.retry.timeout)

    def references(self) -> list[str]:
        return references(self.url)

    def describe(self) -> str:
        return f"slack {self.url}"


def slack_message(n: Notification) -> dict[str, Any]:
    head = title(n)
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": head[:150]}}]
    for v in n.alerts[:20]:
        a = v.alert
        icon = ":white_check_mark:" if v.status == "resolved" else _EMOJI.get(a.severity, "")
        line = f"{icon} *{a.rule}* ({a.severity}) {a.summary}"
        if v.link:
            line += f"\n<{v.link}|open the run>"
        elif v.run:
            line += f"\n`flightlog runs show {v.run.get('id')}`"
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": line[:3000]}})
    if len(n.alerts) > 20:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f"and {len(n.alerts) - 20} more"}]})
    return {"text": head + "\n" + "\n".join(text_lines(n)), "blocks": blocks}


def parse(f: Fields, index: int) -> SlackNotifier | None:
    name, route, retry = common_fields(f, "slack", index)
    url = f.text("url", required=True)
    if url is not None:
        try:
            check_url("url", url, secret=True, env_name="SLACK_WEBHOOK_URL")
        except InvalidInput as exc:
            f.fail("url", exc.message)
            url = None
    channel, username = f.text("channel"), f.text("username")
    return None if url is None else SlackNotifier(name, url, route, retry, channel, username)
