"""Feeds: what is new for the rules each cycle (live over the store; the replay builds its own)."""

from flightlog.alerts.feeds.base import Feed, NeedsFor

__all__ = ["Feed", "NeedsFor"]
