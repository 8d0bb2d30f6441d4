"""A CSV larger than the memory budget is profiled in bounded memory (streamed in batches)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

TARGET_BYTES = 300 * 1024 * 1024
BUDGET_BYTES = 64 * 1024 * 1024

# Peak RSS is read from /proc (VmHWM) after resetting it with clear_refs: ru_maxrss would
# inherit the parent's peak across exec, and a sampling thread could miss short peaks.
_PROBE = textwrap.dedent(
    """
    import json, sys
    from flightlog.data import profile

    def status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024

    profile(sys.argv[2])  # warm up: lazy imports, kernels
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM to the current RSS
    before = status("VmRSS")
    p = profile(sys.argv[1])
    after = status("VmHWM")
    print(json.dumps({"before": before, "after": after, "rows": p.row_count,
                      "x_mean": p["x"].numeric.mean, "cardinality": p["city"].categorical.cardinality}))
    """
)


def _write_csv(path: Path) -> int:
    rng = np.random.default_rng(11)
    cities = np.array(["Berlin", "Paris", "Tokyo", "Lagos", "Lima", "Oslo", "Pune", "Quito"])
    rows = 0
    with pacsv.CSVWriter(
        path,
        pa.schema(
            [
                ("id", pa.int64()),
                ("x", pa.float64()),
                ("y", pa.float64()),
                ("n", pa.int64()),
                ("city", pa.string()),
                ("note", pa.string()),
            ]
        ),
    ) as w:
        while path.stat().st_size < TARGET_BYTES:
            n = 400_000
            ids = np.arange(rows, rows + n)
            w.write_table(
                pa.table(
                    {
                        "id": ids,
                        "x": rng.normal(0, 1, n).round(6),
                        "y": rng.exponential(10, n).round(4),
                        "n": rng.integers(0, 1000, n),
                        "city": cities[rng.integers(0, cities.size, n)],
                        "note": np.char.add("row-", (ids % 50_000).astype(str)),
                    }
                )
            )
            rows += n
    return rows


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc to read peak RSS")
def test_profile_of_a_300_mb_csv_grows_memory_by_at_most_64_mb(tmp_path: Path) -> None:
    big = tmp_path / "big.csv"
    rows = _write_csv(big)
    small = tmp_path / "small.csv"
    small.write_text("id,x,y,n,city,note\n1,0.5,1.0,3,Oslo,row-1\n")
    assert big.stat().st_size >= TARGET_BYTES
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(big), str(small)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    r = json.loads(out.stdout)
    assert r["rows"] == rows
    assert abs(r["x_mean"]) < 0.01 and r["cardinality"] == 8
    growth = r["after"] - r["before"]
    assert growth <= BUDGET_BYTES, f"profiling grew the peak RSS by {growth / 2**20:.0f} MiB"
