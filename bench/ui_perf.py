"""Web UI speed in headless Chromium, measured from navigation start (performance.now()):

- the runs page of a 10,000-run project: first rows shown, and a sort answered (target 1 s each);
- a run with a 1,000,000-point metric and 100,000 log lines: its chart drawn, and the first page
  of its logs shown (target 1.5 s each).

The store is filled first (runs, a metric and log chunks as writers ship them), then
`flightlog server` runs as its own process and Debian's Chromium (Playwright) loads each page
in a fresh browser context (nothing cached), several times. Prints one JSON object
(milliseconds: median and worst of the timed loads), with the load average. Each time is taken
twice: when Playwright sees the element (what the targets are judged on; it includes ~80 ms of
the harness's polling and round trips), and ``painted``, the first animation frame after the
element entered the page, stamped in the page itself (what a person sees).

With --latency-ms N, every request of the browser waits N ms more (Chromium's network
emulation): a server across a network rather than on 127.0.0.1.

With --base REF, the same pages of git ref REF's server and UI (its tree from `git archive`, its
UI built there with this checkout's node_modules, its store filled by its own code) are loaded
in the same rounds, alternating which goes first; the JSON then holds both and the ratios
head / base.

    .venv/bin/python bench/ui_perf.py [--repeat 5] [--base main] [--latency-ms 40]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

from _common import ROOT, emit, machine

from flightlog.server.testing import HEADLESS_CHROMIUM_ARGS

FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))
CHROMIUM = "/usr/bin/chromium"
ARGS = list(HEADLESS_CHROMIUM_ARGS)
BIG = "ffffffff" + "0" * 24


def fill(home: Path, runs: int, points: int, lines: int) -> None:
    from flightlog.logevents import LogBatch
    from flightlog.schema.values import encode_series, log_chunk_payload
    from flightlog.store.sqlite.store import SqliteStore

    store = SqliteStore(home / "flightlog.db")
    rng = random.Random(7)
    t0 = time.time() - runs - 7200
    batch: list[dict[str, Any]] = []
    for i in range(runs):
        run_id = f"{i:08x}{rng.getrandbits(96):024x}"
        rec = {"r": run_id, "w": "bench", "t": t0 + i}
        batch += [
            {
                **rec,
                "k": "run",
                "s": 1,
                "project": "big",
                "name": f"run-{i}",
                "status": rng.choice(["succeeded", "failed", "running"]),
                "created": t0 + i,
                "started": t0 + i,
                "ended": t0 + i + rng.uniform(10, 3600),
                "host": "gpu-1",
                "pid": 1,
            },
            {
                **rec,
                "k": "params",
                "s": 2,
                "data": {f"p{j}": rng.random() for j in range(9)} | {"lr": rng.choice([0.1, 0.01, 0.001])},
            },
            {**rec, "k": "tags", "s": 3, "data": {"team": "vision", "owner": f"u{i % 7}"}},
            {
                **rec,
                "k": "metrics",
                "s": 4,
                "attempt": 1,
                "series": {
                    f"m{j}": encode_series(array("q", [0]), array("d", [t0 + i]), array("d", [rng.random()]))
                    for j in range(5)
                },
            },
        ]
        if len(batch) >= 4000:
            store.ingest(batch)
            batch = []
    store.ingest(batch)

    start = time.time() - 3600
    store.ingest(
        [
            {
                "k": "run",
                "r": BIG,
                "w": "bench",
                "s": 1,
                "t": start,
                "project": "metrics",
                "name": "million",
                "status": "succeeded",
                "created": start,
                "started": start,
                "ended": start + 3000,
            }
        ]
    )
    seq = 2
    for begin in range(0, points, 10_000):
        steps = array("q", range(begin, min(points, begin + 10_000)))
        times = array("d", (start + s * 0.003 for s in steps))
        values = array(
            "d", (1.0 / (1 + s * 1e-4) + rng.gauss(0, 0.01) + (5.0 if rng.random() < 1e-5 else 0.0) for s in steps)
        )
        store.ingest(
            [
                {
                    "k": "metrics",
                    "r": BIG,
                    "w": "bench",
                    "s": seq,
                    "t": start,
                    "attempt": 1,
                    "series": {"loss": encode_series(steps, times, values)},
                }
            ]
        )
        seq += 1
    for begin in range(0, lines, 5_000):
        logs = LogBatch()
        for i in range(begin, min(lines, begin + 5_000)):
            logs.append(
                start + i * 0.03,
                "stdout",
                20 if i % 50 else 30,
                f"step {i}: loss {1 / (1 + i):.5f} lr 0.001",
                component="trainer",
            )
        store.ingest([{"k": "logs", "r": BIG, "w": "bench", "s": seq, "t": start, **log_chunk_payload(logs)}])
        seq += 1
    store.close()


def timings(values: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(values), 1),
        "max_ms": round(max(values), 1),
        "min_ms": round(min(values), 1),
    }


SORT_JS = """async () => {
  const first = () => document.querySelector('.runs-table .row[data-run]')?.getAttribute('data-run');
  const before = first();
  const t0 = performance.now();
  document.querySelector("button.sort[data-sort='metrics.m0']").click();
  while (true) {
    await new Promise(requestAnimationFrame);
    const now = first();
    if (now && now !== before) return performance.now() - t0;
    if (performance.now() - t0 > 10000) return -1;
  }
}"""


#: stamps, in the page, the first animation frame after an element matching the selector entered it
PAINTED_JS = """selector => new MutationObserver((_, observer) => {
  if (!document.querySelector(selector)) return;
  observer.disconnect();
  requestAnimationFrame(() => { window.__benchPainted = performance.now(); });
}).observe(document, {subtree: true, childList: true})"""

#: extra latency of every request, ms (--latency-ms)
LATENCY_MS = 0


def measure(
    browser: Any, url: str, selector: str, after: str | None = None, expect: str | None = None
) -> tuple[float, float, float | None]:
    """ms from navigation start until `selector` is shown (as Playwright sees it, and painted as
    the page stamps it); then, optionally, the JS `after` (ms). With `expect`, the page must also
    say that text (the bench measured what it claims)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        if LATENCY_MS:
            cdp = context.new_cdp_session(page)
            cdp.send("Network.enable")
            cdp.send(
                "Network.emulateNetworkConditions",
                {"offline": False, "latency": LATENCY_MS, "downloadThroughput": -1, "uploadThroughput": -1},
            )
        page.add_init_script(f"({PAINTED_JS})({json.dumps(selector)})")
        page.goto(url, wait_until="commit")
        page.wait_for_selector(selector, state="visible", timeout=30_000)
        shown = float(page.evaluate("performance.now()"))
        painted = float(page.wait_for_function("window.__benchPainted", timeout=30_000).json_value())
        extra = float(page.evaluate(after)) if after else None
        if expect is not None:
            page.wait_for_selector(f"text={expect}", timeout=30_000)
        return shown, painted, extra
    finally:
        context.close()


