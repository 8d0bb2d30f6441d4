"""Silences: "don't tell anyone about RULE (with these labels) for the next 2h".

A silenced alert still changes state and is kept in the history; only its notifications are
held back. When the silence ends and the alert is still firing, it is notified then.
"""

from __future__ import annotations

import fnmatch
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flightlog.alerts.types import Alert
from flightlog.errors import InvalidInput
from flightlog.timefmt import iso

__all__ = ["Silence", "new_silence", "first_match", "parse_matchers"]


@dataclass
class Silence:
    id: str
    rule: str  # a rule name, or a glob (gpu-*, *)
    matchers: dict[str, str] = field(default_factory=dict)  # label → value (globs allowed)
    starts: float = 0.0
    ends: float = 0.0
    created: float = 0.0
    author: str | None = None
    comment: str | None = None

    def active(self, now: float) -> bool:
        return self.starts <= now < self.ends

    def matches(self, alert: Alert) -> bool:
        if not fnmatch.fnmatchcase(alert.rule, self.rule):
            return False
        for key, pattern in self.matchers.items():
            value = alert.labels.get(key)
            if value is None or not fnmatch.fnmatchcase(value, pattern):
                return False
        return True

    def to_dict(self, now: float | None = None) -> dict[str, Any]:
        now = time.time() if now is None else now
        return {
            "id": self.id,
            "rule": self.rule,
            "labels": dict(self.matchers),
            "starts_at": iso(self.starts),
            "ends_at": iso(self.ends),
            "created": iso(self.created),
            "author": self.author,
            "comment": self.comment,
            "active": self.active(now),
        }


def new_silence(
    rule: str,
    seconds: float,
    matchers: Mapping[str, str] | None = None,
    *,
    author: str | None = None,
    comment: str | None = None,
    now: float | None = None,
) -> Silence:
    if not rule.strip():
        raise InvalidInput("a silence needs a rule name (or a pattern such as 'gpu-*' or '*')")
    if seconds <= 0:
        raise InvalidInput("a silence must last longer than 0s (e.g. --for 2h)")
    now = time.time() if now is None else now
    return Silence(secrets.token_hex(6), rule.strip(), dict(matchers or {}), now, now + seconds, now, author, comment)


def first_match(alert: Alert, silences: Iterable[Silence], now: float) -> Silence | None:
    for s in silences:
        if s.active(now) and s.matches(alert):
            return s
    return None


def parse_matchers(items: Sequence[str]) -> dict[str, str]:
    """``("run=abc", "gpu=0")`` → ``{"run": "abc", "gpu": "0"}``; values may be globs."""
    out: dict[str, str] = {}
    for item in items:
        for part in item.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise InvalidInput(f"--labels {part!r}: write NAME=VALUE, e.g. --labels run=3f2a9c --labels gpu=0")
            out[key.strip()] = value.strip()
    return out
