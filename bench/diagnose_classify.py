"""The fast failure classifier: one call on a real pandas KeyError traceback plus the last
200 log lines of a training loop (what `flightlog run` and `flightlog diagnose` hand it).

Prints one JSON object: the median and best milliseconds per call over ``--calls`` calls, and
the same on 50 lines. Wall time depends on what else the machine runs (``load_average_1m``).

    python bench/diagnose_classify.py [--calls 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import traceback

from _common import emit, machine

from flightlog.diagnose.classify import classify_failure


def _pandas_keyerror() -> str:
    import pandas as pd

    try:
        pd.DataFrame({"a": [1, 2]})["b"]
    except KeyError:
        return traceback.format_exc()
    raise AssertionError("expected a KeyError")


def per_call_ms(tb: str, lines: list[str], calls: int) -> list[float]:
    out: list[float] = []
    for _ in range(calls):
        t0 = time.perf_counter()
        classify_failure(
            exit_code=1, signal=None, timed_out=False, oom_killed=False, traceback_text=tb, last_lines=lines
        )
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    tb = _pandas_keyerror()
    result: dict[str, object] = {"benchmark": "diagnose_classify", "calls": args.calls}
    for n in (50, 200):
        lines = [f"epoch {i} loss=0.{i} lr=3e-4 step {i * 10}/1000" for i in range(n)]
        times = per_call_ms(tb, lines, args.calls)
        result[f"lines_{n}"] = {"median_ms": round(statistics.median(times), 3), "best_ms": round(min(times), 3)}
    result["load_average_1m"] = round(os.getloadavg()[0], 2)
    result["machine"] = machine()
    emit(result)


if __name__ == "__main__":
    main()
