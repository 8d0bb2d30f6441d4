"""Load test of the scaled setup: many writers and readers, two servers, one PostgreSQL.

W writers (async clients, spread over --procs processes) each own one run and, every
--interval seconds, POST one ingest batch (a metrics record of --points points and a logs
record of --lines lines, in the wire format and with the headers the SDK's shipper uses) to
one of two `flightlog server` processes sharing one PostgreSQL store. A writer whose server
fails (refused, reset, 5xx, timeout) sends the same batch — same sequence numbers — to the
other server: that is the failover the SDK's journal gives (a replay is idempotent).
Meanwhile R readers list runs and tail logs on both servers. With --kill-at F, server A is
killed (SIGKILL) after F of the duration.

At the end every run is read back from PostgreSQL: each point and each log line the writers
had acknowledged must be there exactly once (no gap, no duplicate). Prints one JSON object:
batches/s and points/s, ingest latency p50/p99, read latencies, read errors, failovers, the
check, and the CPU the two servers and PostgreSQL spent per batch (user + system seconds of
their processes over the run, divided by the batches acknowledged: a figure that a busy
machine inflates far less than it inflates latencies), with the load average before and after.

With --base REF the same load runs against the servers of git ref REF too (its tree extracted
with ``git archive``, as bench/ab.py does), each side on a fresh database of the same
PostgreSQL, alternating which side goes first over --rounds; the JSON then holds both sides and
the ratios head / base.

    python bench/load.py                                   # 200 writers, 500 batches/s, 5 min, kill at half time
    python bench/load.py --writers 50 --duration 60        # a smaller run
    python bench/load.py --base main --duration 60         # this tree against main's, alternated
    python bench/load.py --store postgresql://…            # an existing, empty database (no --base)

Without --store it starts a throw-away PostgreSQL (flightlog.store.postgres.testing).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from array import array
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import psutil
from _common import ROOT, emit, machine

from flightlog.redaction import REDACTED_HEADER, REDACTION_VERSION


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ── writers ──────────────────────────────────────────────────────────────────
def _records(run_id: str, seq: int, step: int, points: int, lines: int, batch_no: int) -> list[dict[str, Any]]:
    from flightlog.logevents import LogBatch
    from flightlog.schema.values import encode_series, log_chunk_payload

    now = time.time()
    steps = array("q", range(step, step + points))
    times = array("d", (now + i * 1e-6 for i in range(points)))
    values = array("d", (1.0 / (s + 1) for s in steps))
    logs = LogBatch()
    for i in range(lines):
        logs.append(now + i * 1e-6, "stdout", 20, f"batch {batch_no} line {i} step {step}")
    base = {"r": run_id, "w": "w1", "t": now}
    return [
        {**base, "k": "metrics", "s": seq, "attempt": 1, "series": {"loss": encode_series(steps, times, values)}},
        {**base, "k": "logs", "s": seq + 1, **log_chunk_payload(logs)},
    ]


async def _writer(servers: list[str], token: str, args: Any, deadline: float, out: dict[str, Any]) -> None:
    from flightlog.transport.wire import MEDIA_TYPE, encode_batches

    run_id = uuid.uuid4().hex
    which = random.randrange(len(servers))
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": MEDIA_TYPE,
        "Content-Encoding": "gzip",
        REDACTED_HEADER: REDACTION_VERSION,  # the SDK redacts its records before it ships them, and says so
    }
    latencies: list[float] = []
    failovers = 0
    seq, step, batch_no = 1, 0, 0
    now = time.time()
    first = [
        {
            "k": "run",
            "r": run_id,
            "w": "w1",
            "s": seq,
            "t": now,
            "project": "load",
            "name": run_id[:8],
            "status": "running",
            "created": now,
            "started": now,
        }
    ]
    # aiohttp's client, not httpx's: the writers are the load, not what is measured, and on a
    # 2-core machine httpx's CPU per request (several times aiohttp's) capped the offered rate
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=1)) as client:

        async def send(records: list[dict[str, Any]]) -> None:
            nonlocal which, failovers
            body = encode_batches(records)[0][1]
            while True:
                t0 = time.perf_counter()
                try:
                    async with client.post(f"{servers[which]}/api/v1/ingest", data=body, headers=headers) as r:
                        await r.read()
                        if r.status < 500:
                            if r.status >= 400:
                                raise RuntimeError(f"ingest refused: {r.status} {(await r.text())[:200]}")
                            latencies.append(time.perf_counter() - t0)
                            return
                except (TimeoutError, aiohttp.ClientError):
                    pass
                which = (which + 1) % len(servers)  # the other server: same records, same sequence numbers
                failovers += 1
                await asyncio.sleep(0.2)

        await send(first)
        seq += 1
        # a fixed cadence (one batch every --interval seconds, whatever the answer's latency), so
        # the offered rate is writers / interval and a slow server does not lower it
        tick = time.monotonic() + random.random() * args.interval
        await asyncio.sleep(max(0.0, tick - time.monotonic()))
        while time.time() < deadline:
            await send(_records(run_id, seq, step, args.points, args.lines, batch_no))
            seq, step, batch_no = seq + 2, step + args.points, batch_no + 1
            tick += args.interval
            await asyncio.sleep(max(0.0, tick - time.monotonic()))
        end = time.time()
        await send(
            [
                {
                    "k": "run",
                    "r": run_id,
                    "w": "w1",
                    "s": seq,
                    "t": end,
                    "status": "succeeded",
                    "ended": end,
                    "exit_code": 0,
                }
            ]
        )
    out["runs"].append({"id": run_id, "points": step, "lines": batch_no * args.lines})
    out["latencies"].extend(latencies)
    out["failovers"] += failovers


def _writer_process(servers: list[str], token: str, args: Any, count: int, deadline: float, queue: Any) -> None:
    out: dict[str, Any] = {"runs": [], "latencies": [], "failovers": 0}

    async def main() -> None:
        await asyncio.gather(*(_writer(servers, token, args, deadline, out) for _ in range(count)))

    asyncio.run(main())
    out["cpu_s"] = time.process_time()  # this writer process's user + system CPU
    queue.put(out)


# ── readers ──────────────────────────────────────────────────────────────────
async def _reader(
    servers: list[str],
    token: str,
    deadline: float,
    lists: list[float],
    tails: list[float],
    errors: list[str],
    down: set[str],
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=30, headers=headers) as client:
        while time.time() < deadline:
            # as behind a load balancer: a server that failed a request gets no more (a health check)
            server = random.choice([s for s in servers if s not in down] or servers)
            try:
                t0 = time.perf_counter()
                r = await client.get(f"{server}/api/v1/runs", params={"project": "load", "limit": 50})
                r.raise_for_status()
                lists.append(time.perf_counter() - t0)
                runs = r.json()["runs"]
                if runs:
                    t0 = time.perf_counter()
                    r = await client.get(
                        f"{server}/api/v1/runs/{random.choice(runs)['id']}/logs", params={"tail": "true", "limit": 50}
                    )
                    r.raise_for_status()
                    tails.append(time.perf_counter() - t0)
            except httpx.HTTPError as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:200])  # the killed server's in-flight requests
                if isinstance(exc, httpx.TransportError):
                    down.add(server)
            await asyncio.sleep(0.5)


# ── servers ──────────────────────────────────────────────────────────────────
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_server(store: str, home: Path, src: Path | None = None) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "FLIGHTLOG_STORE": store, "FLIGHTLOG_HOME": str(home)}
    if src is not None:  # another tree's flightlog (--base)
        env["PYTHONPATH"] = str(src)
    proc = subprocess.Popen(
        [sys.executable, "-m", "flightlog", "server", "--port", str(port), "--auth", "--home", str(home)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(home.with_suffix(".log"), "wb"),  # noqa: SIM115
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the server did not start: {home.with_suffix('.log').read_text()[-2000:]}")
        time.sleep(0.2)


class CpuMeter:
    """CPU seconds (user + system) spent by processes and their children: the two servers, and
    PostgreSQL's postmaster with every backend (a backend that ended is in its parent's children
    times; a killed server counts what it had spent when last seen)."""

    def __init__(self, pids: list[int]) -> None:
        self.procs = [psutil.Process(p) for p in pids]
        self.last: dict[int, float] = {}  # top-level process → its own and its reaped children's CPU
        self.live: dict[int, float] = {}  # its live children's CPU, read again each time
        self.start = self._total()

    def _total(self) -> float:
        live: dict[int, float] = {}
        for proc in self.procs:
            try:
                t = proc.cpu_times()
                self.last[proc.pid] = t.user + t.system + t.children_user + t.children_system
                for child in proc.children(recursive=True):
                    try:
                        ct = child.cpu_times()
                        live[child.pid] = ct.user + ct.system
                    except psutil.Error:
                        pass
            except psutil.Error:  # the killed server: what it had spent is what was last seen
                pass
        self.live = live
        return sum(self.last.values()) + sum(self.live.values())

    def sample(self) -> None:
        self._total()

    def spent(self) -> float:
        return self._total() - self.start


def _busy(times: Any) -> float:
    """CPU seconds the machine spent on anything but idling (all cores)."""
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


def _check(store_uri: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Every acknowledged point and line stored exactly once."""
    from flightlog.models import LogQuery
    from flightlog.store.postgres.store import PostgresStore

    store = PostgresStore(store_uri)
    store.query_timeout = None
    bad: list[dict[str, Any]] = []
    stored_points = stored_lines = 0
    try:
        for run in runs:
            steps = list(store.metric_history(run["id"], "loss").steps) if run["points"] else []
            lines = len(store.logs(run["id"], LogQuery()))
            stored_points += len(steps)
            stored_lines += lines
            if steps != list(range(run["points"])) or lines != run["lines"]:
                bad.append(
                    {
                        "run": run["id"],
                        "sent_points": run["points"],
                        "stored_points": len(steps),
                        "distinct_points": len(set(steps)),
                        "sent_lines": run["lines"],
                        "stored_lines": lines,
                    }
                )
        statuses = {r.status for r in store.search_runs(project="load")}
    finally:
        store.close()
    return {
        "runs": len(runs),
        "stored_points": stored_points,
        "stored_lines": stored_lines,
        "runs_with_gaps_or_duplicates": bad[:20],
        "exactly_once": not bad,
        "statuses": sorted(statuses),
    }


