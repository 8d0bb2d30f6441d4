"""Measuring whether a real server stays responsive: ``/healthz`` probed again and again while
other requests run in threads, each probe timed; and a real server process to measure."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from flightlog.server.tokens import create_token
from flightlog.store.registry import open_store

FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))


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


class ServerSubprocess:
    """`flightlog server --auth` as a process of its own (over the given store), so that what the
    test process does (its clients, its probes) never competes with the server for one GIL."""

    def __init__(self, home: Path, store_uri: str = "") -> None:
        self.home = home
        self.store_uri = store_uri or f"sqlite:///{home / 'flightlog.db'}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
        env["FLIGHTLOG_STORE"] = self.store_uri
        self.proc = subprocess.Popen(
            [FLIGHTLOG, "server", "--home", str(home), "--port", "0", "--auth"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.proc.kill()
            raise AssertionError(f"the server did not start: {line!r}")
        self.url = line.split("listening on ")[1].split()[0]
        self.store = open_store(self.store_uri)

    def token(self, role: str, project: str | None = None) -> str:
        return create_token(self.store, role, project).secret  # type: ignore[arg-type]

    def close(self) -> None:
        self.store.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


@contextmanager
def server_subprocess(home: Path, store_uri: str = "") -> Iterator[ServerSubprocess]:
    server = ServerSubprocess(home, store_uri)
    try:
        yield server
    finally:
        server.close()
