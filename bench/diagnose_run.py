"""The time to diagnose a failed run, whole: the engine over a failed run of a project with
earlier runs of the same job — good ones, failed ones and NaN ones, as a nightly job leaves
them — so that the choice of its baseline (the comparable runs, the flags, the spread) is
part of what is timed, and the same diagnosis without looking for a baseline beside it.

Prints one JSON object: the median and best milliseconds of ``diagnose`` with the automatic
baseline and with ``--no-baseline``, their ratio, and how many earlier runs there were.

    python bench/diagnose_run.py [--earlier 40] [--calls 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _common import emit, fresh_home, machine

import flightlog
from flightlog.client import Client


def _record(earlier: int) -> str:
    """``earlier`` runs of one nightly job (a third failed, a fifth NaN), then the failed run."""
    for i in range(earlier):
        run = flightlog.init(project="bench", name="nightly", params={"lr": 0.1, "batch": 32}, quiet=True)
        nan = i % 5 == 4
        for step in range(50):
            loss = float("nan") if nan and step > 40 else 1.0 / (step + 1) + 0.01 * (i % 7)
            run.log({"loss": loss, "val_loss": loss * 1.1}, step=step)
        if i % 3 == 2:
            run.fail(RuntimeError("the shard vanished"))
        else:
            run.finish()
    run = flightlog.init(project="bench", name="nightly", params={"lr": 0.1, "batch": 32}, quiet=True)
    for step in range(20):
        run.log({"loss": 1.0 / (step + 1), "val_loss": 1.1 / (step + 1)}, step=step)
    try:
        {}["user_8812"]
    except KeyError as exc:
        run.fail(exc)
    return run.id


def _times(client: Client, run_id: str, calls: int, auto: bool) -> list[float]:
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        client.diagnose(run_id, auto_baseline=auto)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--earlier", type=int, default=40)
    parser.add_argument("--calls", type=int, default=15)
    args = parser.parse_args()
    os.environ["FLIGHTLOG_CONSOLE"] = "off"
    home = fresh_home("diagnose-run")
    run_id = _record(args.earlier)
    result: dict[str, object] = {"benchmark": "diagnose_run", "earlier_runs": args.earlier, "calls": args.calls}
    with Client(home) as client:
        client.diagnose(run_id)  # warm: imports, the store's caches
        auto = _times(client, run_id, args.calls, True)
        alone = _times(client, run_id, args.calls, False)
        report = client.diagnose(run_id)
    result["auto_baseline"] = {"median_ms": round(statistics.median(auto), 1), "best_ms": round(min(auto), 1)}
    result["no_baseline"] = {"median_ms": round(statistics.median(alone), 1), "best_ms": round(min(alone), 1)}
    result["ratio_median"] = round(statistics.median(auto) / statistics.median(alone), 2)
    result["top_finding"] = report["findings"][0]["category"] if report["findings"] else None
    result["baseline"] = (report.get("baseline") or {}).get("reason")
    result["load_average_1m"] = round(os.getloadavg()[0], 2)
    result["machine"] = machine()
    emit(result)


if __name__ == "__main__":
    main()
