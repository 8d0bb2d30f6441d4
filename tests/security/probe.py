"""Measuring whether a real server stays responsive: ``/healthz`` probed again and again while
other requests run in threads, each probe timed; and a real server process to measure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from flightlog.server.tokens import create_token
from flightlog.store.registry import open_store

FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))


def health_while(url: str, work: list[Callable[[], Any]], *, timeout: float = 120) -> tuple[list[float], list[Any]]:
    """Run each of ``work`` in a thread of its own and probe ``url``/healthz until all have ended:
    (every probe's time in seconds, in order; what each piece of work returned or raised)."""
    results: list[Any] = [None] * len(work)

    def go(i: int) -> None:
        try:
            results[i] = work[i]()
        except BaseException as exc:  # noqa: BLE001 - the caller asserts on it
            results[i] = exc

    threads = [threading.Thread(target=go, args=(i,), daemon=True) for i in range(len(work))]
    for t in threads:
        t.start()
    probes: list[float] = []
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=60) as client:
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            start = time.perf_counter()
            assert client.get(f"{url}/healthz").status_code == 200
            probes.append(time.perf_counter() - start)
            time.sleep(0.02)
    for t in threads:
        t.join(timeout=max(0.0, deadline - time.monotonic()))
    return probes, results


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


@dataclass
class HealthUnderAttack:
    """What ``/healthz`` answered while an attack ran: every probe's latency in seconds (a probe
    that got no answer within the probe timeout counts as that timeout), and what each attack
    request returned or raised."""

    latencies: list[float]
    attacks: list[Any]

    def quantile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def describe(self) -> str:
        return (
            f"{len(self.latencies)} probes: median {self.quantile(0.5) * 1000:.0f} ms, "
            f"p90 {self.quantile(0.9) * 1000:.0f} ms, slowest {max(self.latencies) * 1000:.0f} ms"
        )


_PROBE = """
import asyncio, json, sys, time
import httpx

url, seconds, every, timeout = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])

async def main():
    latencies = []
    limits = httpx.Limits(max_connections=400, max_keepalive_connections=50)
    async with httpx.AsyncClient(timeout=timeout, limits=limits) as client:
        try:
            await client.get(url + "/healthz")  # a first connection, not counted
        except httpx.HTTPError:
            pass  # a server held by an earlier window: the probes below will say so
        print("ready", flush=True)
        sys.stdin.readline()  # the attack has started

        async def one(due):
            try:
                ok = (await client.get(url + "/healthz")).status_code == 200
            except httpx.HTTPError:
                ok = False
            latencies.append(time.perf_counter() - due if ok else timeout)

        tasks, start = [], time.perf_counter()
        due = start
        while due - start < seconds:
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            tasks.append(asyncio.create_task(one(due)))
            due += every
        await asyncio.gather(*tasks)
    print(json.dumps(latencies), flush=True)

asyncio.run(main())
"""


def health_under_attack(
    url: str,
    attack: Callable[[], Any],
    *,
    attackers: int = 2,
    seconds: float = 2.0,
    every: float = 0.02,
    probe_timeout: float = 5.0,
) -> HealthUnderAttack:
    """Send ``attack`` again and again from ``attackers`` threads for ``seconds`` while probing
    ``url``/healthz open-loop: a new probe every ``every`` seconds whether or not the earlier ones
    were answered, each timed from when it was due. A server whose event loop is held for a
    stretch then answers every probe due in that stretch late, so the share of slow probes is the
    share of time the server was unavailable (a closed loop of one probe at a time would see one
    slow probe per stall and hide it in any quantile).

    The probes run in a process of their own: the attackers' work in this process (sending,
    reading answers) never delays a probe, so what is measured is the server alone."""
    attacks: list[Any] = []
    stop = threading.Event()

    def attacker() -> None:
        while not stop.is_set():
            try:
                attacks.append(attack())
            except BaseException as exc:  # noqa: BLE001 - the caller asserts on it
                attacks.append(exc)

    probe = subprocess.Popen(
        [sys.executable, "-c", _PROBE, url, str(seconds), str(every), str(probe_timeout)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert probe.stdin is not None and probe.stdout is not None
    threads = [threading.Thread(target=attacker, daemon=True) for _ in range(attackers)]
    try:
        assert probe.stdout.readline().strip() == "ready", "the probe process did not start"
        for t in threads:
            t.start()
        probe.stdin.write("go\n")
        probe.stdin.flush()
        latencies = json.loads(probe.stdout.readline())
    finally:
        stop.set()
        for t in threads:
            if t.ident is not None:  # started
                t.join(timeout=probe_timeout * 4)
        probe.kill()
        probe.wait()
        for stream in (probe.stdin, probe.stdout):
            if stream is not None:
                stream.close()
    return HealthUnderAttack(latencies, attacks)


def assert_healthy_under_attack(
    url: str, attack: Callable[[], Any], *, limit: float = 0.1, tries: int = 6, **options: Any
) -> HealthUnderAttack:
    """``/healthz`` answered within ``limit`` (issue 31: 100 ms) while ``attack`` ran (see
    :func:`health_under_attack`): the median probe within ``limit``, and the 90th percentile
    within ten times it (a server whose loop is held a tenth of the time fails that).

    Robust on a loaded 2-core machine (eight engineers' tests beside this one): the probes are
    open-loop, every 20 ms, from a process of their own (never slowed by the attackers in this
    one), so one slow probe is one sample among a hundred; the bound is on the median (and a
    loose one on the 90th percentile), never on the slowest; and up to ``tries`` windows are
    measured, the best kept — a held event loop is slow in every window, a neighbour's burst of
    CPU in one. Returns the window that passed."""
    windows: list[HealthUnderAttack] = []
    for _ in range(tries):
        window = health_under_attack(url, attack, **options)
        windows.append(window)
        assert len(window.latencies) >= 20, window.describe()
        if window.quantile(0.5) < limit and window.quantile(0.9) < 10 * limit:
            return window
    best = min(windows, key=lambda w: (w.quantile(0.5), w.quantile(0.9)))
    raise AssertionError(
        f"/healthz was slower than {limit * 1000:.0f} ms (median) or {limit * 10000:.0f} ms (90th percentile) "
        f"under attack in every try; best: {best.describe()}"
    )
