"""Whole runs read the way they printed (issue 29): a failure under a launcher's report, in
structured logs, re-raised by a parent — real processes under ``flightlog run``, diagnosed in
full. Each test is a form that the message-level reading got right and the whole run did not."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from flightlog.diagnose.structure import FailureRead
from tests.helpers import cli

pytestmark = pytest.mark.embedded_only("the report is the same over either transport (tests/diagnose/test_api.py)")


def _run(home: Path, script: str, *runner: str) -> tuple[dict[str, Any], FailureRead]:
    """Run ``script`` under ``flightlog run``: its full diagnosis and the reading of its failure
    (the report carries the runner's own quick category as ``runner_category``, and its line
    saying how the run ended as ``runner_line``)."""
    from flightlog.client import Client
    from flightlog.diagnose.evidence import RunEvidence
    from flightlog.diagnose.failures import read_run

    path = home.parent / "workload.py"
    path.write_text(textwrap.dedent(script))
    proc = cli(home, "run", "--project", "whole", *runner, "--", sys.executable, str(path), check=False, timeout=180)
    m = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)
    assert m, proc.stderr
    with Client(home) as c:
        info = c.run(m[1])
        report = c.diagnose(m[1], auto_baseline=False)
        report["runner_category"] = (info.failure or {}).get("category")
        report["runner_line"] = next(
            (ln for ln in proc.stderr.splitlines() if ln.startswith("flightlog: run ") and " in " in ln), ""
        )
        return report, read_run(RunEvidence(c, info))


def _top(report: dict[str, Any]) -> tuple[str, float]:
    findings = report["findings"]
    return (findings[0]["category"], findings[0]["confidence"]) if findings else ("none", 0.0)


# torchrun's report of a failed rank, as torch 2.4+ prints it (tests/capture/recorded/)
TORCHRUN_REPORT = [
    "W0105 12:00:02.500000 4242 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 4243 closing signal SIGTERM",
    "E0105 12:00:03.118000 4242 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1 (pid: 4244) of binary: /usr/bin/python3",
    "Traceback (most recent call last):",
    '  File "/usr/local/bin/torchrun", line 8, in <module>',
    "    sys.exit(main())",
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/launcher/api.py", line 263, in launch_agent',
    "    raise ChildFailedError(",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "============================================================",
    "train.py FAILED",
    "------------------------------------------------------------",
    "Failures:",
    "  <NO_OTHER_FAILURES>",
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

NCCL_WATCHDOG_UNDER_TORCHRUN = f"""
import sys
REPORT = {TORCHRUN_REPORT!r}
print("step 7400: loss=1.8211", flush=True)
for line in [
    "[E1206 18:44:16.997991020 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, Timeout(ms)=600000) "
    "ran for 600003 milliseconds before timing out.",
    "[E1206 18:44:16.998102331 ProcessGroupNCCL.cpp:1537] [PG 1 Rank 1] Timeout at NCCL work: 7753, last enqueued "
    "NCCL work: 7753, last completed NCCL work: 7752.",
]:
    print("[rank1]:" + line, file=sys.stderr, flush=True)
for line in REPORT:
    print(line, file=sys.stderr, flush=True)
sys.exit(1)
"""


def test_a_rank_s_watchdog_timeout_under_torchrun_s_report(home: Path) -> None:
    """The rank printed no exception, only NCCL's watchdog lines; torchrun's ``ChildFailedError``
    and summary followed. Before, the launcher's empty wrapper was the failure's only exception
    and its summary the last lines: ``service_unavailable`` 0.39, a hint."""
    report, read = _run(home, NCCL_WATCHDOG_UNDER_TORCHRUN)
    category, confidence = _top(report)
    assert category == "service_unavailable" and confidence >= 0.5, report["findings"][:3]
    assert read.links == [] and read.last_line is not None and "last completed NCCL work" in read.last_line
    # the runner's quick reading (its "looks like" line) reads the run the same way
    assert "looks like service_unavailable" in report["runner_line"], report["runner_line"]


RANK_SUBPROCESS_UNDER_TORCHRUN = f"""
import sys
REPORT = {TORCHRUN_REPORT!r}
RANK = [
    "Traceback (most recent call last):",
    '  File "/opt/conda/lib/python3.11/site-packages/torch/utils/cpp_extension.py", line 2105, in _run_ninja_build',
    "    subprocess.run(",
    '  File "/opt/conda/lib/python3.11/subprocess.py", line 571, in run',
    "    raise CalledProcessError(retcode, process.args,",
    "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
]
print("building the fused_adam extension", flush=True)
for line in RANK:
    print("[rank1]: " + line, file=sys.stderr, flush=True)
