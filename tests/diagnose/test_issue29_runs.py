"""The classes of miss of issue 29, each as a real run under ``flightlog run`` (or a process
killed from outside) diagnosed in full: the cause is read from the whole failure — the chain's
root under a wrapper, codes inside generic errors, where the traceback was printed, and how the
process really ended — not from the last message. Each of these was answered wrongly (or
below 0.5) before the diagnosis read the failure as a structure (``flightlog.diagnose.structure``)."""

from __future__ import annotations

import itertools
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import child_env, cli

pytestmark = pytest.mark.embedded_only("the report is the same over either transport (tests/diagnose/test_api.py)")


def _run(home: Path, script: str, *runner: str, argv: tuple[str, ...] = ()) -> tuple[str, dict[str, Any]]:
    """Run ``script`` under ``flightlog run``; the run's id and its full diagnosis."""
    from flightlog.client import Client

    path = home.parent / "workload.py"
    path.write_text(textwrap.dedent(script))
    proc = cli(
        home, "run", "--project", "issue29", *runner, "--", sys.executable, str(path), *argv, check=False, timeout=120
    )
    m = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)
    assert m, proc.stderr
    with Client(home) as c:
        return m[1], c.diagnose(m[1], auto_baseline=False)


def _top(report: dict[str, Any]) -> tuple[str, float]:
    findings = report["findings"]
    return (findings[0]["category"], findings[0]["confidence"]) if findings else ("none", 0.0)


def _lead(report: dict[str, Any], category: str, at_least: float = 0.5) -> dict[str, Any]:
    """The top finding is ``category`` at ``at_least`` or more (0.5: a lead) with evidence."""
    top = report["findings"][0] if report["findings"] else {}
    assert top.get("category") == category and top["confidence"] >= at_least, report["findings"][:3]
    assert top["evidence"] and all(e["detail"] for e in top["evidence"]), top
    return top


# ── a wrapper's message over the chain's root ─────────────────────────────────
WRAPPED_DRIVER = '''
import sys
class OperationalError(Exception):
    """The driver's own error class (as psycopg2 defines it)."""
OperationalError.__module__ = "psycopg2"
class DBAPIError(Exception):
    """The ORM's generic wrapper (as SQLAlchemy's exc.OperationalError)."""
DBAPIError.__module__ = "sqlalchemy.exc"
DBAPIError.__qualname__ = "OperationalError"
def connect():
    raise OperationalError('connection to server at "db" (10.0.0.5), port 5432 failed: FATAL:  password authentication failed for user "trainer"')
def load_features():
    try:
        connect()
    except OperationalError as exc:
        raise DBAPIError("(psycopg2.OperationalError) (Background on this error at: https://sqlalche.me/e/20/e3q8)") from exc
print("loading features from the warehouse", flush=True)
load_features()
'''


def test_the_root_of_a_chain_outvotes_the_wrapper_s_words(home: Path) -> None:
    _, report = _run(home, WRAPPED_DRIVER)
    top = _lead(report, "credentials_error")
    assert "password authentication failed" in top["summary"], top["summary"]


# ── a service refusing for capacity ──────────────────────────────────────────
THROTTLED = """
import http.server, threading, requests
class Busy(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(429)
        self.send_header("Retry-After", "30")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", 0), Busy)
threading.Thread(target=server.serve_forever, daemon=True).start()
print("fetching embeddings", flush=True)
requests.get(f"http://127.0.0.1:{server.server_port}/v1/embeddings", timeout=5).raise_for_status()
"""


def test_a_service_that_refuses_for_capacity(home: Path) -> None:
    """A real HTTP 429 from a local server, raised by requests as its generic HTTPError."""
    _, report = _run(home, THROTTLED)
    _lead(report, "service_unavailable")


# ── a framework's configuration check ─────────────────────────────────────────
CONFIG_CHECK = """
import torch
print("building the model", flush=True)
attention = torch.nn.MultiheadAttention(embed_dim=100, num_heads=3)
"""


