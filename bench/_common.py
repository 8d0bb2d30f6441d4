"""Shared bits of the benchmarks: temporary homes, timers, the machine, the peer environment."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = ROOT / ".bench-venv" / "bin" / "python"


def machine() -> dict[str, Any]:
    import psutil

    return {
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
    }


def fresh_home(prefix: str) -> Path:
    home = Path(tempfile.mkdtemp(prefix=f"flightlog-bench-{prefix}-"))
    os.environ["FLIGHTLOG_HOME"] = str(home)
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_RUN_ID", "FLIGHTLOG_MODE", "FLIGHTLOG_STORE"):
        os.environ.pop(name, None)
    return home


def best_of(n: int, fn: Callable[[], float]) -> float:
    return min(fn() for _ in range(n))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run_peer(script: str, *args: str, timeout: float = 1800) -> dict[str, Any]:
    """Run a peer benchmark in the separate benchmark environment (never the project's)."""
    if not PEER_PYTHON.exists():
        return {"error": f"no peer environment: run `make bench-peers` first ({PEER_PYTHON} missing)"}
    proc = subprocess.run(
        [str(PEER_PYTHON), str(Path(__file__).with_name(script)), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def emit(result: dict[str, Any]) -> None:
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
