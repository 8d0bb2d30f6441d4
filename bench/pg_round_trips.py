"""Round trips of one PostgreSQL ingest transaction: how many times a server's ingest waits for
the database, whatever the machine's load.

A proxy between the store and a throw-away PostgreSQL delays every answer of the database by
--delay-ms (each packet from its arrival, in order); one ``ingest_batches`` of --writers
batches (a metrics record of 100 points and a logs record of 20 lines each, as
``bench/load.py`` sends, to runs that exist and statements already prepared) then takes about
that delay times the number of times it waited. Prints the transaction's wall time and that
number (the median of --rounds transactions); with --base REF, the same under REF's tree (its
``src`` from ``git archive``) first, each in a fresh process on a fresh database (a count of
waits, which the machine's load barely moves: the delay dwarfs the work).

    python bench/pg_round_trips.py --base main
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from _common import ROOT, emit, machine


def _batch(run: str, number: int) -> list[dict[str, Any]]:
    from flightlog.logevents import LogBatch
    from flightlog.schema.values import encode_series, log_chunk_payload

    steps = array("q", range(100 * number, 100 * number + 100))
    series = encode_series(steps, array("d", (1000.0 + s for s in steps)), array("d", (s * 0.5 for s in steps)))
    logs = LogBatch()
    for i in range(20):
        logs.append(1000.0 + i, "stdout", 20, f"batch {number} line {i}")
    base = {"r": run, "w": "w1", "t": 1000.0}
    return [
        {**base, "k": "metrics", "s": 2 * number + 1, "series": {"loss": series}},
        {**base, "k": "logs", "s": 2 * number + 2, **log_chunk_payload(logs)},
    ]


def _delaying_proxy(target_port: int, delay: float) -> int:
    """A loopback TCP proxy (in a thread) that holds every packet from the server for ``delay``."""
    ready = threading.Event()
    box: dict[str, int] = {}

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, hold: float) -> None:
        queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue()

        async def forward() -> None:
            while True:
                at, data = await queue.get()
                if data is None:
                    writer.close()
                    return
                wait = at + hold - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()

        task = asyncio.ensure_future(forward())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((time.monotonic(), data))
        except OSError:
            pass
        queue.put_nowait((0.0, None))
        await task

    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", target_port)
        await asyncio.gather(pipe(client_r, server_w, 0.0), pipe(server_r, client_w, delay))

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        box["port"] = server.sockets[0].getsockname()[1]
        ready.set()
        await server.serve_forever()

    threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()
    ready.wait()
    return box["port"]


def measure(uri: str, writers: int, rounds: int, delay: float) -> dict[str, Any]:
    """In this process's flightlog (PYTHONPATH): ``rounds`` transactions through the proxy."""
    from flightlog.store.postgres.store import PostgresStore

    parts = urlsplit(uri)
    port = _delaying_proxy(int(parts.port or 5432), delay)
    store = PostgresStore(urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{port}")))
    runs = [f"run-{i}" for i in range(writers)]
    walls = []
    try:
        for number in range(6 + rounds):  # the first six: runs made, statements prepared (after 5 uses)
            t0 = time.perf_counter()
            results = store.ingest_batches([_batch(run, number) for run in runs])
            wall = time.perf_counter() - t0
            assert all(r.applied == 2 for r in results), results
            if number >= 6:
                walls.append(wall)
    finally:
        store.close()
    wall = statistics.median(walls)
    return {"transaction_ms": round(1000 * wall, 1), "round_trips": round(wall / delay, 1)}


def _materialise(ref: str, into: Path) -> Path:
    import tarfile

    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"bench/pg_round_trips.py: cannot archive {ref!r}: {archive.stderr.decode(errors='replace')}")
    (into / "base.tar").write_bytes(archive.stdout)
    with tarfile.open(into / "base.tar") as tar:
        tar.extractall(into / "base", filter="data")
    return into / "base" / "src"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", type=int, default=10, help="batches in the transaction, one run each")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--delay-ms", type=float, default=25.0)
    parser.add_argument("--base", help="also measure this git ref's store, alternated")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # a database URI: one side, in this process
    args = parser.parse_args()
    delay = args.delay_ms / 1000
    if args.measure:
        print(json.dumps(measure(args.measure, args.writers, args.rounds, delay)))
        return
    from flightlog.store.postgres.testing import TemporaryPostgres

    result: dict[str, Any] = {"machine": machine(), "config": vars(args), "load_average": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="flightlog-rt-") as work, TemporaryPostgres() as pg:
        sides = {"head": str(ROOT / "src")}
        if args.base:
            sides = {"base": str(_materialise(args.base, Path(work))), **sides}
        for side, src in sides.items():
            uri = pg.create_database(f"rt_{side}")
            out = subprocess.run(
                [sys.executable, __file__, "--measure", uri, "--writers", str(args.writers)]
                + ["--rounds", str(args.rounds), "--delay-ms", str(args.delay_ms)],
                env={**os.environ, "PYTHONPATH": src},
                capture_output=True,
                text=True,
                check=True,
            )
            result[side] = json.loads(out.stdout.strip().splitlines()[-1])
    emit(result)


if __name__ == "__main__":
    main()
