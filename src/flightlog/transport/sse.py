"""Reading a server-sent events stream (text/event-stream), line by line."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["ServerEvent", "parse_events"]


@dataclass(frozen=True)
class ServerEvent:
    event: str
    data: str
    id: str | None


def parse_events(lines: Iterable[str]) -> Iterator[ServerEvent]:
    """Events as the SSE specification frames them: fields until a blank line; comments skipped."""
    event, last_id = "", None
    data: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data or event:
                yield ServerEvent(event or "message", "\n".join(data), last_id)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id":
            last_id = value
