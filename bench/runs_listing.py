"""The runs listing's cost of its `cause` column: `GET /api/v1/runs?limit=N` over N failed SDK
runs, each with its own traceback and no stored category (the worst case: every row goes
through the fast classifier), the first request and the later ones (the classifier's answers
are remembered by content).

    python bench/runs_listing.py [--runs 1000] [--repeat 7]

Prints one JSON object (milliseconds). Compare with the same script on a tree without the
cause column to read what it adds (the `cause` field is then null).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from _common import emit, machine

TRACEBACK = (
    "Traceback (most recent call last):\n"
    + '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl\n'
    "    return forward_call(*args, **kwargs)\n"
    * 10
    + "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)\n"
)


def fill(home: Path, runs: int) -> None:
    from flightlog.store.sqlite.store import SqliteStore

    store = SqliteStore(home / "flightlog.db")
    t0 = 1_780_000_000.0
    batch = []
    for i in range(runs):
        rec = {"r": f"{i:032x}", "w": "bench", "t": t0 + i}
        batch += [
            {
                **rec,
                "k": "run",
                "s": 1,
                "project": "p",
                "name": f"run-{i}",
                "status": "failed",
                "end_reason": "exception",
                "exit_code": 1,
                "created": t0 + i,
                "started": t0 + i,
                "ended": t0 + i + 1,
                "failure": {
                    "exception": "RuntimeError",
                    "message": "mat1 and mat2",
                    "traceback": TRACEBACK + f"(run {i})\n",
                },
            },
        ]
    store.ingest(batch)
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    from flightlog.server.testing import serve_in_thread

    with tempfile.TemporaryDirectory(prefix="flightlog-bench-listing-") as tmp:
        home = Path(tmp)
        fill(home, args.runs)
        with serve_in_thread(home) as server, httpx.Client(base_url=server.url + "/api/v1", timeout=120) as api:
            times, cause = [], None
            for _ in range(args.repeat):
                started = time.perf_counter()
                page = api.get("/runs", params={"project": "p", "limit": args.runs}).json()
                times.append((time.perf_counter() - started) * 1000)
                cause = page["runs"][0].get("cause")
    emit(
        {
            "benchmark": "runs_listing",
            "runs": args.runs,
            "first_ms": round(times[0], 1),
            "later_median_ms": round(statistics.median(times[1:]), 1),
            "cause": cause,
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
