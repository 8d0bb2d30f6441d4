"""Throughput of the capture pipeline alone (no pipes, no journal, no store), one core.

Workloads, pre-generated as bytes and fed in 64 KiB chunks the way the runner's readers feed
them:

* ``simple`` — 1,000,000 lines of ``line {i} loss=0.{i % 997}``: the runner's end-to-end
  target is 300,000 lines/s for this child, so the pipeline alone must reach 1,500,000.
* ``mixed`` — a realistic training log: Python logging lines, JSON lines, logfmt, glog, plain
  prints with metrics, tqdm bars refreshed with ``\\r``, warnings with their source line,
  indented config dumps, tracebacks, URLs, commit ids and now and then a secret.
  Target: 300,000 lines/s.
* ``secrets`` — every line carries a secret or something that looks like one (worst case).

Prints one JSON object: lines/s per workload (best of 3, wall clock by ``time.perf_counter``),
the same by CPU time (``cpu_lines_per_s``, which other processes on a shared machine do not
disturb), the 1-minute load average while it ran, and what was stored.

    .venv/bin/python bench/capture_pipeline.py [--repeat 3] [--lines 1000000] [--chunk 65536]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time

from flightlog.capture import CaptureConfig, CapturePipeline, LineMetrics

CHUNK = 65536
ENV = {
    "HOME": "/root",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "GITHUB_TOKEN": "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2,
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "DATABASE_URL": "postgresql://trainer:s3cr3t-pw@db.internal:5432/runs",
    "WANDB_API_KEY": "0123456789abcdef0123456789abcdef01234567",
    "HF_TOKEN": "hf_" + "x" * 34,
}


def simple(n: int) -> bytes:
    return "".join(f"line {i} loss=0.{i % 997}\n" for i in range(n)).encode()


def mixed(n: int) -> bytes:
    rng = random.Random(7)
    out: list[str] = []
    i = 0
    while i < n:
        r = rng.random()
        ts = f"2026-11-30 12:{(i // 6000) % 60:02d}:{(i // 100) % 60:02d},{i % 1000:03d}"
        if r < 0.30:
            out.append(f"{ts} - trainer - INFO - step {i} loss={rng.random():.4f} lr=0.0003 tokens=4096\n")
        elif r < 0.45:
            out.append(
                f'{{"time": "{ts}", "level": "info", "logger": "data", "msg": "batch loaded", '
                f'"batch": {i}, "size": 256, "shard": "s3://bucket/train/{i % 64:05d}.tar"}}\n'
            )
        elif r < 0.60:
            out.append(f"epoch {i // 5000} step {i} loss={rng.random():.4f} acc={rng.random():.3f} max_tokens=1024\n")
        elif r < 0.66:
            bars = "".join(
                f"\r{p:3d}%|{'█' * (p // 10)}{' ' * (10 - p // 10)}| {p * 10}/1000 [00:{p // 10:02d}<00:10, 44.1it/s]"
                for p in range(0, 101, 20)
            )
            out.append(bars + "\n")
        elif r < 0.72:
            out.append(f"I1130 12:00:00.{i:06d}  1234 trainer.cc:42] allreduce bucket {i % 32} ready\n")
        elif r < 0.77:
            out.append(f'time={ts} level=warn msg="slow batch" batch={i} wait_ms={rng.randint(100, 999)}\n')
        elif r < 0.80:
            out.append(
                "/usr/lib/python3/site-packages/torch/utils/data.py:554: UserWarning: This DataLoader will create 8 workers\n"
                "  warnings.warn(_create_warning_msg(\n"
            )
            i += 1
        elif r < 0.83:
            out.append("model:\n  name: resnet50\n  layers: 50\n  dropout: 0.1\n")
            i += 3
        elif r < 0.86:
            out.append(
                f"{ts} - checkpoint - INFO - saved to /runs/exp42/ckpt-{i}.pt "
                f"(commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39, run 1b4e28ba-2fa1-11d2-883f-0016d3cca427)\n"
            )
        elif r < 0.87:
            out.append(
                "Traceback (most recent call last):\n"
                '  File "/app/train.py", line 88, in <module>\n'
                "    main()\n"
                '  File "/app/train.py", line 80, in main\n'
                "    batch = next(it)\n"
                "StopIteration\n"
            )
            i += 5
        elif r < 0.875:
            out.append(
                f"connecting to https://api.example.com/v1/models?token=abc{i}def&user=u with password=hunter{i}\n"
            )
        else:
            out.append(f"[rank0]: gradient norm {rng.random() * 10:.3f} at step {i}\n")
        i += 1
    return "".join(out).encode()


def secrets(n: int) -> bytes:
    shapes = [
        "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n",
        "token=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sig_nat-ure\n",
        "db url postgresql://admin:pa55word@db:5432/x\n",
        '{"level": "info", "msg": "login", "password": "hunter22", "user": "bob"}\n',
        "max_tokens=1024 tokens=123 token_count=5 sha=3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39\n",
    ]
    return "".join(shapes[i % len(shapes)] for i in range(n)).encode()


def run(data: bytes, repeat: int, chunk: int = CHUNK, line_metrics: bool = True) -> dict[str, float | int]:
    lines = data.count(b"\n")
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    best_wall = best_cpu = float("inf")
    stats: dict[str, int] = {}
    for _ in range(repeat):
        metrics = LineMetrics(hold=0.0) if line_metrics else None
        pipeline = CapturePipeline(CaptureConfig(env=ENV), metrics=metrics)
        now = 1000.0
        start, start_cpu = time.perf_counter(), time.process_time()
        for chunk in chunks:
            pipeline.feed("stdout", chunk, now)
            if metrics is not None:
                metrics.take(now)  # as the runner does after each batch
            now += 0.001
        pipeline.close(now)
        best_wall = min(best_wall, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
        stats = pipeline.stats
        points = metrics.stats["line_metrics"] if metrics is not None else 0
    return {
        "lines_per_s": round(lines / best_wall),
        "cpu_lines_per_s": round(lines / best_cpu),  # immune to other processes on the machine
        "seconds": round(best_wall, 4),
        "lines": lines,
        "bytes": len(data),
        "events": stats["events"],
        "redactions": stats["redactions"],
        "line_metric_points": points,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=CHUNK, help="bytes per read (the runner reads up to 1 MiB)")
    parser.add_argument(
        "--no-line-metrics",
        action="store_true",
        help="leave out reading metrics from lines (on in `flightlog run` by default)",
    )
    args = parser.parse_args()
    on = not args.no_line_metrics
    results = {
        "simple": run(simple(args.lines), args.repeat, args.chunk, on),
        "mixed": run(mixed(args.lines // 3), args.repeat, args.chunk, on),
        "secrets": run(secrets(args.lines // 10), args.repeat, args.chunk, on),
    }
    report = {
        "bench": "capture_pipeline",
        "chunk_bytes": args.chunk,
        "repeat": args.repeat,
        "line_metrics": on,
        "python": platform.python_version(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "simple_lines_per_s": results["simple"]["lines_per_s"],
        "mixed_lines_per_s": results["mixed"]["lines_per_s"],
        "secrets_lines_per_s": results["secrets"]["lines_per_s"],
        "workloads": results,
    }
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
