"""A/B of flightlog's performance against a git ref, on this machine, in one run.

    python bench/ab.py --base main            # 3 rounds at the benchmarks' own sizes
    python bench/ab.py --base main --quick    # smaller sizes, to see that it works

The base is materialised from git (``git archive REF | tar -x`` into a temporary directory); the
head is this checkout's ``src``. Each round runs every workload once under each tree, in a fresh
subprocess with ``PYTHONPATH`` pointing at that tree's ``src``, alternating which tree goes first,
so that a machine getting busier part-way does not favour one side. The workloads are this
checkout's bench scripts for both trees (the same code drives both; only flightlog differs).

Prints one JSON object: per figure, the base's and the head's median over the rounds, every
round's value, and the ratio head / base (above 1 means the head takes longer for a time, and
does more for a rate: read each figure's ``better`` field).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import ROOT, emit, machine

BENCH = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Workload:
    """One bench script, its arguments at full and at quick size, and the figures read from its JSON."""

    name: str
    script: str
    full: tuple[str, ...]
    quick: tuple[str, ...]
    figures: dict[str, tuple[str, Callable[[dict[str, Any]], float]]]  # figure -> (better, read)


WORKLOADS = (
    Workload(
        "w1",
        "log_throughput.py",
        (),
        ("--steps", "20000", "--rounds", "1"),
        {
            "w1_in_loop_us_per_point": ("lower", lambda r: r["in_loop_us_per_point"]),
            "w1_finish_s": ("lower", lambda r: r["finish_after_loop_s"]),
        },
    ),
    Workload(
        "capture",
        "capture_throughput.py",
        ("--rounds", "1"),
        ("--lines", "100000", "--rounds", "1"),
        {
            "capture_lines_per_s": ("higher", lambda r: r["flightlog_run_lines_per_s"]),
        },
    ),
    Workload(
        "w2",
        "many_runs.py",
        (),
        ("--runs", "200"),
        {
            "w2_create_s_per_1000_runs": ("lower", lambda r: r["create_1000_runs_s"] * 1000 / r["runs"]),
        },
    ),
    Workload(
        "pipeline",
        "pipeline_overhead.py",
        (),
        ("--steps", "20", "--rounds", "1", "--cold-steps", "2"),
        {
            "pipeline_overhead_ms_per_step": ("lower", lambda r: r["overhead_per_step_ms"]),
            "pipeline_runner_cpu_ms_per_step": ("lower", lambda r: r["runner_cpu_per_step_ms"]),
        },
    ),
    Workload(
        "ingest",
        "server_ingest.py",
        (),
        ("--writers", "2", "--steps", "5000"),
        {
            "server_ingest_points_per_s": ("higher", lambda r: r["points_per_second"]),
        },
    ),
)


def materialise(ref: str, into: Path) -> Path:
    """The tree of REF, extracted from `git archive` (the working tree and the stash are never touched)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"bench/ab.py: cannot archive {ref!r}: {archive.stderr.decode(errors='replace').strip()}")
    tar_path = into / "base.tar"
    tar_path.write_bytes(archive.stdout)
    tree = into / "base"
    with tarfile.open(tar_path) as tar:
        tar.extractall(tree, filter="data")
    tar_path.unlink()
    if not (tree / "src" / "flightlog").is_dir():
        raise SystemExit(f"bench/ab.py: {ref!r} has no src/flightlog")
    return tree


def run_once(workload: Workload, src: Path, quick: bool, timeout: float) -> dict[str, Any]:
    """The workload's JSON under one tree, in a fresh process with no FLIGHTLOG_ setting of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    env["PYTHONPATH"] = str(src)
    args = workload.quick if quick else workload.full
    proc = subprocess.run(
        [sys.executable, str(BENCH / workload.script), *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise SystemExit(
            f"bench/ab.py: {workload.script} under {src} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    return json.loads(proc.stdout[proc.stdout.index("{") :])


def compile_tree(src: Path) -> None:
    """Both trees' bytecode written before the rounds, as an installed package has it (pip
    compiles on install): where ``PYTHONDONTWRITEBYTECODE`` is set, a tree without ``.pyc``
    files compiles every module it imports in each fresh process, and the side extracted from
    git, which never has them, paid that in every figure that starts a process."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True, stdout=subprocess.DEVNULL)


def _flightlog_file(src: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    env["PYTHONPATH"] = str(src)
    return subprocess.run(
        [sys.executable, "-c", "import flightlog; print(flightlog.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the git ref to compare with (a branch, a tag, a commit)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each running every workload under both trees")
    parser.add_argument("--quick", action="store_true", help="smaller sizes: minutes instead of the full figures")
    parser.add_argument(
        "--only", action="append", choices=[w.name for w in WORKLOADS], help="run only this workload (repeatable)"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one workload may take")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    workloads = [w for w in WORKLOADS if not args.only or w.name in args.only]
    head_src = ROOT / "src"
    with tempfile.TemporaryDirectory(prefix="flightlog-ab-") as tmp:
        base_src = materialise(args.base, Path(tmp)) / "src"
        trees = {"base": base_src, "head": head_src}
        for side, src in trees.items():  # the import must come from the tree, not an installed copy
            if not _flightlog_file(src).startswith(str(src)):
                raise SystemExit(f"bench/ab.py: the {side} tree's flightlog is not imported from {src}")
            compile_tree(src)
        values: dict[str, dict[str, list[float]]] = {}
        started = time.time()
        for round_no in range(args.rounds):
            order = ("base", "head") if round_no % 2 == 0 else ("head", "base")
            for workload in workloads:
                for side in order:
                    result = run_once(workload, trees[side], args.quick, args.timeout)
                    for figure, (_, read) in workload.figures.items():
                        values.setdefault(figure, {"base": [], "head": []})[side].append(float(read(result)))
                    print(
                        f"round {round_no + 1}/{args.rounds} {workload.name} {side}: "
                        + ", ".join(f"{f}={values[f][side][-1]:g}" for f in workload.figures),
                        file=sys.stderr,
                    )
    figures: dict[str, Any] = {}
    for workload in workloads:
        for figure, (better, _) in workload.figures.items():
            base, head = (statistics.median(values[figure][s]) for s in ("base", "head"))
            figures[figure] = {
                "base": round(base, 4),
                "head": round(head, 4),
                "ratio": round(head / base, 3) if base else None,
                "better": better,
                "base_rounds": values[figure]["base"],
                "head_rounds": values[figure]["head"],
            }
    emit(
        {
            "benchmark": "ab",
            "base": args.base,
            "base_commit": _rev(args.base),
            "head_commit": _rev("HEAD"),
            "head_dirty": bool(
                subprocess.run(
                    ["git", "-C", str(ROOT), "status", "--porcelain", "src"], capture_output=True, text=True
                ).stdout.strip()
            ),
            "quick": args.quick,
            "rounds": args.rounds,
            "seconds": round(time.time() - started, 1),
            "machine": machine(),
            "figures": figures,
        }
    )


def _rev(ref: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", ref], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
