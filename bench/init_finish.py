"""What a run's life costs a short script: `import flightlog; init(); finish()` in a fresh process.

Each of N fresh processes (after one warm-up) times `import flightlog` and then
`flightlog.init(); run.finish()` with `time.perf_counter`, into a fresh FLIGHTLOG_HOME; prints the
medians as one JSON object. The feature table is built when the run starts (its run-life hooks:
docs/plugins.md), so this is the figure that shows its cost. Run it with PYTHONPATH pointing at
another checkout's src/ to compare two versions.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from _common import emit, fresh_home, machine

SNIPPET = """
import json, time
t0 = time.perf_counter()
import flightlog
t1 = time.perf_counter()
run = flightlog.init(project="bench", name="init-finish", quiet=True, resources=False)
run.finish()
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "init_finish_s": t2 - t1}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=15)
    args = parser.parse_args()
    fresh_home("init-finish")
    rounds = []
    for i in range(args.n + 1):
        out = subprocess.run([sys.executable, "-c", SNIPPET], capture_output=True, text=True, check=True)
        if i:
            rounds.append(json.loads(out.stdout.strip().splitlines()[-1]))
    emit(
        {
            "workload": "import flightlog; init(); finish() in a fresh process",
            "n": args.n,
            "import_s_median": round(statistics.median(r["import_s"] for r in rounds), 4),
            "init_finish_s_median": round(statistics.median(r["init_finish_s"] for r in rounds), 4),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