def _base_tree(ref: str, into: Path) -> Path:
    """REF's tree with its UI built (this checkout's node_modules, REF's sources and config)."""
    import tarfile

    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], capture_output=True, check=True)
    (into / "base.tar").write_bytes(archive.stdout)
    with tarfile.open(into / "base.tar") as tar:
        tar.extractall(into / "base", filter="data")
    tree = into / "base"
    (tree / "frontend" / "node_modules").symlink_to(ROOT / "frontend" / "node_modules")
    subprocess.run(["npx", "vite", "build", "--logLevel", "error"], cwd=tree / "frontend", check=True)
    return tree


def _serve(home: Path, src: Path | None) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    server = subprocess.Popen(
        [sys.executable, "-m", "flightlog", "server", "--port", "0", "--home", str(home)],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().split("listening on ")[1].split()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--base", help="also load git ref REF's pages, alternated with this tree's")
    parser.add_argument("--latency-ms", type=int, default=0, help="extra latency of every request (a remote server)")
    args = parser.parse_args()
    global LATENCY_MS
    LATENCY_MS = args.latency_ms
    from playwright.sync_api import sync_playwright

    if not (ROOT / "src/flightlog/server/static/ui/index.html").exists():
        subprocess.run([str(ROOT / "scripts" / "setup-ui.sh")], check=True)
    work = Path(tempfile.mkdtemp(prefix="flightlog-bench-ui-"))
    load_before = os.getloadavg()
    t = time.perf_counter()
    fill(work / "head", args.runs, args.points, args.lines)
    fill_s = time.perf_counter() - t
    sides: dict[str, tuple[Path, Path | None]] = {"head": (work / "head", None)}
    if args.base:
        tree = _base_tree(args.base, work)
        subprocess.run(  # the base's store, by the base's own code (its schema)
            [
                sys.executable,
                "-c",
                f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import ui_perf; from pathlib import Path; "
                f"ui_perf.fill(Path({str(work / 'base-home')!r}), {args.runs}, {args.points}, {args.lines})",
            ],
            env={**os.environ, "PYTHONPATH": str(tree / "src")},
            check=True,
        )
        sides["base"] = (work / "base-home", tree / "src")
    import httpx

    servers: dict[str, tuple[subprocess.Popen[str], str]] = {}
    results: dict[str, dict[str, list[float]]] = {
        side: {
            "runs_first_rows": [],
            "runs_first_rows_painted": [],
            "runs_sort": [],
            "run_chart": [],
            "run_chart_painted": [],
            "run_logs_first_page": [],
            "run_logs_first_page_painted": [],
        }
        for side in sides
    }
    try:
        for side, (home, src) in sides.items():
            servers[side] = _serve(home, src)
            url = servers[side][1]
            last = httpx.get(f"{url}/api/v1/runs/{BIG}/logs", params={"tail": "true", "limit": 1}).json()["events"][0][
                "message"
            ]
            assert last.startswith(f"step {args.lines - 1}:"), last
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for _, url in servers.values():
                measure(browser, f"{url}/projects/big", ".runs-table .row[data-run]")  # warm the server's caches once
            order = list(servers)
            for r in range(args.repeat):
                for side in order[r % len(order) :] + order[: r % len(order)]:
                    url = servers[side][1]
                    got = results[side]
                    shown, painted, sort = measure(
                        browser, f"{url}/projects/big", ".runs-table .row[data-run]", SORT_JS
                    )
                    got["runs_first_rows"].append(shown)
                    got["runs_first_rows_painted"].append(painted)
                    assert sort is not None and sort >= 0, "the sort never showed"
                    got["runs_sort"].append(sort)
                    chart, chart_painted, _ = measure(
                        browser,
                        f"{url}/projects/metrics/runs/{BIG}/metrics",
                        "[data-metric=loss] .u-over",
                        expect=f"{args.points:,} points",
                    )
                    got["run_chart"].append(chart)
                    got["run_chart_painted"].append(chart_painted)
                    logs, logs_painted, _ = measure(
                        browser, f"{url}/projects/metrics/runs/{BIG}/logs", ".log-list .log-row", expect="step 0: loss"
                    )
                    got["run_logs_first_page"].append(logs)
                    got["run_logs_first_page_painted"].append(logs_painted)
            browser.close()
    finally:
        for server, _ in servers.values():
            server.terminate()
            server.wait(timeout=60)
    if "base" in results:
        head_med = {k: statistics.median(v) for k, v in results["head"].items()}
        base_med = {k: statistics.median(v) for k, v in results["base"].items()}
        comparison: dict[str, Any] = {
            "base": args.base,
            "base_ms": {k: timings(v) for k, v in results["base"].items()},
            "ratios_head_over_base": {k: round(head_med[k] / base_med[k], 3) for k in head_med},
        }
    else:
        comparison = {}
    out = {k: timings(v) for k, v in results["head"].items()}
    emit(
        {
            "benchmark": "ui_perf",
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
            **comparison,
            "browser": "Debian chromium, headless, a fresh context per load (nothing cached)",
            "latency_ms": args.latency_ms,
            "runs_in_project": args.runs,
            "runs_page": {
                "first_rows": out["runs_first_rows"],
                "first_rows_painted": out["runs_first_rows_painted"],
                "sort": out["runs_sort"],
                "target_ms": {"first_rows": 300, "sort": 1000},
                "ok": out["runs_first_rows"]["median_ms"] <= 300 and out["runs_sort"]["max_ms"] <= 1000,
            },
            "metric_points": args.points,
            "log_lines": args.lines,
            "run_page": {
                "chart": out["run_chart"],
                "chart_painted": out["run_chart_painted"],
                "first_log_page": out["run_logs_first_page"],
                "first_log_page_painted": out["run_logs_first_page_painted"],
                "target_ms": {"chart": 400, "first_log_page": 1500},
                "ok": out["run_chart"]["median_ms"] <= 400 and out["run_logs_first_page"]["max_ms"] <= 1500,
            },
            "repeat": args.repeat,
            "fill_seconds": round(fill_s, 1),
            "machine": machine(),
        }
    )


if __name__ == "__main__":
    main()
