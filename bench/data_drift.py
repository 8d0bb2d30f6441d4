"""Data drift: comparing two profiles of 10,000,000 rows x 20 numeric columns in at most 100 ms.

Builds the two profiles from in-memory Arrow tables (a reference, and a current table where
half of the columns moved), then times `flightlog.data.drift` on the profile objects (best of
20) and on profiles loaded from their JSON (what `flightlog data drift a.json b.json` does).
Prints one JSON object.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pyarrow as pa
from _common import emit, machine

ROWS = 10_000_000
COLUMNS = 20
TARGET_MS = 100.0


def _table(rng: np.random.Generator, shift: float) -> pa.Table:
    cols = {}
    for i in range(COLUMNS):
        moved = shift if i % 2 == 0 else 0.0
        if i % 3 == 0:
            cols[f"c{i}"] = rng.lognormal(1 + moved, 1, ROWS)
        else:
            cols[f"c{i}"] = rng.normal(i + moved * (1 + i), 1 + i, ROWS)
    return pa.table(cols)


def main() -> None:
    from flightlog.data import Profile, drift, profile

    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    ref = profile(_table(rng, 0.0), show_progress=False)
    cur = profile(_table(rng, 0.5), show_progress=False)
    build_s = time.perf_counter() - t0
    drift(ref, cur)  # warm scipy
    times = []
    for _ in range(20):
        t = time.perf_counter()
        report = drift(ref, cur)
        times.append(time.perf_counter() - t)
    ref_json, cur_json = json.dumps(ref.to_dict()), json.dumps(cur.to_dict())
    loaded = []
    for _ in range(10):
        t = time.perf_counter()
        drift(Profile.from_dict(json.loads(ref_json)), Profile.from_dict(json.loads(cur_json)))
        loaded.append(time.perf_counter() - t)
    best_ms = min(times) * 1000
    result = {
        "workload": "drift between two profiles of 10,000,000 rows x 20 numeric columns",
        "machine": machine(),
        "profiles_build_s": round(build_s, 1),
        "drift_ms": round(best_ms, 2),
        "drift_ms_median": round(sorted(times)[len(times) // 2] * 1000, 2),
        "drift_from_json_ms": round(min(loaded) * 1000, 2),
        "profile_json_kib": round(len(ref_json) / 1024, 1),
        "columns_tested": len(report.columns),
        "columns_drifted": len(report.drifted_columns),
        "expected_drifted": COLUMNS // 2,
        "dataset_drift": report.dataset_drift,
        "tests": sorted({c.test for c in report.columns}),
        "targets": {"drift_ms": TARGET_MS},
    }
    result["meets_targets"] = best_ms <= TARGET_MS and len(report.drifted_columns) == COLUMNS // 2
    emit(result)


if __name__ == "__main__":
    main()
