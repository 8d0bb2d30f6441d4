"""Journal records built by hand (as the SDK writes them), for tests that need many runs or points fast."""

from __future__ import annotations

import time
from array import array
from collections.abc import Sequence
from typing import Any

from flightlog.logevents import LogBatch, level_code
from flightlog.schema.values import encode_series, log_chunk_payload


class Writer:
    """One writer of one run: numbers its records like the SDK does."""

    def __init__(self, run_id: str, writer: str = "w1") -> None:
        self.run_id, self.writer, self.seq = run_id, writer, 0

    def record(self, k: str, /, t: float | None = None, **payload: Any) -> dict[str, Any]:
        self.seq += 1
        return {
            "k": k,
            "r": self.run_id,
            "w": self.writer,
            "s": self.seq,
            "t": time.time() if t is None else t,
            **payload,
        }

    def run(
        self, project: str, name: str | None = None, status: str = "running", t: float | None = None, **fields: Any
    ) -> dict[str, Any]:
        now = time.time() if t is None else t
        return self.record("run", t=now, project=project, name=name, status=status, created=now, started=now, **fields)

    def metrics(
        self, series: dict[str, tuple[Sequence[int], Sequence[float]]], t0: float = 1_700_000_000.0
    ) -> dict[str, Any]:
        encoded = {}
        for name, (steps, values) in series.items():
            times = array("d", (t0 + s for s in steps))
            encoded[name] = encode_series(array("q", steps), times, array("d", values))
        return self.record("metrics", attempt=1, series=encoded)

    def logs(self, events: Sequence[tuple[float, str, str, str]]) -> dict[str, Any]:
        """events: (time, stream, level, message)."""
        batch = LogBatch()
        for t, stream, level, message in events:
            batch.append(t, stream, level_code(level), message)
        return self.record("logs", **log_chunk_payload(batch))
