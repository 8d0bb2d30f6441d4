"""Data profile: 10,000,000 rows x 20 numeric columns from Parquet, streamed, in at most 10 s.

Writes the Parquet file into a temporary directory first (16 float64 columns of several
distributions, some with nulls and NaN, and 4 int64 columns; 1,000,000-row row groups), then
profiles it with `flightlog.data.profile` and prints one JSON object: the time of each round,
the best, rows per second, and the quantile error of the result against numpy on one column.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from _common import emit, machine

ROWS = 10_000_000
GROUP = 1_000_000
TARGET_S = 10.0


def _columns(rng: np.random.Generator, n: int) -> dict[str, pa.Array]:
    out: dict[str, pa.Array] = {}
    for i in range(16):
        kind = i % 4
        if kind == 0:
            x = rng.normal(i, 1 + i, n)
        elif kind == 1:
            x = rng.lognormal(1, 1.5, n)
        elif kind == 2:
            x = rng.uniform(-100, 100, n)
        else:
            x = rng.exponential(3, n)
            x[rng.random(n) < 0.001] = np.nan
        mask = rng.random(n) < 0.01 if i % 5 == 0 else None
        out[f"f{i}"] = pa.array(x, mask=mask)
    for i in range(4):
        out[f"i{i}"] = pa.array(rng.integers(0, 10 ** (i + 2), n))
    return out


def write(path: Path) -> float:
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    writer = None
    for _ in range(ROWS // GROUP):
        table = pa.table(_columns(rng, GROUP))
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=GROUP)
    assert writer is not None
    writer.close()
    return time.perf_counter() - t0


def main() -> None:
    from flightlog.data import profile

    tmp = Path(tempfile.mkdtemp(prefix="flightlog-bench-profile-"))
    try:
        path = tmp / "wide.parquet"
        write_s = write(path)
        rounds = []
        for _ in range(3):
            t0 = time.perf_counter()
            p = profile(path, show_progress=False)
            rounds.append(time.perf_counter() - t0)
        col = pq.read_table(path, columns=["f1"]).column(0).to_numpy(zero_copy_only=False)
        col = col[~np.isnan(col)]
        qs = (0.01, 0.25, 0.5, 0.75, 0.99)
        exact = np.quantile(col, qs, method="lower")
        est = p["f1"].numeric.quantiles(qs)  # type: ignore[union-attr]
        worst = max(abs(e - x) / abs(x) for e, x in zip(est.values(), exact, strict=True))  # type: ignore[operator]
        best = min(rounds)
        result = {
            "workload": "profile 10,000,000 rows x 20 numeric columns from Parquet (page cache warm)",
            "machine": machine(),
            "file_mib": round(path.stat().st_size / 2**20),
            "write_s": round(write_s, 2),
            "profile_s_all_rounds": [round(r, 2) for r in rounds],
            "profile_s": round(best, 2),
            "rows_per_s": round(ROWS / best),
            "values_per_s": round(ROWS * 20 / best),
            "rows_profiled": p.row_count,
            "columns_profiled": len(p),
            "profile_json_kib": round(len(__import__("json").dumps(p.to_dict())) / 1024, 1),
            "quantile_max_relative_error": round(worst, 5),
            "targets": {"profile_s": TARGET_S, "quantile_max_relative_error": 0.01},
        }
        result["meets_targets"] = best <= TARGET_S and worst <= 0.01 and p.row_count == ROWS
        emit(result)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
