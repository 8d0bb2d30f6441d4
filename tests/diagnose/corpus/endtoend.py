"""Score the diagnosis end to end: ``python -m tests.diagnose.corpus.endtoend [--set heldout]``.

For each failure of the set, a workload prints the entry's real output the way a run prints
it and ends the way the entry says the run ended; it runs under ``flightlog run`` and ``flightlog
diagnose RUN --format json`` is read. Healthy workloads — the set's benign lines and output
that looks alarming but is not (warnings, retries that worked, evaluation statistics printed
as ``nan``, launcher banners) — must leave no finding at 0.5 or more.

How a failure is printed (chosen per entry from a hash of its message, so every run of the
scorer prints the same):
- an ordinary start: log lines with a ``logging`` prefix (or plain prints), a ``tqdm`` progress
  bar on stderr, a few metric lines;
- the message as the entry shows it on stderr: a traceback as the interpreter prints it; a
  one-line message through ``logging.error`` with a timestamp prefix or as it is; one traceback
  in seven as an escaped field of a JSON log line (``python-json-logger``'s shape); an entry with
  ``[rankN]:`` lines followed by torchrun's failure summary;
- the ending: ``ending: exit N`` exits N; ``SIGKILL`` for an out-of-memory entry allocates until
  the kernel kills it at ``--memory-limit``; ``exit 137`` for one holds memory near the limit and
  exits 137 (a remote launcher's report); another signal is sent to itself; ``exit 0`` after a
  caught SIGTERM exits 0; without an ending, exit 1.

Prints per set: top-1 at confidence >= 0.5, the right kind, per-category precision and recall,
the confusion matrix, the calibration, the healthy workloads with a lead; ``--format json``
prints one JSON object; ``--sample N`` runs a fixed sample (what ``test_corpus.py`` runs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.diagnose.corpus.load import SETS, load_set
from tests.diagnose.corpus.score import BELOW, LEAD, summarize

__all__ = ["Workload", "failure_workload", "healthy_workloads", "run_workload", "score", "main"]

PROJECT = "e2e"
#: the memory limit of the workloads that end by an out-of-memory kill
MEMORY_LIMIT = "160M"
_RUN_ID = re.compile(r"flightlog: run ([0-9a-f]{32}) started")


@dataclass
class Workload:
    id: str
    expected: str  # a category, or "none" for a healthy workload
    script: str
    runner: list[str] = field(default_factory=list)
    source: str = ""


def _style(message: str) -> int:
    return int(hashlib.sha256(message.encode()).hexdigest()[:8], 16)


_PREAMBLE = """\
import json, logging, os, signal, sys, time
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format={fmt!r})
log = logging.getLogger({logger!r})
log.info("loading the dataset from ./data (12,000 rows)")
log.info("model: 3 layers, 1.2M parameters")
"""
_PROGRESS = """\
try:
    from tqdm import tqdm
    for _ in tqdm(range(40), desc="epoch 1", mininterval=0):
        time.sleep(0.001)
except ImportError:
    pass
for step in range(1, 4):
    print(f"step {step * 100}: loss={2.0 / step:.4f} lr=3e-4", flush=True)
"""
_LAUNCHER_SUMMARY = """\
E0105 12:00:03.118000 4242 torch/distributed/elastic/multiprocessing/api.py:881] failed (exitcode: 1) local_rank: 0 (pid: 4243) of binary: /usr/bin/python3
Traceback (most recent call last):
  File "/usr/local/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 892, in main
    run(args)
  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 263, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2025-01-05_12:00:03
  host      : node-1
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 4243)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""
_HOLD_MEMORY = """\
page = os.sysconf("SC_PAGE_SIZE")
def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
_blocks = []
while _rss() < {share} * {limit}:
    _blocks.append(bytearray(b"x" * (1 << 20)))
"""


def _limit_bytes() -> int:
    return int(MEMORY_LIMIT[:-1]) * 1024 * 1024


