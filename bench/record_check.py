"""The cost of checking one record at the server's ingest and in `flightlog sync` (`check_record`).

    python bench/record_check.py [SRC]   # SRC: another checkout's src/ (e.g. main's, from git archive)

Prints JSON: the best microseconds per check of a metrics record (20 series x 1,000 points),
a log chunk of 1,000 events, a run record and 50 params. Works with the code before the schema
(`flightlog.recordcheck`) too, so both columns of an A/B come from this one script.
"""

from __future__ import annotations

import json
import sys
import time
from array import array
from pathlib import Path

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).resolve().parent.parent / "src"))

try:
    from flightlog.schema import check_record
    from flightlog.schema.values import encode_series, log_chunk_payload
except ImportError:  # the code before flightlog.schema
    from flightlog.recordcheck import check_record  # type: ignore[no-redef]
    from flightlog.records import encode_series, log_chunk_payload  # type: ignore[no-redef]
from flightlog.logevents import LogBatch


def main() -> None:
    env = {"r": "run-1", "w": "w1", "s": 1, "t": 1.7e9}
    column = array("q", range(1000)), array("d", [1.7e9] * 1000), array("d", [0.5] * 1000)
    batch = LogBatch()
    for i in range(1000):
        batch.append(time=1.7e9, stream="stdout", level=20, message=f"line {i}")
    cases = {
        "metrics_20x1000": (
            {"k": "metrics", **env, "attempt": 1, "series": {f"m{i}": encode_series(*column) for i in range(20)}},
            2000,
        ),
        "logs_1000": ({"k": "logs", **env, **log_chunk_payload(batch)}, 200),
        "run": (
            {
                "k": "run",
                **env,
                "project": "p",
                "status": "running",
                "started": 1.7e9,
                "timeline": {"process_start": 1.7e9},
            },
            2000,
        ),
        "params_50": ({"k": "params", **env, "data": {f"p{i}": i for i in range(50)}}, 2000),
    }
    out = {}
    for name, (rec, n) in cases.items():
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                check_record(rec)
            best = min(best, (time.perf_counter() - t0) / n * 1e6)
        out[name] = round(best, 2)
    print(json.dumps({"bench": "record_check", "us_per_check": out}, indent=2))


if __name__ == "__main__":
    main()
