"""What serving evidence costs a model server. Prints ONE JSON object with three parts:

* ``middleware``: the cost per request of ``ServingMiddleware`` in the serving process — the
  same trivial ASGI app called in-process with and without it, per-call times (ns) at the
  default sampling rate; median and p99 of each and the difference of the medians (µs; target
  ≤ 5 µs). The decorator's cost on a trivial function, the same way.
* ``uvicorn``: the p99 latency of the real test app (tests/serving/app.py) under uvicorn, with
  and without the middleware, driven by an async httpx load generator in another process;
  rounds alternate between the two servers in one run; quoted as a ratio (target: within noise).
* ``ingest``: sampled prediction records (sample=1.0) written by one replica into one
  ``flightlog server`` (records/s, from the first buffered record to the replica's run finished,
  i.e. every record turned into an event, journaled and shipped).

    python bench/serving_overhead.py [--calls 200000] [--rounds 4] [--seconds 3] [--concurrency 16] [--records 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
APP_DIR = ROOT / "tests" / "serving"


def _pct(values: list[int], q: float) -> float:
    values = sorted(values)
    return float(values[min(len(values) - 1, int(q * len(values)))])


def middleware_cost(calls: int) -> dict[str, Any]:
    os.environ.setdefault("FLIGHTLOG_HOME", tempfile.mkdtemp(prefix="fl-serving-bench-"))
    os.environ["FLIGHTLOG_QUIET"] = "1"
    os.environ["FLIGHTLOG_CONSOLE"] = "off"
    from flightlog import serving

    replica = serving.attach(
        version="1", endpoint="bench", inputs=["x"], buffer_limit=10 * calls, interval=3600, capture_logs=False
    )

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    wrapped = serving.ServingMiddleware(app)
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/score",
        "headers": [
            (b"host", b"x"),
            (b"content-type", b"application/json"),
            (b"user-agent", b"bench"),
            (b"accept", b"*/*"),
        ],
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b'{"x": 1}', "more_body": False}

    async def send(message: Any) -> None:
        return None

    async def measure(target: Any) -> list[int]:
        out = []
        clock = time.perf_counter_ns
        for _ in range(calls):
            t0 = clock()
            await target(scope, receive, send)
            out.append(clock() - t0)
        return out

    results: dict[str, list[int]] = {"bare": [], "middleware": []}
    for _ in range(2):  # alternate, twice
        for name, target in (("bare", app), ("middleware", wrapped)):
            results[name] += asyncio.run(measure(target))
            replica.buffer.clear()

    @serving.track
    def tracked(x: float) -> float:
        return x * 2

    def plain(x: float) -> float:
        return x * 2

    dec: dict[str, list[int]] = {"bare": [], "decorator": []}
    clock = time.perf_counter_ns
    for name, fn in (("bare", plain), ("decorator", tracked)) * 2:
        for _ in range(calls):
            t0 = clock()
            fn(1.0)
            dec[name].append(clock() - t0)
        replica.buffer.clear()
    replica.close()
    med = {k: statistics.median(v) / 1000 for k, v in results.items()}
    return {
        "sample": replica.sample,
        "calls": calls,
        "bare_us": {"median": med["bare"], "p99": _pct(results["bare"], 0.99) / 1000},
        "with_middleware_us": {"median": med["middleware"], "p99": _pct(results["middleware"], 0.99) / 1000},
        "cost_per_request_us": {
            "median": med["middleware"] - med["bare"],
            "p99": (_pct(results["middleware"], 0.99) - _pct(results["bare"], 0.99)) / 1000,
        },
        "decorator_cost_us": {
            "median": (statistics.median(dec["decorator"]) - statistics.median(dec["bare"])) / 1000,
            "p99": (_pct(dec["decorator"], 0.99) - _pct(dec["bare"], 0.99)) / 1000,
        },
        "target_median_us": 5.0,
    }


LOAD = textwrap.dedent("""
    import asyncio, json, sys, time
    import httpx
    url, seconds, concurrency = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    async def worker(client, end, out):
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            r = await client.post(url, json={"amount": 420, "country": "FR", "email": "a@b.c"})
            out.append((time.perf_counter() - t0) * 1000)
            assert r.status_code == 200
    async def main():
        out = []
        async with httpx.AsyncClient(timeout=30, limits=httpx.Limits(max_connections=concurrency)) as client:
            end = time.perf_counter() + seconds
            await asyncio.gather(*(worker(client, end, out) for _ in range(concurrency)))
        out.sort()
        print(json.dumps({"n": len(out), "p50": out[len(out) // 2], "p99": out[int(0.99 * len(out))]}))
    asyncio.run(main())
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _uvicorn(attach: bool, home: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {
        **os.environ,
        "SERVING_ATTACH": "1" if attach else "0",
        "SERVING_SAMPLE_TEST": "0.01",
        "FLIGHTLOG_HOME": home,
        "FLIGHTLOG_QUIET": "1",
        "FLIGHTLOG_CONSOLE": "off",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "app:app", "--port", str(port), "--log-level", "warning", "--no-access-log"],
        cwd=APP_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/score"
    import httpx

    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.post(url, json={}, timeout=1)
            return proc, url
        except httpx.TransportError:
            if time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("uvicorn did not start") from None
            time.sleep(0.05)


def uvicorn_p99(rounds: int, seconds: float, concurrency: int) -> dict[str, Any]:
    home = tempfile.mkdtemp(prefix="fl-serving-bench-uv-")
    servers = {"without": _uvicorn(False, home), "with": _uvicorn(True, home)}
    got: dict[str, list[dict[str, Any]]] = {"without": [], "with": []}
    try:
        for _, url in servers.values():  # one warm-up round each, not counted (first connections, first flush)
            subprocess.run([sys.executable, "-c", LOAD, url, "1", str(concurrency)], capture_output=True, check=True)
        for _ in range(rounds):
            for name, (_, url) in servers.items():
                out = subprocess.run(
                    [sys.executable, "-c", LOAD, url, str(seconds), str(concurrency)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                got[name].append(json.loads(out))
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(timeout=30)
    p99 = {k: statistics.median(r["p99"] for r in v) for k, v in got.items()}
    return {
        "rounds": rounds,
        "seconds_per_round": seconds,
        "concurrency": concurrency,
        "p99_ms": p99,
        "p50_ms": {k: statistics.median(r["p50"] for r in v) for k, v in got.items()},
        "requests": {k: sum(r["n"] for r in v) for k, v in got.items()},
        "p99_ratio_with_over_without": p99["with"] / p99["without"],
        "per_round": got,
    }


INGEST = textwrap.dedent("""
    import sys, time
    from time import perf_counter
    from flightlog import serving
    n = int(sys.argv[1])
    replica = serving.attach(version="1", endpoint="ingest", inputs=["amount"], sample=1.0, interval=3600,
                             buffer_limit=n + 1, capture_logs=False)
    body = [b'{"amount": 12.5, "country": "FR", "email": "a@b.c"}']
    from flightlog.serving.middleware import _parse_http
    t0 = time.perf_counter()
    for i in range(n):
        replica.record(perf_counter(), 0.002, 200, "r%d" % i, [b'{"score": 0.3}'], body, _parse_http)
    replica.close(finish=True)
    print(time.perf_counter() - t0)
""")


def ingest(records: int) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "src"))
    from flightlog.server.testing import serve_in_thread

    with tempfile.TemporaryDirectory() as tmp, serve_in_thread(Path(tmp) / "srv") as srv:
        env = {
            **os.environ,
            "FLIGHTLOG_URL": srv.url,
            "FLIGHTLOG_HOME": str(Path(tmp) / "home"),
            "FLIGHTLOG_QUIET": "1",
            "FLIGHTLOG_CONSOLE": "off",
            "PYTHONPATH": str(ROOT / "src"),
        }
        env.pop("FLIGHTLOG_TOKEN", None)
        out = subprocess.run(
            [sys.executable, "-c", INGEST, str(records)], env=env, capture_output=True, text=True, check=True
        )
        seconds = float(out.stdout.strip().splitlines()[-1])
        stored = srv.app.state.store.search_runs(project=None)
        return {"records": records, "seconds": seconds, "records_per_s": records / seconds, "runs": len(stored)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--records", type=int, default=20_000)
    args = parser.parse_args()
    result = {
        "bench": "serving_overhead",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "middleware": middleware_cost(args.calls),
        "uvicorn": uvicorn_p99(args.rounds, args.seconds, args.concurrency),
        "ingest": ingest(args.records),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