def failure_workload(entry: dict[str, Any], index: int) -> Workload:
    """The script that prints ``entry`` the way a run would, and ends as it ended."""
    message = entry["message"]
    h = _style(message)
    logged = h % 3 != 0
    fmt = "%(asctime)s - %(name)s - %(levelname)s - %(message)s" if logged else "%(message)s"
    lines = [_PREAMBLE.format(fmt=fmt, logger="train"), _PROGRESS if (h // 3) % 2 == 0 else ""]
    is_traceback = "Traceback (most recent call last)" in message
    ranked = bool(re.search(r"^\[rank\d+\]:", message, re.M))
    if is_traceback and (h // 6) % 7 == 0 and not ranked:
        head = message.strip().splitlines()[-1][:200]
        record = {"asctime": "2025-01-05 12:00:03,118", "levelname": "ERROR", "name": "train", "message": head}
        record["exc_info"] = message
        lines.append(f"sys.stderr.write({json.dumps(record)!r} + '\\n')")
    elif is_traceback or ranked or "\n" in message.strip() or not logged:
        lines.append(f"sys.stderr.write({message!r} + '\\n')")
    else:
        lines.append(f"log.error({message!r})")
    if ranked:
        lines.append(f"sys.stderr.write({_LAUNCHER_SUMMARY!r})")
    lines.append("sys.stderr.flush(); sys.stdout.flush()")
    runner: list[str] = []
    ending = (entry.get("ending") or "").strip()
    oom = entry["expected"] == "oom_killed"
    if ending == "SIGKILL" and oom:
        runner = ["--memory-limit", MEMORY_LIMIT, "--sample-interval", "0.1s"]
        lines.append(_HOLD_MEMORY.format(share=10, limit=_limit_bytes()))  # until the kernel kills it
    elif ending == "exit 137" and oom:
        runner = ["--memory-limit", MEMORY_LIMIT, "--sample-interval", "0.1s"]
        lines.append(_HOLD_MEMORY.format(share=0.95, limit=_limit_bytes()))
        lines.append("time.sleep(0.5)\nos._exit(137)")
    elif ending.startswith("SIG") or ending.startswith("signal "):
        name = ending if ending.startswith("SIG") else f"SIG{ending.split()[1]}"
        number = f"signal.{name}" if not name[3:].isdigit() else name[3:]
        lines.append(f"signal.signal({number}, signal.SIG_DFL)\nos.kill(os.getpid(), {number})\ntime.sleep(5)")
    elif ending.startswith("exit "):
        lines.append(f"sys.exit({int(ending.split()[1])})")
    else:
        lines.append("sys.exit(1)")
    source = entry.get("source", "")
    return Workload(f"{entry['expected']}-{index:04d}", entry["expected"], "\n".join(lines) + "\n", runner, source)


#: healthy output that looks alarming (written here, not quoted: what healthy ML runs print)
HEALTHY = (
    [
        "UserWarning: The given NumPy array is not writable, and PyTorch does not support non-writable tensors.",
        "WARNING:urllib3.connectionpool:Retrying (Retry(total=4, connect=None, read=None)) after connection broken by 'ConnectionResetError(104, 'Connection reset by peer')': /api/v1/models",
        "INFO: retry 1/3 succeeded after a 429 Too Many Requests",
        "step 400: loss=0.8731 lr=3e-4",
        "done: model saved to ./out/model.pt",
    ],
    [
        "step 100: loss=0.9120",
        "eval: {'eval_loss': 0.412, 'eval_f1_minority': nan, 'eval_accuracy': 0.913}",
        "step 200: loss=0.7311",
        "precision for class 'rare' is nan (no predicted samples)",
        "step 300: loss=0.6025",
        "training complete",
    ],
    [
        "*****************************************",
        "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to avoid your system being overloaded, please further tune the variable for optimal performance in your application as needed.",
        "*****************************************",
        "[rank0]: initialized process group: backend=nccl world_size=2",
        "[W socket.cpp:663] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - Cannot assign requested address).",
        "[rank0]: step 100 loss=1.02",
        "finished",
    ],
    [
        "DeprecationWarning: `np.bool` is a deprecated alias for the builtin `bool`.",
        "FutureWarning: The default value of `n_init` will change from 10 to 'auto' in 1.4.",
        "wandb: Network error (ReadTimeout), entering retry loop.",
        "wandb: Synced 5 W&B file(s), 0 media file(s)",
        "Killed 3 stale workers before starting the pool",
        "final accuracy 0.94",
    ],
)


def healthy_workloads(name: str) -> list[Workload]:
    """The set's benign lines printed by a run that succeeds, and the alarming-but-healthy runs."""
    out = []
    for index, entry in enumerate(load_set(name)["benign"]):
        script = _PREAMBLE.format(fmt="%(message)s", logger="train") + f"print({entry['message']!r})\nprint('done')\n"
        out.append(Workload(f"healthy-benign-{index:03d}", "none", script, [], entry.get("source", "")))
    for index, lines in enumerate(HEALTHY):
        body = "".join(f"print({line!r}, file=sys.stderr if 'Warning' in {line!r} else sys.stdout)\n" for line in lines)
        out.append(
            Workload(f"healthy-alarming-{index}", "none", _PREAMBLE.format(fmt="%(message)s", logger="t") + body)
        )
    return out


def run_workload(w: Workload, root: Path) -> dict[str, Any]:
    """Run ``w`` under ``flightlog run`` and read ``flightlog diagnose --format json``."""
    home = root / w.id / "home"
    home.mkdir(parents=True, exist_ok=True)
    script = root / w.id / "workload.py"
    script.write_text(w.script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    env.update(FLIGHTLOG_HOME=str(home), PYTHONUNBUFFERED="1")
    exe = str(Path(sys.executable).with_name("flightlog"))
    proc = subprocess.run(
        [exe, "run", "--project", PROJECT, "--name", w.id, *w.runner, "--", sys.executable, str(script)],
        env=env,
        cwd=root / w.id,
        capture_output=True,
        text=True,
        timeout=180,
    )
    m = _RUN_ID.search(proc.stderr)
    if m is None:
        return {"id": w.id, "expected": w.expected, "error": proc.stderr[-2000:]}
    diag = subprocess.run(
        [exe, "diagnose", m[1], "--format", "json"], env=env, capture_output=True, text=True, timeout=180
    )
    report = json.loads(diag.stdout) if diag.returncode == 0 else {"findings": [], "error": diag.stderr[-2000:]}
    findings = report.get("findings") or []
    top = findings[0] if findings else {"category": "none", "confidence": 0.0}
    row = {
        "id": w.id,
        "expected": w.expected,
        "category": top["category"],
        "confidence": top["confidence"],
        "source": w.source,
        "exit_code": proc.returncode,
        "findings": [(f["category"], f["confidence"]) for f in findings[:3]],
    }
    if diag.returncode != 0:  # a diagnosis that failed is no answer "none": the report lists it
        row["diagnose_error"] = {"exit_code": diag.returncode, "stderr": diag.stderr[-1500:]}
    elif not findings and w.expected != "none":  # a failed run with no finding at all: what the run said
        said = [line for line in proc.stderr.splitlines() if line.startswith("flightlog: ")]
        row["no_finding"] = {"status": report.get("status"), "runner": said[-3:]}  # the runner's own lines only
    return row


def _sample(items: list[Any], n: int | None, key: Any) -> list[Any]:
    if n is None or n >= len(items):
        return items
    return sorted(items, key=lambda x: hashlib.sha256(key(x).encode()).hexdigest())[:n]


def score(name: str, *, sample: int | None = None, parallel: int = 2, healthy: bool = True) -> dict[str, Any]:
    failures = load_set(name)["failures"]
    workloads = [failure_workload(e, i) for i, e in enumerate(failures)]
    workloads = _sample(workloads, sample, lambda w: w.script)
    extra = healthy_workloads(name) if healthy else []
    extra = _sample(extra, None if sample is None else max(2, sample // 4), lambda w: w.script)
    with tempfile.TemporaryDirectory(prefix="flightlog-e2e-") as tmp, ThreadPoolExecutor(parallel) as pool:
        done = list(pool.map(lambda w: run_workload(w, Path(tmp)), [*workloads, *extra]))
    rows = [r for r in done if r["expected"] != "none"]
    for r in rows:
        r["predicted"] = r.get("category", "none") if r.get("confidence", 0.0) >= LEAD else BELOW
    report = summarize(name, rows)
    report["mode"] = "end to end"
    report["healthy_workloads"] = len([r for r in done if r["expected"] == "none"])
    report["healthy_at_0_5"] = [
        {"id": r["id"], "category": r.get("category"), "confidence": r.get("confidence")}
        for r in done
        if r["expected"] == "none" and r.get("confidence", 0.0) >= LEAD
    ]
    report["errors"] = [r for r in done if "error" in r]
    # how the diagnosis itself failed, and failed runs it found nothing in (both scored as "none")
    report["diagnose_errors"] = [
        {"id": r["id"], "expected": r["expected"], **r["diagnose_error"]} for r in done if "diagnose_error" in r
    ]
    report["no_finding"] = [
        {"id": r["id"], "expected": r["expected"], **r["no_finding"]} for r in done if "no_finding" in r
    ]
    return report


def main(argv: list[str] | None = None) -> int:
    from tests.diagnose.corpus.score import render

    parser = argparse.ArgumentParser(
        prog="python -m tests.diagnose.corpus.endtoend", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--set", choices=SETS, action="append", help="score this set (repeatable; default: heldout)")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--sample", type=int, help="run this many failures (a fixed sample), not all")
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args(argv)
    reports = [score(n, sample=args.sample, parallel=args.parallel) for n in (args.set or ["heldout"])]
    if args.format == "json":
        print(json.dumps({r["set"]: r for r in reports}, indent=2))
    else:
        for r in reports:
            print(render(r, show_misses=False))
            print(f"healthy workloads: {r['healthy_workloads']}, at >= 0.5: {len(r['healthy_at_0_5'])}")
            for h in r["healthy_at_0_5"]:
                print(f"  healthy {h['id']} at {h['confidence']}: {h['category']}")
            for e in r["errors"]:
                print(f"  no result for {e['id']}: {e.get('error', '')[:300]}")
            for e in r["diagnose_errors"]:
                print(f"  the diagnosis of {e['id']} failed (exit {e['exit_code']}): {e['stderr'][-300:]}")
            for e in r["no_finding"]:
                print(f"  no finding on failed {e['id']} (status {e['status']}): {' | '.join(e['runner'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