def test_a_framework_s_configuration_check(home: Path) -> None:
    """torch's own check of two values against each other (embed_dim divisible by num_heads)."""
    pytest.importorskip("torch")
    _, report = _run(home, CONFIG_CHECK)
    # named first, but the ranker's calibrated confidence stays below a lead (0.44 at the
    # commit that trained it): on the corpus's development side a refused setting on a generic
    # AssertionError is often another kind of failure. Before issue 29 it was a code_error.
    _lead(report, "bad_parameter", at_least=0.4)


# ── a hint needs something that names it ────────────────────────────────────
OWN_CHECK = """
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
class SGD:
    def __init__(self, lr):
        if lr <= 0:
            raise ValueError(f"learning rate must be positive, got {lr}")
print("epoch 0 loss 1.2", flush=True)
SGD(args.lr)
"""


def test_no_hint_repeats_the_failure_under_a_category_nothing_named(home: Path) -> None:
    """An own-code check of a parameter: the lead is bad_parameter, and no hint below it is a
    category that only the model's prior put there (it read "dependency_error 0.12, a package is
    missing: ValueError: learning rate must be positive", the same line under a wrong name)."""
    _, report = _run(home, OWN_CHECK, argv=("--lr", "-0.5"))
    _lead(report, "bad_parameter")
    for hint in report["findings"][1:]:
        assert any(e["source"] != "traceback" or "raised in" not in e["detail"] for e in hint["evidence"]), hint
        assert hint["category"] != "dependency_error", report["findings"]


# ── a library's API changed under the user ───────────────────────────────────
API_CHANGED = """
import pandas as pd
rows = pd.DataFrame({"step": [1], "loss": [0.5]})
print("collecting the metrics", flush=True)
rows = rows.append({"step": 2, "loss": 0.4}, ignore_index=True)
"""


def test_a_library_api_that_changed_under_the_user(home: Path) -> None:
    """``DataFrame.append`` was removed in pandas 2: an AttributeError raised inside pandas."""
    import pandas as pd

    if int(pd.__version__.split(".")[0]) < 2:
        pytest.skip("DataFrame.append still exists before pandas 2")
    _, report = _run(home, API_CHANGED)
    _lead(report, "dependency_error")


# ── a kill from outside at a memory limit ────────────────────────────────────
REMOTE_LAUNCHER = """
import os, sys, time
limit = int(sys.argv[1])
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
blocks = []
print("job 8812 running on the remote pool", flush=True)
while rss() < 0.96 * limit:
    blocks.append(bytearray(b"x" * (1 << 20)))
time.sleep(0.6)  # the runner samples the tree at its limit
print("job 8812: container exited with code 137", flush=True)
os._exit(137)
"""


LAUNCHER_REPORTS_SIGKILL = """
import os, sys, time
limit = int(sys.argv[1])
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
blocks = []
print("[default0]: step 10 loss=1.93", flush=True)
while rss() < 0.95 * limit:
    blocks.append(bytearray(b"x" * (1 << 20)))
time.sleep(0.6)
del blocks
sys.stderr.write(
    "W0105 12:00:03.118000 4242 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4244 closing signal SIGTERM\\n"
    "E0105 12:00:03.318000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 0 (pid: 4243) of binary: /usr/bin/python3\\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\\n"
    "Root Cause (first observed failure):\\n"
    "[0]:\\n"
    "  rank      : 0 (local_rank: 0)\\n"
    "  exitcode  : -9 (pid: 4243)\\n"
    "  traceback : Signal 9 (SIGKILL) received by PID 4243\\n"
)
sys.exit(1)
"""


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads its own memory from /proc")
def test_a_launcher_reports_its_worker_killed_with_memory_at_the_limit(home: Path) -> None:
    """The launcher exits 1 and says its worker got SIGKILL; the samples show the tree at its limit."""
    limit = 160 * 1024 * 1024
    _, report = _run(
        home, LAUNCHER_REPORTS_SIGKILL, "--memory-limit", "160M", "--sample-interval", "0.1s", argv=(str(limit),)
    )
    _lead(report, "oom_killed")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads its own memory from /proc")