for line in REPORT:
    print(line, file=sys.stderr, flush=True)
sys.exit(1)
"""


def test_a_rank_s_own_launcher_wrapper_under_torchrun_s_report(home: Path) -> None:
    """A rank's uncaught ``CalledProcessError`` (itself a wrapper of a child process), then
    torchrun's report. The runner records the rank's traceback as the failure; read again with
    it after torchrun's summary, it took torchrun's ``ChildFailedError`` for its child: the chain
    read [ChildFailedError (worker), CalledProcessError] and ``code_error`` led at 0.88."""
    report, read = _run(home, RANK_SUBPROCESS_UNDER_TORCHRUN)
    assert [(link.short_type, link.via) for link in read.links] == [
        ("CalledProcessError", "worker"),
        ("ChildFailedError", "raised"),
    ]
    assert read.handled == []
    category, confidence = _top(report)
    assert category != "code_error" or confidence < 0.5, report["findings"][:3]


# ── a logger's prefix and a logger's message ────────────────────────────────
@pytest.mark.parametrize(
    "line",
    [
        "2025-01-05 12:00:03,118 - train - ERROR - {}",  # logging's "%(asctime)s - %(name)s - %(levelname)s"
        "ERROR:train:{}",  # logging.basicConfig's default
        "[2025-01-05 12:00:03,118] train.loop: [ERROR] {}",
        "2025-01-05 12:00:03.118 | ERROR    | __main__:main:42 - {}",  # loguru
        "E0105 12:00:03.118000 4242 trainer.cc:88] {}",  # glog
        "2025-01-05T12:00:03Z ERROR {}",
    ],
)
def test_a_logging_prefix_is_no_part_of_the_last_line_s_shape(line: str) -> None:
    """A run that printed no exception is read from its last line's shape; before, the prefix's
    timestamp and name made the message look like another (numbers, a length it does not have)."""
    from flightlog.diagnose.facts import structure_facts
    from flightlog.diagnose.logprefix import logged_message
    from flightlog.diagnose.structure import read_failure

    message = (
        "Invalid parameter creiterion for estimator RandomForestRegressor(). Check the list of available parameters."
    )
    assert logged_message(line.format(message)) == message
    prefixed = read_failure(["loading", line.format(message)], exit_code=1)
    assert structure_facts(prefixed) == structure_facts(read_failure(["loading", message], exit_code=1))


def test_a_line_without_a_logging_prefix_is_left_as_it_is() -> None:
    from flightlog.diagnose.logprefix import logged_message

    for line in ["12:00:03 ERROR disk full", "ERROR: could not open /data/x", "2025-01-05 12:00:03,118 INFO ", "x"]:
        assert logged_message(line) == line


LOGGED_REFUSAL = """
import logging, sys
logging.basicConfig(level=logging.INFO, format="%(asctime)s - %(name)s - %(levelname)s - %(message)s")
log = logging.getLogger("train")
log.info("loading the dataset from ./data (12,000 rows)")
log.error(
    "Invalid parameter creiterion for estimator RandomForestRegressor(). "
    "Check the list of available parameters with `estimator.get_params().keys()`."
)
sys.exit(1)
"""


def test_a_refused_parameter_logged_with_a_prefix(home: Path) -> None:
    """The message alone reads ``bad_parameter`` 0.57; logged with its prefix it read 0.47."""
    report, _ = _run(home, LOGGED_REFUSAL)
    category, confidence = _top(report)
    assert category == "bad_parameter" and confidence >= 0.5, report["findings"][:3]


# ── structured logs ──────────────────────────────────────────────────────────
STRUCTLOG_DICT_TRACEBACKS = """
import sys, structlog
structlog.configure(
    processors=[
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso"),
        structlog.processors.dict_tracebacks,
        structlog.processors.JSONRenderer(),
    ]
)
log = structlog.get_logger()
log.info("epoch started", epoch=1)
def save(path):
    try:
        raise OSError(28, "No space left on device")
    except OSError as exc:
        raise RuntimeError(f"could not write checkpoint {path}") from exc
try:
    save("ckpt-300.pt")
