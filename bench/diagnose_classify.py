"""The failure classifier: one call of the fast classifier on a real pandas KeyError traceback
plus the last 200 log lines of a training loop (what `flightlog run` hands it), and the whole
diagnosis of a failed run (``Client.diagnose``: 200 log lines, a chained traceback, resource
samples; no baseline) on the embedded store.

Prints one JSON object: the median and best milliseconds per call over ``--calls`` calls, the
same on 50 lines, and the median and best of ``diagnose_run`` over ``--calls // 5`` reports
(the target of issue 29: under 200 ms). Wall time depends on what else the machine runs
(``load_average_1m``).

    python bench/diagnose_classify.py [--calls 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import traceback

from _common import emit, fresh_home, machine

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


_CHAINED = """Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/psycopg2/__init__.py", line 122, in connect
    conn = _connect(dsn, connection_factory=connection_factory, **kwasync)
psycopg2.OperationalError: FATAL:  sorry, too many clients already

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "train.py", line 41, in <module>
    rows = session.execute(query).fetchall()
  File "/opt/venv/lib/python3.11/site-packages/sqlalchemy/engine/base.py", line 3280, in _wrap_pool_connect
    Connection._handle_dbapi_exception_noconnection(e, dialect, self)
sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) FATAL:  sorry, too many clients already
(Background on this error at: https://sqlalche.me/e/14/e3q8)"""


def diagnose_ms(calls: int) -> list[float]:
    """``Client.diagnose`` of one failed run recorded with the SDK (200 lines, a chained
    traceback, resource samples), timed per report."""
    import flightlog
    from flightlog.client import Client

    home = fresh_home("diagnose")
    run = flightlog.init(project="bench", name="failing", console=False, resources=False, quiet=True)
    for i in range(200):
        run.log_event(f"epoch {i // 20} step {i * 10}/2000 loss=0.{i:03d} lr=3e-4", level="info")
    run.log_event(_CHAINED, level="error")
    run.finish("failed", end_reason="exception", exit_code=1)
    out: list[float] = []
    with Client(home) as client:
        for _ in range(calls):
            t0 = time.perf_counter()
            client.diagnose(run.id, auto_baseline=False)
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
    times = diagnose_ms(max(3, args.calls // 5))
    result["diagnose_run"] = {"median_ms": round(statistics.median(times), 3), "best_ms": round(min(times), 3)}
    result["load_average_1m"] = round(os.getloadavg()[0], 2)
    result["machine"] = machine()
    emit(result)


if __name__ == "__main__":
    main()