def test_exit_137_reported_by_a_launcher_with_memory_at_its_limit(home: Path) -> None:
    limit = 160 * 1024 * 1024
    _, report = _run(home, REMOTE_LAUNCHER, "--memory-limit", "160M", "--sample-interval", "0.1s", argv=(str(limit),))
    top = _lead(report, "oom_killed")
    assert any(e["source"] == "resources" for e in top["evidence"]), top


# ── the error is there but not where the reader looks ─────────────────────────
JSON_LOGS = """
import json, logging, sys, traceback
class JsonFormatter(logging.Formatter):
    def format(self, record):
        out = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            out["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(out)
handler = logging.StreamHandler(sys.stderr)
handler.setFormatter(JsonFormatter())
log = logging.getLogger("train")
log.addHandler(handler)
log.setLevel(logging.INFO)
log.info("epoch 1 started")
try:
    try:
        raise OSError(28, "No space left on device")
    except OSError as exc:
        raise RuntimeError("could not write checkpoint ckpt-300.pt") from exc
except RuntimeError:
    log.exception("training stopped")
    sys.exit(1)
"""

RICH_BOX = """
import sys
import pandas as pd
from rich.console import Console
from rich.traceback import Traceback
console = Console(file=sys.stderr, width=120, color_system=None)
frame = pd.DataFrame({"user_id": [1, 2], "amount_usd": [3.0, 4.5]})
try:
    print("computing features", flush=True)
    total = frame["amount"].sum()
except Exception:
    console.print(Traceback(max_frames=30))
    sys.exit(1)
"""

RANK_PREFIXED = """
import sys, traceback
def write_checkpoint(depth):
    if depth == 0:
        raise OSError(28, "No space left on device")
    write_checkpoint(depth - 1)
def save(step):
    try:
        write_checkpoint(15)
    except OSError as exc:
        raise RuntimeError(f"checkpoint at step {step} could not be written") from exc
def train(depth):
    if depth == 0:
        save(300)
    train(depth - 1)
try:
    train(15)
except RuntimeError:
    for line in traceback.format_exc().splitlines():
        print(f"[rank0]: {line}", file=sys.stderr)
    sys.exit(1)
"""

WORKER_RERAISED = """
from torch.utils.data import DataLoader, Dataset
class Captions(Dataset):
    # reads captions as UTF-8; one file of the set is Latin-1
    def __len__(self):
        return 4
    def __getitem__(self, i):
        raw = bytes([99, 97, 102, 233]) if i == 0 else b"a photo of a cat"
        return raw.decode("utf-8")
if __name__ == "__main__":
    print("epoch 1", flush=True)
    for batch in DataLoader(Captions(), num_workers=1):
        pass
"""

POOL_RERAISED = """
from concurrent.futures import ProcessPoolExecutor
def tokenize(path):
    import socket
    socket.create_connection(("127.0.0.1", 1), timeout=2)
if __name__ == "__main__":
    print("tokenizing 4 files", flush=True)
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(tokenize, ["a", "b", "c", "d"]))
"""

NATIVE_CHECK = """
import os, sys
print("I0105 12:34:50.000000  4242 record_reader.cc:41] opening 12 shards", file=sys.stderr, flush=True)
print("F0105 12:34:56.789012  4242 record_reader.cc:88] Check failed: fd >= 0 (-1 vs. 0) open(/data/shard-00003.rec) failed: No such file or directory", file=sys.stderr, flush=True)
print("*** Check failure stack trace: ***", file=sys.stderr, flush=True)
print("    @     0x7f3c2b1c4d5a  google::LogMessage::Fail()", file=sys.stderr, flush=True)
os.abort()
"""


@pytest.mark.parametrize(
    ("script", "expected", "needs"),
    [
        (JSON_LOGS, "disk_full", None),
        (RICH_BOX, "data_error", "rich"),
        (RANK_PREFIXED, "disk_full", None),
        (WORKER_RERAISED, "data_error", "torch"),
        (POOL_RERAISED, "service_unavailable", None),
        (NATIVE_CHECK, "missing_file", None),
    ],
    ids=["json_log_field", "rich_box", "rank_prefixes", "data_loader_worker", "process_pool_worker", "native_check"],
)
def test_the_error_is_there_but_not_where_the_reader_looks(
    home: Path, script: str, expected: str, needs: str | None
) -> None:
    if needs:
        pytest.importorskip(needs)
    _, report = _run(home, script)
    _lead(report, expected)


