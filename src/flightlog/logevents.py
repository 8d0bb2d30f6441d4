"""The shape of captured log events, shared by the SDK, the runner's capture pipeline and stores.

Events travel in columnar batches (`LogBatch`): one list per field, so that capturing,
journaling and storing a million lines costs per batch rather than per line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["LEVELS", "LEVEL_NAMES", "level_code", "level_name", "LogBatch", "STREAMS"]

# Level codes follow Python's logging numbers so they compare the same way.
LEVELS: dict[str, int] = {
    "trace": 5,
    "debug": 10,
    "info": 20,
    "notice": 25,
    "warning": 30,
    "error": 40,
    "critical": 50,
}
LEVEL_NAMES: dict[int, str] = {v: k for k, v in LEVELS.items()}
_ALIASES = {
    "warn": "warning",
    "err": "error",
    "fatal": "critical",
    "crit": "critical",
    "panic": "critical",
    "emerg": "critical",
    "alert": "critical",
    "dbg": "debug",
    "information": "info",
    "verbose": "debug",
    "exception": "error",
    "severe": "error",
}
STREAMS = ("stdout", "stderr", "sdk")


def level_code(name: str | int | None, default: int = 20) -> int:
    """``"WARN"``, ``"warning"``, ``30``, ``"30"`` → 30; unknown names give ``default``."""
    if name is None:
        return default
    if isinstance(name, int):
        return name
    key = str(name).strip().lower()
    if key.isascii() and key.isdigit():  # ASCII only: "¹".isdigit() is true too, and int() refuses it
        return int(key)
    key = _ALIASES.get(key, key)
    return LEVELS.get(key, default)


def level_name(code: int) -> str:
    if code in LEVEL_NAMES:
        return LEVEL_NAMES[code]
    best = max((c for c in LEVEL_NAMES if c <= code), default=10)
    return LEVEL_NAMES[best]


@dataclass(slots=True)
class LogBatch:
    """Columnar log events; every list has the same length.

    ``level`` holds codes (see LEVELS); ``fields`` holds a dict of structured fields or None;
    ``rank`` and ``stage`` may be None per event.
    """

    time: list[float] = field(default_factory=list)
    stream: list[str] = field(default_factory=list)
    level: list[int] = field(default_factory=list)
    component: list[str | None] = field(default_factory=list)
    message: list[str] = field(default_factory=list)
    fields: list[dict[str, Any] | None] = field(default_factory=list)
    rank: list[int | None] = field(default_factory=list)
    attempt: list[int] = field(default_factory=list)
    stage: list[str | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.time)

    def append(
        self,
        time: float,
        stream: str,
        level: int,
        message: str,
        *,
        component: str | None = None,
        fields: dict[str, Any] | None = None,
        rank: int | None = None,
        attempt: int = 1,
        stage: str | None = None,
    ) -> None:
        self.time.append(time)
        self.stream.append(stream)
        self.level.append(level)
        self.component.append(component)
        self.message.append(message)
        self.fields.append(fields)
        self.rank.append(rank)
        self.attempt.append(attempt)
        self.stage.append(stage)

    def extend(self, other: LogBatch) -> None:
        for name in self.__slots__:
            getattr(self, name).extend(getattr(other, name))

    def split(self, size: int) -> list[LogBatch]:
        """Consecutive pieces of at most ``size`` events (none for an empty batch)."""
        n = len(self)
        if n <= size:
            return [self] if n else []
        cols = self.to_columns()
        return [LogBatch(**{k: v[i : i + size] for k, v in cols.items()}) for i in range(0, n, size)]

    def to_columns(self) -> dict[str, list[Any]]:
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_columns(cls, cols: dict[str, list[Any]]) -> LogBatch:
        return cls(**{k: list(v) for k, v in cols.items() if k in cls.__slots__})

    def events(self) -> list[dict[str, Any]]:
        """Row view, for small batches and tests."""
        cols = self.to_columns()
        return [{k: cols[k][i] for k in cols} for i in range(len(self))]