def _materialise(ref: str, into: Path) -> Path:
    """The ``src`` of git ref REF (its tree from `git archive`; the working tree is never touched)."""
    import tarfile

    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"bench/load.py: cannot archive {ref!r}: {archive.stderr.decode(errors='replace').strip()}")
    tar_path = into / "base.tar"
    tar_path.write_bytes(archive.stdout)
    with tarfile.open(tar_path) as tar:
        tar.extractall(into / "base", filter="data")
    return into / "base" / "src"


def run_load(store_uri: str, args: Any, work: Path, src: Path | None, pg_pid: int | None) -> dict[str, Any]:
    """One load run against two servers (of ``src``, else this tree) over ``store_uri``."""
    from flightlog.server.tokens import create_token
    from flightlog.store.registry import open_store

    if src is not None:  # the base tree migrates its own database, as its servers would
        subprocess.run(
            [
                sys.executable,
                "-c",
                f"from flightlog.store.registry import open_store; open_store({store_uri!r}).close()",
            ],
            env={**os.environ, "PYTHONPATH": str(src)},
            check=True,
        )
    seed: Any = open_store(store_uri) if src is None else None
    if seed is None:  # a token in the base's database, made by the base's own code
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                "from flightlog.server.tokens import create_token; from flightlog.store.registry import open_store; "
                f"s = open_store({store_uri!r}); print(create_token(s, 'admin', None, 'load').secret); s.close()",
            ],
            env={**os.environ, "PYTHONPATH": str(src)},
            capture_output=True,
            text=True,
            check=True,
        )
        token = out.stdout.strip().splitlines()[-1]
    else:
        token = create_token(seed, "admin", None, "load").secret
        seed.close()
    work.mkdir(parents=True, exist_ok=True)
    servers = [_start_server(store_uri, work / name, src) for name in ("a", "b")]
    urls = [url for _, url in servers]
    meter = CpuMeter([p.pid for p, _ in servers])
    pg_meter = CpuMeter([pg_pid] if pg_pid else [])
    result: dict[str, Any] = {"load_average_before": [round(x, 2) for x in os.getloadavg()]}
    try:
        start = time.time()
        machine_start = psutil.cpu_times()
        own_start = time.process_time()  # the readers', the killer's and the meters' CPU (this process)
        deadline = start + args.duration
        queue: Any = multiprocessing.Queue()
        per = [args.writers // args.procs + (1 if i < args.writers % args.procs else 0) for i in range(args.procs)]
        procs = [
            multiprocessing.Process(target=_writer_process, args=(urls, token, args, n, deadline, queue))
            for n in per
            if n
        ]
        for p in procs:
            p.start()
        lists: list[float] = []
        tails: list[float] = []
        read_errors: list[str] = []

        async def readers_and_killer() -> float | None:
            async def killer() -> float | None:
                if not args.kill_at:
                    return None
                await asyncio.sleep(args.duration * args.kill_at)
                meter.sample()  # what server A spent up to its end
                servers[0][0].send_signal(signal.SIGKILL)
                return time.time() - start

            async def metering() -> None:
                while time.time() < deadline:
                    meter.sample()
                    pg_meter.sample()
                    await asyncio.sleep(1.0)

            down: set[str] = set()  # the servers readers saw fail (shared, as a load balancer's view)
            tasks = [_reader(urls, token, deadline, lists, tails, read_errors, down) for _ in range(args.readers)]
            got = await asyncio.gather(killer(), metering(), *tasks)
            return got[0]

        killed_at = asyncio.run(readers_and_killer())
        machine_end = psutil.cpu_times()
        readers_cpu = time.process_time() - own_start
        outs = [queue.get(timeout=args.duration + 600) for _ in procs]
        for p in procs:
            p.join()
        elapsed = time.time() - start
        server_cpu, pg_cpu = meter.spent(), pg_meter.spent()
        cpu = server_cpu + pg_cpu
        generator_cpu = readers_cpu + sum(o["cpu_s"] for o in outs)
        machine_busy = _busy(machine_end) - _busy(machine_start)
        machine_all = sum(machine_end) - sum(machine_start)
        runs = [r for o in outs for r in o["runs"]]
        latencies = [x for o in outs for x in o["latencies"]]
        batches = max(1, len(latencies))
        points = sum(r["points"] for r in runs)
        result.update(
            {
                "elapsed_s": round(elapsed, 1),
                "points": points,
                "log_lines": sum(r["lines"] for r in runs),
                "batches_per_s": round(len(latencies) / elapsed, 1),
                "points_per_s": round(points / elapsed),
                "ingest_requests": len(latencies),
                "ingest_p50_ms": round(1000 * (percentile(latencies, 0.5) or 0), 1),
                "ingest_p99_ms": round(1000 * (percentile(latencies, 0.99) or 0), 1),
                "list_runs_p50_ms": round(1000 * (percentile(lists, 0.5) or 0), 1),
                "list_runs_p99_ms": round(1000 * (percentile(lists, 0.99) or 0), 1),
                "tail_logs_p50_ms": round(1000 * (percentile(tails, 0.5) or 0), 1),
                "tail_logs_p99_ms": round(1000 * (percentile(tails, 0.99) or 0), 1),
                "reads": len(lists) + len(tails),
                "read_errors": len(read_errors),
                "failovers": sum(o["failovers"] for o in outs),
                "server_a_killed_at_s": None if killed_at is None else round(killed_at, 1),
                "servers_and_postgres_cpu_s": round(cpu, 2),
                "cpu_ms_per_batch": round(1000 * cpu / batches, 3),
                "servers_cpu_ms_per_batch": round(1000 * server_cpu / batches, 3),
                "postgres_cpu_ms_per_batch": round(1000 * pg_cpu / batches, 3),
                # the rest of the machine: the load itself (writers and readers), and what else ran
                "load_generator_cpu_ms_per_batch": round(1000 * generator_cpu / batches, 3),
                "machine_cpu_busy_pct": round(100 * machine_busy / machine_all, 1) if machine_all else None,
                "machine_cpu_s": {
                    "busy": round(machine_busy, 1),
                    "servers": round(server_cpu, 1),
                    "postgres": round(pg_cpu, 1),
                    "load_generator": round(generator_cpu, 1),
                    "other_processes": round(machine_busy - cpu - generator_cpu, 1),
                },
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
                "check": _check(store_uri, runs),
            }
        )
    finally:
        for proc, _ in servers:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=60)
    return result