# ── the ending is not the process's exit ─────────────────────────────────────
#: a training loop that handles SIGTERM with its ``on_term``, defined before it
_TRAINS_UNTIL_SIGTERM = """
signal.signal(signal.SIGTERM, on_term)
for step in range(100000):
    if step % 20 == 0:
        print(f"step {step}: loss={1.0 / (step + 1):.4f}", flush=True)
    time.sleep(0.01)
"""
CAUGHT_SIGTERM = (
    """
import signal, sys, time
def on_term(signum, frame):
    print(f"Received SIGTERM: {signum}. Saving checkpoint ckpt-120.pt and exiting.", flush=True)
    sys.exit(0)
"""
    + _TRAINS_UNTIL_SIGTERM
)


#: the same, as Lightning does it: the signal is named, then a checkpoint is saved and said so
CAUGHT_SIGTERM_THEN_SAVED = (
    """
import signal, sys, time
def on_term(signum, frame):
    print(f"[rank: 0] Received SIGTERM: {signum}", flush=True)
    print("Saving checkpoint to ckpt/last.ckpt", flush=True)
    print("Checkpoint saved.", flush=True)
    print("Exiting gracefully.", flush=True)
    sys.exit(0)
"""
    + _TRAINS_UNTIL_SIGTERM
)


def test_a_framework_that_catches_sigterm_and_exits_0(home: Path) -> None:
    """A scheduler sends SIGTERM to the job; the training loop saves and exits 0."""
    _caught_sigterm(home, CAUGHT_SIGTERM)


def test_a_caught_sigterm_is_the_ending_though_lines_follow_it(home: Path) -> None:
    """The lines after "Received SIGTERM" (a checkpoint saved) do not make it something the run
    got over: on a run that exited 0, a signal named in its last lines is how it ended, while a
    warning it got over is a hint (issue 29)."""
    _caught_sigterm(home, CAUGHT_SIGTERM_THEN_SAVED)


