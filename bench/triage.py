"""`flightlog triage` over 100,000 runs of which 10,000 failed, on the embedded store and (when
PostgreSQL's binaries are there, or FLIGHTLOG_TEST_POSTGRES names a server) on PostgreSQL.

    python bench/triage.py [--runs 100000] [--failed 10000] [--causes 20] [--repeat 3] [--no-postgres]

The runs are seeded in bulk through the store's ingest (one transaction per 5,000 records), not
by real processes: every failure has its frames and traceback (as the SDK and the runner store
them), half also the runner's stored category (the other half the classifier reads). Every failure's message differs (paths, ids,
sizes). Prints one JSON object: seconds per triage (the best of ``--repeat``, onsets included),
the groups found and the target (2 s).
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path
from typing import Any

from _common import emit, fresh_home, machine

TARGET_S = 2.0
NAMES = 50

CAUSES: list[tuple[str, str, str, str]] = [
    # exception, message template, the user's function, stored category
    (
        "FileNotFoundError",
        "[Errno 2] No such file or directory: '/mnt/data/{u}/shard-{i}.csv'",
        "load_shard",
        "missing_file",
    ),
    ("KeyError", "'sample_{i}'", "lookup", "data_error"),
    (
        "RuntimeError",
        "CUDA out of memory. Tried to allocate {f:.2f} GiB (GPU {g}; 79.35 GiB total)",
        "forward",
        "oom_killed",
    ),
    ("ConnectionRefusedError", "[Errno 111] Connection refused: 10.0.{g}.{i2}:{port}", "fetch", "service_unavailable"),
    ("ValueError", "lr must be positive, got -{f:.4f}", "configure", "bad_parameter"),
    ("PermissionError", "[Errno 13] Permission denied: '/home/u{i}/.cache/x'", "save", "credentials_error"),
    ("OSError", "[Errno 28] No space left on device: '/scratch/{u}'", "checkpoint", "disk_full"),
    ("ModuleNotFoundError", "No module named 'plugin_{g}'", "setup", "dependency_error"),
    ("AssertionError", "batch {i} has {port} rows, expected 512", "check_batch", "data_error"),
    ("ZeroDivisionError", "division by zero", "normalise", "code_error"),
]


def _traceback(exc: str, message: str, function: str, i: int) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "/work/job-{i}/train.py", line 88, in main\n    {function}(cfg)\n'
        f'  File "/work/job-{i}/train.py", line 41, in {function}\n    raise\n'
        f'  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl\n'
        "    return forward_call(*args, **kwargs)\n"
        f"{exc}: {message}\n"
    )


def seed(store: Any, runs: int, failed: int, causes: int, now: float) -> None:
    rng = random.Random(1)
    fail_at = set(rng.sample(range(runs), failed))
    t0 = now - 6 * 86400
    step = (now - t0 - 60) / runs
    batch: list[dict[str, Any]] = []
    for i in range(runs):
        created = t0 + i * step
        name = f"job-{i % NAMES}"
        rec: dict[str, Any] = {"r": f"{i:032x}", "w": "bench", "t": created, "k": "run", "s": 1}
        row: dict[str, Any] = {"project": "bench", "name": name, "created": created, "started": created + 1}
        if i in fail_at:
            exc, template, function, category = CAUSES[i % min(causes, len(CAUSES))]
            variant = (i // len(CAUSES)) % max(1, causes // len(CAUSES))  # more causes: the same kind at another place
            fn = f"{function}_{variant}" if causes > len(CAUSES) else function
            message = template.format(
                u=f"{rng.getrandbits(64):016x}",
                i=rng.randrange(10**6),
                i2=rng.randrange(256),
                f=rng.uniform(0.1, 40),
                g=rng.randrange(8),
                port=rng.randrange(1024, 65535),
            )
            failure: dict[str, Any] = {
                "exception": exc,
                "message": message,
                "traceback": _traceback(exc, message, fn, i),
            }
            if i % 2 == 0:  # as the runner stores it: with the category (the SDK stores none)
                failure["category"] = category
            failure["frames"] = [
                {"file": f"/work/job-{i}/train.py", "line": 41, "function": fn},
                {
                    "file": "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
                    "line": 1501,
                    "function": "_call_impl",
                },
            ]
            row.update(status="failed", end_reason="exception", exit_code=1, ended=created + 30, failure=failure)
        else:
            row.update(status="succeeded", end_reason="exit", exit_code=0, ended=created + 30)
        batch.append({**rec, **row})
        if len(batch) >= 5000:
            store.ingest(batch)
            batch = []
    if batch:
        store.ingest(batch)


def measure(store_uri: str | None, args: argparse.Namespace) -> dict[str, Any]:
    from flightlog.client import Client
    from flightlog.store.registry import open_store
    from flightlog.triage.report import triage_report

    home = fresh_home("triage")
    if store_uri:
        os.environ["FLIGHTLOG_STORE"] = store_uri
    uri = store_uri or f"sqlite:///{Path(home) / 'flightlog.db'}"
    now = time.time()
    store = open_store(uri)
    started = time.perf_counter()
    seed(store, args.runs, args.failed, args.causes, now)
    seeded = time.perf_counter() - started
    store.close()
    times, report = [], None
    for _ in range(args.repeat):
        with Client() as client:
            t = time.perf_counter()
            report = triage_report(client, project="bench", since="7d")
            times.append(time.perf_counter() - t)
    with Client() as client:  # without onsets: the grouping's own cost
        t = time.perf_counter()
        triage_report(client, project="bench", since="7d", onsets=False)
        grouping = time.perf_counter() - t
    os.environ.pop("FLIGHTLOG_STORE", None)
    assert report is not None
    return {
        "seed_s": round(seeded, 1),
        "triage_s": round(min(times), 3),
        "triage_all_s": [round(x, 3) for x in times],
        "grouping_only_s": round(grouping, 3),
        "failures": report["failures"],
        "groups": len(report["groups"]),
        "onsets_with_last_good": sum(1 for g in report["groups"] if (g["onset"] or {}).get("last_good")),
        "within_target": min(times) <= TARGET_S,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--failed", type=int, default=10_000)
    parser.add_argument("--causes", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    result: dict[str, Any] = {
        "benchmark": "triage",
        "runs": args.runs,
        "failed": args.failed,
        "causes": args.causes,
        "target_s": TARGET_S,
        "embedded": measure(None, args),
    }
    if not args.no_postgres:
        result["postgres"] = _postgres(args)
    result["machine"] = machine()
    emit(result)


def _postgres(args: argparse.Namespace) -> dict[str, Any]:
    uri = os.environ.get("FLIGHTLOG_TEST_POSTGRES")
    if uri:
        return measure(uri, args)
    try:
        from flightlog.store.postgres.testing import TemporaryPostgres

        with TemporaryPostgres() as pg:
            return measure(pg.create_database("bench_triage"), args)
    except Exception as exc:  # no PostgreSQL binaries here: say so in the result
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}


if __name__ == "__main__":
    main()