_COMPARED = (
    "batches_per_s",
    "points_per_s",
    "ingest_p50_ms",
    "ingest_p99_ms",
    "list_runs_p99_ms",
    "tail_logs_p99_ms",
    "cpu_ms_per_batch",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--writers", type=int, default=200)
    parser.add_argument("--procs", type=int, default=4, help="processes the writers are spread over")
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--duration", type=float, default=300.0, help="seconds of writing")
    parser.add_argument(
        "--interval", type=float, default=0.4, help="seconds between one writer's batches (200 / 0.4 = 500 batches/s)"
    )
    parser.add_argument("--points", type=int, default=100, help="metric points per batch")
    parser.add_argument("--lines", type=int, default=20, help="log lines per batch")
    parser.add_argument("--kill-at", type=float, default=0.5, help="kill server A after this fraction (0: never)")
    parser.add_argument("--store", help="an empty PostgreSQL database (default: a throw-away server)")
    parser.add_argument("--base", help="also run the servers of this git ref, alternated with this tree's")
    parser.add_argument("--rounds", type=int, default=1, help="with --base: rounds of both sides")
    args = parser.parse_args()
    if args.base and args.store:
        parser.error("--base needs a throw-away PostgreSQL (a fresh database per side): leave --store out")

    pg = None
    pg_pid = None
    work = Path(tempfile.mkdtemp(prefix="flightlog-load-"))
    config = {k: v for k, v in vars(args).items() if k != "store"}
    result: dict[str, Any] = {"machine": machine(), "config": config}
    try:
        if args.store is None:
            from flightlog.store.postgres.testing import TemporaryPostgres

            pg = TemporaryPostgres(max_connections=300).start()
            pg_pid = pg.process.pid if pg.process is not None else None
        if not args.base:
            store_uri = args.store or pg.create_database("load")  # type: ignore[union-attr]
            result.update(run_load(store_uri, args, work / "head", None, pg_pid))
        else:
            base_src = _materialise(args.base, work)
            sides: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
            for round_no in range(args.rounds):
                order = ("base", "head") if round_no % 2 == 0 else ("head", "base")
                for side in order:
                    uri = pg.create_database(f"load_{side}_{round_no}")  # type: ignore[union-attr]
                    src = base_src if side == "base" else None
                    sides[side].append(run_load(uri, args, work / f"{side}{round_no}", src, pg_pid))
                    print(
                        f"round {round_no + 1}/{args.rounds} {side}: "
                        + ", ".join(f"{k}={sides[side][-1][k]}" for k in _COMPARED),
                        file=sys.stderr,
                    )
            result["base"] = args.base
            result["rounds"] = sides
            medians = {
                side: {k: statistics.median(r[k] for r in runs) for k in _COMPARED} for side, runs in sides.items()
            }
            result["median"] = medians
            result["ratios_head_over_base"] = {
                k: round(medians["head"][k] / medians["base"][k], 3) if medians["base"][k] else None for k in _COMPARED
            }
            result["exactly_once"] = all(r["check"]["exactly_once"] for runs in sides.values() for r in runs)
    finally:
        if pg is not None:
            pg.cleanup()
    emit(result)


if __name__ == "__main__":
    main()