except RuntimeError:
    log.exception("training stopped")
    sys.exit(1)
"""


def test_structlog_s_dict_tracebacks_are_read_as_the_chain(home: Path) -> None:
    """structlog's ``dict_tracebacks`` logs the chain as data (``exc_type``, ``exc_value``,
    ``frames``, ``is_cause``): before, nothing of it was read (``code_error`` 0.25 from the
    exit alone)."""
    pytest.importorskip("structlog")
    report, read = _run(home, STRUCTLOG_DICT_TRACEBACKS)
    assert [(link.short_type, link.via) for link in read.links] == [("OSError", "cause"), ("RuntimeError", "raised")]
    assert read.links[0].frames[-1].function == "save"
    category, confidence = _top(report)
    assert category == "disk_full" and confidence >= 0.5, report["findings"][:3]


JSON_LOGGER_MESSAGE = """
import json, logging, sys
class JsonFormatter(logging.Formatter):
    # python-json-logger's shape: the record's message, its formatted exception in exc_info
    def format(self, record):
        out = {"asctime": self.formatTime(record), "levelname": record.levelname, "name": record.name}
        out["message"] = record.getMessage()
        if record.exc_info:
            out["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(out)
handler = logging.StreamHandler(sys.stderr)
handler.setFormatter(JsonFormatter())
log = logging.getLogger("train")
log.addHandler(handler)
log.setLevel(logging.INFO)
log.info("starting the run")
def load_features():
    raise RuntimeError("feature loading failed")
try:
    load_features()
except RuntimeError:
    log.exception("could not reach the feature store at features:8080: [Errno 111] Connection refused")
    sys.exit(1)
"""


def test_a_json_log_line_s_message_above_its_traceback_is_read(home: Path) -> None:
    """The message a logger wrote with ``log.exception`` names the cause; the traceback is a
    generic wrapper's. Before, the message (joined with the traceback into one text) was read
    neither as a line nor as part of the chain."""
    report, read = _run(home, JSON_LOGGER_MESSAGE)
    assert any("Connection refused" in line for line in read.lines), read.lines
    category, confidence = _top(report)
    assert category == "service_unavailable" and confidence >= 0.5, report["findings"][:3]


# ── a rank killed at the memory limit under torchrun ──────────────────────────
TORCHRUN = Path(sys.executable).with_name("torchrun")
RANK_OUT_OF_MEMORY = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
for step in range(3):
    t = torch.ones(1)
    dist.all_reduce(t)
    print(f"rank {rank} step {step} loss {1.0 / (step + 1):.3f}", flush=True)
if rank == 1:  # a batch far larger than the others': rank 1 grows until the limit kills it
    blocks = []
    while True:
        blocks.append(bytearray(b"x" * (8 << 20)))
t = torch.ones(1)
dist.all_reduce(t)
"""


@pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun")
@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads memory from /proc")
@pytest.mark.parametrize("interval", ["0.2s", "60s"], ids=["sampled", "no-samples"])
def test_a_rank_killed_at_the_memory_limit_under_torchrun(home: Path, interval: str) -> None:
    """``torchrun --nproc-per-node 2`` under ``--memory-limit``: rank 1 grows until the kernel
    kills it (SIGKILL), rank 0 fails on the closed connection, torchrun reports exitcode -9.
    The runner records the OOM kill; before, the culprit finding read rank 1's SIGKILL alone:
    ``killed_by_signal`` 0.72 led, and the runner said "looks like killed_by_signal on rank 1".
    Without memory samples to judge the ranks by (a 60 s interval; a loaded machine's sampler,
    as in CI at stop 49) the runner's own OOM kill still names the cause: before, its closing
    line said "failed (oom_killed, …, looks like killed_by_signal on rank 1)"."""
    pytest.importorskip("torch")
    path = home.parent / "ddp_oom.py"
    path.write_text(textwrap.dedent(RANK_OUT_OF_MEMORY))
    proc = cli(
        home,
        "run",
        "--project",
        "whole",
        "--memory-limit",
        "1200M",
        "--sample-interval",
        interval,
        "--",
        str(TORCHRUN),
        "--nproc-per-node",
        "2",
        "--standalone",
        str(path),
        check=False,
        timeout=300,
    )
    m = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)
    assert m, proc.stderr
    from flightlog.client import Client

    with Client(home) as c:
        report = c.diagnose(m[1], auto_baseline=False)
    findings = [(f["category"], f["confidence"], f.get("rank")) for f in report["findings"]]
    assert findings[0][0] == "oom_killed" and findings[0][1] >= 0.5, findings
    assert not any(c == "killed_by_signal" and p >= 0.5 for c, p, _ in findings), findings
    # the culprit (when the runner saw torchrun name it): rank 1, and the runner's verdict agrees
    assert findings[0][2] in (1, None) and "looks like oom_killed" in proc.stderr, proc.stderr[-2000:]


