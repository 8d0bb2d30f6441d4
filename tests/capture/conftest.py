"""Helpers of the capture tests: run bytes through a real pipeline and look at the events."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from flightlog.capture import CaptureConfig, CapturePipeline

Capture = Callable[..., list[dict[str, Any]]]


def run_pipeline(
    chunks: Iterable[bytes], *, stream: str = "stdout", step: float = 0.01, **config: Any
) -> tuple[list[dict[str, Any]], CapturePipeline]:
    """Feed each chunk at increasing times, then close; return all events and the pipeline."""
    config.setdefault("env", {})
    pipeline = CapturePipeline(CaptureConfig(**config))
    events: list[dict[str, Any]] = []
    now = 1000.0
    for chunk in chunks:
        events += pipeline.feed(stream, chunk, now).events()
        now += step
    events += pipeline.close(now).events()
    return events, pipeline


@pytest.fixture
def capture() -> Capture:
    """``capture(b"...", b"...", max_rate=..)`` → the stored events of that output."""

    def run(*chunks: bytes, **config: Any) -> list[dict[str, Any]]:
        return run_pipeline(chunks, **config)[0]

    return run
