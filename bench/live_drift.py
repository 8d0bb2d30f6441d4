"""Live drift: the incremental cost of profiling and judging sampled predictions, per 1,000 rows.

A training profile of 100,000 rows (4 numeric and 2 categorical fields) is the reference. Live
rows (PredictionRow, as `prediction_rows` gives them) arrive in batches of 1,000: each batch
is added to a per-minute WindowedProfile and the window (the last hour, 60 buckets) is compared
with the reference, as the `serving_drift` rule does at each evaluation. Prints one JSON object:
milliseconds per 1,000 rows to profile, and per evaluation of the window.
"""

from __future__ import annotations

import time

import numpy as np
from _common import emit, machine

FIELDS_NUM, FIELDS_CAT = 4, 2
BATCH, BATCHES = 1000, 60


def _rows(rng: np.random.Generator, n: int, t0: float) -> list[dict[str, object]]:
    out = []
    for i in range(n):
        row: dict[str, object] = {f"x{j}": float(rng.normal(j, 1 + j)) for j in range(FIELDS_NUM)}
        row.update({f"c{j}": str(rng.choice(["a", "b", "c", "d"])) for j in range(FIELDS_CAT)})
        out.append({"time": t0 + i * 0.06, "inputs": row, "output": 0})
    return out


def main() -> None:
    import pandas as pd

    from flightlog.data import profile
    from flightlog.data.live import DriftMonitor, WindowedProfile, prediction_rows

    rng = np.random.default_rng(1)
    ref = profile(pd.DataFrame([r["inputs"] for r in _rows(rng, 100_000, 0.0)]), show_progress=False)
    rows = prediction_rows(_rows(rng, BATCH * BATCHES, 1_000_000.0))
    live = WindowedProfile(3600.0, 60.0)
    monitor = DriftMonitor(ref)
    add_s, judge_s = [], []
    for b in range(BATCHES):
        batch = rows[b * BATCH : (b + 1) * BATCH]
        t = time.perf_counter()
        live.add(batch)
        add_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        window = live.profile(batch[-1].time)
        monitor.observe(window)
        judge_s.append(time.perf_counter() - t)
    emit(
        {
            "bench": "live_drift",
            "rows_per_batch": BATCH,
            "batches": BATCHES,
            "fields": FIELDS_NUM + FIELDS_CAT,
            "profile_ms_per_1000_rows": round(1000 * float(np.median(add_s)), 2),
            "evaluate_window_ms_median": round(1000 * float(np.median(judge_s)), 2),
            "evaluate_window_ms_last": round(1000 * judge_s[-1], 2),
            "incremental_ms_per_1000_rows": round(1000 * float(np.median(np.add(add_s, judge_s))), 2),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