# ── a rank's last stdout line inside torchrun's summary ──────────────────────
def _batch(*events: tuple[str, str, int | None]) -> Any:
    from flightlog.logevents import LogBatch

    batch = LogBatch()
    for stream, message, rank in events:
        batch.append(time=1.0, stream=stream, level=40 if rank is not None else 20, message=message, rank=rank)
    return batch


def test_a_rank_s_last_stdout_line_is_not_read_into_torchrun_s_summary() -> None:
    """The batches ``flightlog run`` fed its launcher reader for a real ``torchrun`` job whose rank
    1 aborted (recorded order): the capture holds a stream's last line until the stream ends, so
    rank 1's last stdout line came between torchrun's ``[0]:`` entry and its closing rule, and was
    read as the rank's ``traceback`` field — the culprit finding then said "rank 1 failed first:
    rank 1 step 2 loss 0.333" (``code_error`` 0.9)."""
    from flightlog.runner.launcher import LauncherOutput

    out = LauncherOutput()
    out.feed(_batch(("stdout", "rank 0 step 2 loss 0.333", None)))
    out.feed(
        _batch(
            (
                "stderr",
                'Traceback (most recent call last):\n  File "/usr/bin/torchrun", line 8, in <module>\n'
                "    sys.exit(main())\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
                None,
            ),
            ("stderr", "=======================================================", None),
            ("stderr", "ddp_abort.py FAILED", None),
            ("stderr", "-------------------------------------------------------", None),
            ("stderr", "Failures:", None),
            (
                "stderr",
                "[1]:\n  time      : 2026-12-07_02:47:40\n  host      : localhost\n  rank      : 0 (local_rank: 0)\n"
                "  exitcode  : -15 (pid: 19431)  (SIGTERM)\n  error_file: <N/A>\n"
                "  traceback : Signal 15 (SIGTERM) received by PID 19431",
                None,
            ),
            ("stderr", "-------------------------------------------------------", None),
            ("stderr", "Root Cause (first observed failure):", None),
            (
                "stderr",
                "[0]:\n  time      : 2026-12-07_02:47:40\n  host      : localhost\n  rank      : 1 (local_rank: 1)\n"
                "  exitcode  : -6 (pid: 19433)  (SIGABRT)\n  error_file: <N/A>\n"
                "  traceback : Signal 6 (SIGABRT) received by PID 19433",
                None,
            ),
        )
    )
    out.feed(_batch(("stdout", "rank 1 step 2 loss 0.333", None)))
    out.feed(_batch(("stderr", "=======================================================", None)))
    facts = out.facts()
    assert facts is not None
    ranks = {r["rank"]: r for r in facts["ranks"]}
    assert ranks[1]["signal"] == 6 and "error" not in ranks[1], ranks[1]


# ── the finding's words ──────────────────────────────────────────────────────
LOAD_STATE_DICT_SIZE_MISMATCH = """
import torch
model = torch.nn.Linear(10, 4)
print("loading checkpoint ckpt-12.pt", flush=True)
model.load_state_dict(torch.nn.Linear(10, 3).state_dict())
"""


def test_the_finding_quotes_the_detail_an_exception_s_first_line_only_introduces(home: Path) -> None:
    """torch's ``Error(s) in loading state_dict for Linear:`` says what follows, not what went
    wrong: the finding quoted it alone and ended in ``:.``. The first line of detail (which
    parameter, which shapes) is the part a person acts on."""
    report, read = _run(home, LOAD_STATE_DICT_SIZE_MISMATCH)
    top = report["findings"][0]
    assert top["category"] == "bad_parameter", report["findings"][:3]
    assert "size mismatch for weight" in top["summary"], top["summary"]
    assert "torch.Size([4, 10])" in top["summary"], top["summary"]
    # the signature of the failure stays its first line (triage groups by it)
    assert read.innermost is not None and read.innermost.headline().endswith("for Linear:")