def _caught_sigterm(home: Path, source: str) -> None:
    from flightlog.client import Client

    path = home.parent / "workload.py"
    path.write_text(textwrap.dedent(source))
    exe = Path(sys.executable).with_name("flightlog")
    proc = subprocess.Popen(
        [str(exe), "run", "--project", "issue29", "--", sys.executable, str(path)],
        env=child_env(home),
        cwd=home.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    started = proc.stderr.readline()
    run = re.search(r"run ([0-9a-f]{32}) started", started)
    assert run, started
    line = proc.stdout.readline()  # the workload is running: its first step was printed
    assert line.startswith("step 0"), line
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    with Client(home) as c:
        info = c.run(run[1])
        report = c.diagnose(run[1], auto_baseline=False)
    assert info.exit_code == 0
    _lead(report, "killed_by_signal")


SIGALRM_DEFAULT = """
import signal, time
signal.alarm(1)  # the job's own time limit, set by its wrapper script
print("waiting for the batch queue", flush=True)
while True:
    time.sleep(0.05)
"""

SIGALRM_RAISED = """
import signal, time
class TaskTimeout(Exception):
    pass
def on_alarm(signum, frame):
    raise TimeoutError("task 'train_shard_7' exceeded its time limit of 1 seconds")
signal.signal(signal.SIGALRM, on_alarm)
signal.alarm(1)
print("training shard 7", flush=True)
while True:
    time.sleep(0.05)
"""

#: the same limit in other words a workload's handler uses: the length before the limit, or a
#: budget of time (read as no clear cause, `code_error` 0.19 and 0.33, before they were named)
SIGALRM_LENGTH_FIRST = SIGALRM_RAISED.replace(
    "task 'train_shard_7' exceeded its time limit of 1 seconds", "training step exceeded the 1 s time limit"
)
SIGALRM_BUDGET = SIGALRM_RAISED.replace(
    "raise TimeoutError(\"task 'train_shard_7' exceeded its time limit of 1 seconds\")",
    'raise TaskTimeout("wall-clock budget of 1s exhausted while training shard 7")',
)

ANOMALY = """
import torch
torch.autograd.set_detect_anomaly(True)
w = torch.tensor([1.0, 2.0], requires_grad=True)
x = torch.tensor([0.0, 1.0])
print("step 1: loss=0.6931", flush=True)
loss = (w * x / x).sum()  # 0/0 on the first element: NaN in the backward pass only
loss.backward()
"""


@pytest.mark.parametrize(
    ("script", "expected", "needs"),
    [
        (SIGALRM_DEFAULT, "timeout", None),
        (SIGALRM_RAISED, "timeout", None),
        (SIGALRM_LENGTH_FIRST, "timeout", None),
        (SIGALRM_BUDGET, "timeout", None),
        (ANOMALY, "nan_loss", "torch"),
    ],
    ids=["sigalrm_default", "sigalrm_raised", "sigalrm_length_first", "sigalrm_budget", "anomaly_detection"],
)
def test_the_ending_is_not_the_process_s_exit(home: Path, script: str, expected: str, needs: str | None) -> None:
    if needs:
        pytest.importorskip(needs)
    _, report = _run(home, script)
    _lead(report, expected)


def test_the_fast_classifier_agrees_with_the_full_diagnosis(home: Path) -> None:
    """The runner's own "looks like X" comes from the same reading (the structure, the ranker)."""
    from flightlog.client import Client

    run, report = _run(home, JSON_LOGS)
    with Client(home) as c:
        info = c.run(run)
    assert info.failure["category"] == report["findings"][0]["category"] == "disk_full"


EVAL_NAN = """
import sys
for epoch in range(1, 4):
    for step in range(1, 4):
        print(f"epoch {epoch} step {step}: loss={1.0 / (epoch * step):.4f}", flush=True)
    print(f"eval: {{'eval_loss': {0.5 / epoch:.3f}, 'eval_f1_minority': nan, 'eval_accuracy': 0.913}}", flush=True)
print("training complete", flush=True)
"""


def test_an_evaluation_statistic_printed_as_nan_is_no_lead(home: Path) -> None:
    """An F1 or an AUC undefined on a subset with no positives is printed as nan by healthy runs."""
    _, report = _run(home, EVAL_NAN)
    assert all(f["confidence"] < 0.5 for f in report["findings"]), report["findings"][:3]


# ── a rank's configuration check under torchrun ───────────────────────────────
RANK_CONFIG_CHECK = """
import sys
TRL = "/opt/conda/lib/python3.10/site-packages/trl/trainer/grpo_trainer.py"
RANK = [
    "Traceback (most recent call last):",
    '  File "/work/open-r1/src/open_r1/grpo.py", line 241, in <module>',
    "    main(script_args, training_args, model_args)",
    '  File "/work/open-r1/src/open_r1/grpo.py", line 174, in main',
    "    trainer = GRPOTrainer(",
    f'  File "{TRL}", line 321, in __init__',
    "    raise ValueError(",
    "ValueError: The global train batch size (7 x 1) must be evenly divisible by the number of generations "
    "per prompt (8). Given the current train batch size, the valid values for the number of generations are: [7].",
]
LAUNCHER = [
    "W0105 12:00:02.500000 4242 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4243 closing signal SIGTERM",
    "E0105 12:00:03.118000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1 (pid: 4244) of binary: /usr/bin/python3",
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "============================================================",
    "grpo.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "[0]:",
    "  time      : 2025-01-05_12:00:03",
    "  host      : node-1",
    "  rank      : 0 (local_rank: 0)",
    "  exitcode  : -15 (pid: 4243)",
    "  error_file: <N/A>",
    "  traceback : Signal 15 (SIGTERM) received by PID 4243",
    "------------------------------------------------------------",
    "Root Cause (first observed failure):",
    "[1]:",
    "  time      : 2025-01-05_12:00:03",
    "  host      : node-1",
    "  rank      : 1 (local_rank: 1)",
    "  exitcode  : 1 (pid: 4244)",
    "  error_file: <N/A>",
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
    "============================================================",
]
print("step 0: loading the model", flush=True)
for line in RANK:
    print(f"[rank1]: {line}", file=sys.stderr)
for line in LAUNCHER:
    print(line, file=sys.stderr)
sys.exit(1)
"""


def test_a_rank_s_configuration_check_is_a_bad_parameter_not_the_rank_s_code(home: Path) -> None:
    """The culprit rank's error is categorized as a process's own failure is (the ranker over the
    whole reading), not by the rules alone: before, the culprit finding called a library's
    configuration check raised as ``ValueError`` ``code_error`` 0.88 and led the report."""
    _, report = _run(home, RANK_CONFIG_CHECK)
    top = _lead(report, "bad_parameter")
    assert "rank 1" in top["summary"], top["summary"]


REGISTRY_ALIAS = """
class ModelNotFoundError(LookupError):
    pass

raise ModelNotFoundError("Registered model alias 'champion' not found for model 'churn' (aliases: ['production'])")
"""


def test_the_name_a_not_found_message_says_is_missing_is_the_one_before_its_words(home: Path) -> None:
    """ "Registered model alias 'champion' not found for model 'churn'", with params alias=champion
    and model=churn: the diagnosis took the name quoted after "not found" (churn) for the missing
    one, its params evidence blamed param model, and its summary called churn "a file the run
    needed". The name before the words is the missing one. Found on a complete scoring run
    written for the purpose (issue 29)."""
    _, report = _run(home, REGISTRY_ALIAS, "--param", "alias=champion", "--param", "model=churn")
    top = report["findings"][0]
    details = [e["detail"] for e in top["evidence"] if e["source"] == "params"]
    assert details == ["'champion' is the value of param alias"], top
    assert "'champion'" in top["summary"] and "file" not in top["summary"].split("(")[0], top["summary"]


EVENT_RECORDS = """
import json, logging
from pydantic import BaseModel

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")


class Event(BaseModel):
    user_id: int
    page: str
    dwell_ms: float


lines = [json.dumps({"user_id": i, "page": "/p", "dwell_ms": "12s" if i == 77 else 100 + i}) for i in range(200)]
events = []
for n, line in enumerate(lines):
    events.append(Event.model_validate_json(line))
logging.info("validated %d events", len(events))
"""


def test_a_record_pydantic_refused_is_a_data_error_in_the_whole_run(home: Path) -> None:
    """An event of the data that breaks its pydantic model ("Input should be a valid number,
    unable to parse string as a number") was read from pydantic's role alone — a library that
    builds configurations — as bad_parameter 0.35, "no clear cause". What was validated says
    whose it is: a record of the data here. Found on a complete ingestion run written for the
    purpose (issue 29)."""
    _, report = _run(home, EVENT_RECORDS)
    _lead(report, "data_error")


# ── a search that scored its failed fits NaN and went on ──────────────────────
SEARCH_WITH_FAILED_FITS = """
import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

X, y = make_classification(n_samples=300, n_features=8, random_state=0)
# lbfgs refuses an elastic-net mix (l1_ratio 0.5): those grid points fail and score nan, the search goes on
grid = {"solver": ["saga", "lbfgs"], "l1_ratio": [0.0, 0.5], "C": [0.1, 1.0]}
gs = GridSearchCV(LogisticRegression(max_iter=2000), grid, cv=3, error_score=np.nan)
gs.fit(X, y)
print("best", gs.best_params_, round(gs.best_score_, 3))
"""


def test_a_search_s_non_finite_test_scores_are_no_nan_loss(home: Path) -> None:
    """Regression: scikit-learn's "One or more of the test scores are non-finite: [... nan ...]"
    (failed fits scored NaN in a search that completed) read as a numeric guard, nan_loss 0.26
    on a healthy run, and its printed best parameters became the metrics ``C`` and ``l1_ratio``."""
    pytest.importorskip("sklearn")
    from flightlog.client import Client

    run, report = _run(home, SEARCH_WITH_FAILED_FITS)
    assert report["status"] == "succeeded", report
    assert not [f for f in report["findings"] if f["category"] == "nan_loss"], report["findings"]
    with Client(home) as c:
        assert not {"C", "l1_ratio"} & set(c.run(run).metrics), c.run(run).metrics


# ── a database server's own condition under the client's and the ORM's words ──
# Real PostgreSQL (the session's server, tests/conftest.py): psycopg prints the server's FATAL
# answer to a login inside "connection failed: connection to server at … failed:", and without
# the SQLSTATE; SQLAlchemy wraps each driver error in one of its few generic classes.
MISSING_ROLE = """
import logging, sys
import psycopg
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
logging.info("registering the run with the experiment database")
conn = psycopg.connect(sys.argv[1].replace("postgresql://postgres@", "postgresql://trainer@"), connect_timeout=10)
"""
MISSING_DATABASE = """
import logging, sys
from sqlalchemy import create_engine, text
logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(message)s")
url = sys.argv[1].rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://") + "/features_prod"
logging.info("connecting to the feature store")
with create_engine(url).connect() as c:
    print(c.execute(text("SELECT count(*) FROM features")).scalar())
"""
SERIALIZATION_FAILURE = """
import logging, sys, threading
from sqlalchemy import create_engine, text
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(threadName)s %(message)s")
engine = create_engine(sys.argv[1].replace("postgresql://", "postgresql+psycopg://"), isolation_level="SERIALIZABLE")
with engine.begin() as c:
    c.execute(text("CREATE TABLE IF NOT EXISTS accounts (id int primary key, balance int)"))
    c.execute(text("INSERT INTO accounts VALUES (1, 100), (2, 100) ON CONFLICT DO NOTHING"))
barrier = threading.Barrier(2)
errors = []
def transfer(src):
    try:
        with engine.begin() as c:
            c.execute(text("SELECT sum(balance) FROM accounts")).scalar()
            barrier.wait(timeout=30)
            c.execute(text("UPDATE accounts SET balance = balance - 10 WHERE id = :i"), {"i": src})
            barrier.wait(timeout=30)
    except Exception as e:
        errors.append(e)
        barrier.abort()
other = threading.Thread(target=transfer, args=(2,))
other.start()
transfer(1)
other.join()
if errors:
    raise errors[0]
"""
VALUE_TOO_LONG = """
import logging, sys
from sqlalchemy import create_engine, text
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
engine = create_engine(sys.argv[1].replace("postgresql://", "postgresql+psycopg://"))
with engine.begin() as c:
    c.execute(text("CREATE TABLE IF NOT EXISTS labels (id int primary key, label varchar(16))"))
with engine.begin() as c:
    for i, label in {1: "cat", 2: "dog", 3: "golden_retriever_puppy"}.items():
        c.execute(text("INSERT INTO labels VALUES (:i, :l)"), {"i": i, "l": label})
        logging.info("inserted label %d", i)
"""


@pytest.mark.parametrize(
    ("script", "expected", "words"),
    [
        # psycopg's own class, service_unavailable 0.90 before (the words "connection failed")
        (MISSING_ROLE, "credentials_error", 'role "trainer" does not exist'),
        # under SQLAlchemy's OperationalError, service_unavailable 0.90 before
        (MISSING_DATABASE, "missing_file", 'database "features_prod" does not exist'),
        # SQLSTATE 40001 under SQLAlchemy's OperationalError: data_error 0.14 before
        (SERIALIZATION_FAILURE, "service_unavailable", "could not serialize access"),
        # SQLSTATE 22001 (psycopg's StringDataRightTruncation) under SQLAlchemy's DataError: 0.21 before
        (VALUE_TOO_LONG, "data_error", "value too long for type"),
    ],
    ids=["missing-role", "missing-database", "serialization-failure", "value-too-long"],
)
def test_a_database_server_s_condition_decides_under_the_client_s_words(
    home: Path, postgres_server: Any, script: str, expected: str, words: str
) -> None:
    name = f"i29_{next(_PG_NAMES)}"
    uri = postgres_server.create_database(name)
    try:
        _, report = _run(home, script, argv=(uri,))
    finally:
        postgres_server.drop_database(name)
    top = _lead(report, expected)
    assert any(words in e["detail"] for e in top["evidence"]), top["evidence"]


_PG_NAMES = itertools.count(1)
