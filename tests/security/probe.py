"""Measuring whether a real server stays responsive: ``/healthz`` probed again and again while
other requests run in threads, each probe timed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx


def slowest_health_while(url: str, work: list[Callable[[], Any]], *, timeout: float = 120) -> tuple[float, list[Any]]:
    """Run each of ``work`` in a thread of its own and probe ``url``/healthz until all have ended:
    (the slowest probe in seconds, what each piece of work returned or raised)."""
    results: list[Any] = [None] * len(work)

    def go(i: int) -> None:
        try:
            results[i] = work[i]()
        except BaseException as exc:  # noqa: BLE001 - the caller asserts on it
            results[i] = exc

    threads = [threading.Thread(target=go, args=(i,), daemon=True) for i in range(len(work))]
    for t in threads:
        t.start()
    slowest, deadline = 0.0, time.monotonic() + timeout
    with httpx.Client(timeout=60) as client:
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            start = time.perf_counter()
            assert client.get(f"{url}/healthz").status_code == 200
            slowest = max(slowest, time.perf_counter() - start)
            time.sleep(0.02)
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    return slowest, results
