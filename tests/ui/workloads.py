"""Real runs for the browser tests, made the way users make them: `flightlog run` around
scripts that use the SDK, plus one SDK script that makes a batch of small runs for the table.

    python -m tests.ui.workloads DIR     # fill DIR/home and print the run ids (for trying the UI)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import needs_a_process
from tests.inprocess import run_cli

ROOT = Path(__file__).resolve().parents[2]
FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))

# A workload that leaves every kind of evidence: levels, components, streams, a caught
# traceback, markup that must stay text, a NaN, artifacts of each preview kind, and the model
# of the training run as its input (lineage). Its first attempt fails on a refused connection,
# so the runner retries it (two attempts).
REPORT = r"""
import json, logging, os, struct, sys, time, zlib
import flightlog

attempt = int(os.environ.get("FLIGHTLOG_ATTEMPT", "1"))
logging.basicConfig(level=logging.DEBUG, handlers=[flightlog.logging_handler()])
run = flightlog.init(project="vision", name="eval-report", params={"model": "moons-mlp", "split": "val"})
data, report = logging.getLogger("data.loader"), logging.getLogger("report")
print(f"attempt {attempt} starting", flush=True)
if attempt == 1:
    print("connecting to the feature store at 10.0.0.7:5432", flush=True)
    raise ConnectionRefusedError(111, "Connection refused: feature store 10.0.0.7:5432")
run.log_input(sys.argv[1], name="model.json")
data.debug("opened %d shards", 6)
data.info("read 1200 rows")
report.warning("calibration error is high", extra={"ece": 0.081})
print("<b>not bold</b><img src=x onerror=alert(1)> stays text", flush=True)
print("a line on stderr", file=sys.stderr, flush=True)
try:
    {}["missing_column"]
except KeyError:
    report.exception("could not read a column")
for i in range(40):
    run.log({"val/loss": 1.0 / (i + 1), "latency_ms": 10 + (i % 7)}, step=i)
run.log({"val/loss": float("nan")}, step=40)
out = os.path.join(os.environ["OUT_DIR"], "report")
os.makedirs(out, exist_ok=True)
def write(name, text):
    path = os.path.join(out, name)
    with open(path, "w") as f:
        f.write(text)
    return path
run.log_artifact(write("summary.txt", "accuracy 0.93\nline two <script>alert(1)</script>\n"), kind="report")
run.log_artifact(write("metrics.json", json.dumps({"accuracy": 0.93, "per_class": {"a": 0.9, "b": 0.96}})), kind="metrics")
run.log_artifact(write("predictions.csv", "id,label,score\n1,cat,0.91\n2,dog,0.12\n3,\"bird, small\",0.55\n"), kind="table")
def png(w, h, rgb):
    raw = b"".join(b"\x00" + bytes(rgb) * w for _ in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
with open(os.path.join(out, "confusion.png"), "wb") as f:
    f.write(png(24, 16, (37, 99, 235)))
run.log_artifact(os.path.join(out, "confusion.png"), kind="plot")
run.note("calibration looks off on the val split", author="ci")
report.info("report written")
run.finish()
"""

# A batch of small runs for the runs table: params, tags, metrics and statuses that differ, and
# one whose name, param and tag are markup (they must show as text).
MANY = r"""
import flightlog
for i in range(36):
    lr = [0.1, 0.01, 0.001][i % 3]
    opt = ["adam", "sgd"][i % 2]
    run = flightlog.init(project="sweep", name=f"sweep-{i:02d}", resources=False,
                         params={"lr": lr, "optimizer": opt, "batch size": 32 * (1 + i % 4), "seed": i},
                         tags={"team": ["vision", "nlp"][i % 2]})
    for step in range(5):
        run.log({"acc": 0.5 + 0.01 * i + 0.02 * step, "loss": 2.0 / (1 + i + step)}, step=step)
    run.finish("failed" if i % 7 == 3 else "succeeded")
run = flightlog.init(project="sweep", name="<img src=x onerror=alert(1)>", resources=False,
                     params={"lr": 0.5, "optimizer": "<b>bold?</b>"}, tags={"team": "<script>alert(2)</script>"})
run.log({"acc": 0.1}, step=0)
run.finish()
"""

# A workload that keeps writing (a line and a point every 50 ms) until told to stop (a file
# appears): the live logs and live charts test.
LIVE = r"""
import os, sys, time
import flightlog
run = flightlog.init()  # attaches to the run `flightlog run` made
stop = sys.argv[1]
i = 0
while not os.path.exists(stop) and i < 3000:
    print(f"tick {i}", flush=True)
    run.log({"ticks": i}, step=i)
    i += 1
    time.sleep(0.05)
print("live run done", flush=True)
"""


# Many lines: the log list must page and stay virtualized.
CHATTY = r"""
import sys
for i in range(5000):
    print(f"line {i:05d} " + "x" * (i % 50), flush=False)
"""


# Three runs for the compare page's edge cases: long names and values, a metric logged once
# (one point per run), and one that ranges from 5e3 to 1e195 (past what a linear axis can label).
EDGES = r"""
import flightlog
for i in range(3):
    run = flightlog.init(project="edges", name=f"a-rather-long-run-name-for-the-layout-{i}", resources=False,
                         params={"lr": 0.1 * (i + 1), "a_long_parameter_name.with.nesting": "x" * 40})
    run.log({"final_acc": 0.8 + 0.05 * i}, step=0)
    for s in range(20):
        run.log({"huge": 5e3 * 10 ** (10 * s) if s < 19 else 1e195, "loss": 1.0 / (s + 1 + i)}, step=s)
    run.finish()
"""

# A training script that checkpoints and can resume: the first attempt fails after its
# checkpoint, `flightlog run --resume` runs the second from it.
RESUMABLE = r"""
import os, sys, time
import flightlog
run = flightlog.init()
resume = os.environ.get("FLIGHTLOG_RESUME_FROM")
start = int(open(resume).read()) if resume else 0
with run.stage("data_loading"):
    time.sleep(0.2)
for i in range(start, start + 10):
    run.log({"loss": 1.0 / (i + 1)}, step=i)
    time.sleep(0.03)
    if i == 5 and not resume:
        path = os.path.join(sys.argv[1], "ckpt.txt")
        with open(path, "w") as f:
            f.write(str(i + 1))
        run.checkpoint(path, step=i + 1)
if not resume:
    sys.exit("lost the node")
"""

# Takes memory until `flightlog run --memory-limit` kills it.
GREEDY = r"""
chunks = []
while True:
    chunks.append(bytearray(16 * 1024 * 1024))
    chunks[-1][::4096] = b"x" * len(chunks[-1][::4096])
"""


def make_edges(home: Path, work: Path) -> list[str]:
    """The three runs of EDGES (project "edges"), oldest first."""
    run_script(home, script(work, "edges.py", EDGES))
    runs = json.loads(flightlog(home, "runs", "ls", "--project", "edges", "--format", "json").stdout)
    return [str(r["id"]) for r in reversed(runs)]


def make_resumed(home: Path, work: Path) -> str:
    """A run whose first attempt failed and whose second ran with `flightlog run --resume`."""
    cmd = ["--", sys.executable, script(work, "resumable.py", RESUMABLE), str(work)]
    flightlog(home, "run", "--project", "resume", "--name", "resumable", *cmd, check=False)
    run_id = last_run(home, "resume")
    flightlog(home, "run", "--resume", run_id, *cmd)
    return run_id


def make_oom(home: Path, work: Path) -> str:
    """A run killed at its memory limit (`flightlog run --memory-limit 128M`)."""
    flightlog(
        home,
        "run",
        "--project",
        "oom",
        "--name",
        "greedy",
        "--memory-limit",
        "128M",
        "--sample-interval",
        "0.1s",
        "--",
        sys.executable,
        script(work, "greedy.py", GREEDY),
        check=False,
    )
    return last_run(home, "oom")


def make_distributed(home: Path, work: Path) -> str:
    """A 2-rank torchrun job on gloo (tests/distributed/job.py, every rank with flightlog.init()):
    rank 1 gets stuck in its data read before all_reduce #4; the hang watch (its defaults, under
    a 6 s group timeout) records both ranks' stacks and Flight Recorders; rank 0 times out
    waiting and torchrun stops rank 1 (project "dist")."""
    signals = work / "dist-signals"
    signals.mkdir(parents=True, exist_ok=True)
    job = ROOT / "tests" / "distributed" / "job.py"
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    env = env_for(home, SCENARIO="stuck", SIGNALS=str(signals), USE_SDK="1", GROUP_TIMEOUT="6", STEPS="8")
    env["FLIGHTLOG_CONSOLE"] = "off"
    flightlog(home, "run", "--project", "dist", "--name", "ddp-hang", "--", torchrun, "--nproc_per_node", "2",
              "--standalone", str(job), env=env, check=False, timeout=300)  # fmt: skip
    return last_run(home, "dist")


def make_distributed_alike(home: Path, work: Path) -> str:
    """A 2-rank torchrun job on gloo whose ranks both fail to open their shard of a missing data
    directory (tests/distributed/job.py, scenario ``raises_alike``): no culprit (project "dist-alike")."""
    signals = work / "dist-alike-signals"
    signals.mkdir(parents=True, exist_ok=True)
    job = ROOT / "tests" / "distributed" / "job.py"
    torchrun = str(Path(sys.executable).with_name("torchrun"))
    env = env_for(home, SCENARIO="raises_alike", SIGNALS=str(signals), USE_SDK="1", GROUP_TIMEOUT="60")
    env["FLIGHTLOG_CONSOLE"] = "off"
    flightlog(home, "run", "--project", "dist-alike", "--name", "ddp-alike", "--", torchrun, "--nproc_per_node", "2",
              "--standalone", str(job), env=env, check=False, timeout=300)  # fmt: skip
    return last_run(home, "dist-alike")


@dataclass
class Seeded:
    home: Path
    work: Path
    good: str
    other: str
    failed: str
    report: str
    chatty: str


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    env.update({"FLIGHTLOG_HOME": str(home), "PYTHONUNBUFFERED": "1", **extra})
    return env


def flightlog(
    home: Path,
    *args: str,
    check: bool = True,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`flightlog ARGS` on ``home``: a real process for what only a process shows (`run`, `pipeline
    resume`: tests/helpers.py's REAL_PROCESS_COMMANDS), the same command in this process for a
    query (tests/inprocess.py), which costs no new interpreter."""
    if needs_a_process(args):
        proc = subprocess.run(
            [FLIGHTLOG, *args],
            env=env or env_for(home),
            cwd=cwd or home.parent,
            text=True,
            capture_output=True,
            timeout=timeout,
        )
    else:
        proc = run_cli(args, env=env or env_for(home), cwd=cwd or home.parent)
    if check and proc.returncode != 0:
        raise RuntimeError(f"flightlog {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def script(work: Path, name: str, source: str) -> str:
    """Write a workload's source to ``work/name``; its path, for a command line."""
    path = work / name
    path.write_text(textwrap.dedent(source))
    return str(path)


def run_script(home: Path, path: str) -> None:
    """Run an SDK script (no `flightlog run` around it) in its folder, on the store in ``home``."""
    subprocess.run(
        [sys.executable, path], env=env_for(home), cwd=Path(path).parent, check=True, capture_output=True, timeout=120
    )


def last_run(home: Path, project: str) -> str:
    out = flightlog(home, "runs", "ls", "--project", project, "--limit", "1", "--format", "json").stdout
    return str(json.loads(out)[0]["id"])


def seed(work: Path) -> Seeded:
    """Fill ``work/home`` with the runs the tests look at (about 10 s on 2 cores)."""
    home = work / "home"
    work.mkdir(parents=True, exist_ok=True)
    train = [
        sys.executable,
        str(ROOT / "examples" / "train.py"),
        "--data",
        str(work / "data"),
        "--epochs",
        "3",
        "--slow-loader",
        "0.004",
    ]
    queued = str(time.time() - 2.5)
    ids = []
    for lr in ("0.5", "0.1"):  # the first from the source tree: its context has a git commit
        flightlog(
            home,
            "run",
            "--project",
            "vision",
            "--name",
            "moons-mlp",
            "--tag",
            "owner=ci",
            "--sample-interval",
            "0.1s",
            "--queued-at",
            queued,
            "--memory-limit",
            "1G",
            "--",
            *train,
            "--lr",
            lr,
            "--out",
            str(work / f"out-{lr}"),
            cwd=ROOT if lr == "0.5" else None,
        )
        ids.append(last_run(home, "vision"))
    flightlog(
        home,
        "run",
        "--project",
        "vision",
        "--name",
        "moons-mlp",
        "--tag",
        "owner=ci",
        "--",
        *train[:2],
        "--data",
        str(work / "data-v2"),
        "--no-generate",
        "--out",
        str(work / "out-bad"),
        check=False,
    )
    failed = last_run(home, "vision")
    flightlog(
        home,
        "run",
        "--project",
        "vision",
        "--name",
        "eval-report",
        "--retries",
        "1",
        "--retry-delay",
        "0.1s",
        "--",
        sys.executable,
        script(work, "report.py", REPORT),
        str(work / "out-0.5" / "model.json"),
        env=env_for(home, OUT_DIR=str(work)),
    )
    report = last_run(home, "vision")
    flightlog(
        home, "run", "--project", "vision", "--name", "chatty", "--", sys.executable, script(work, "chatty.py", CHATTY)
    )
    chatty_id = last_run(home, "vision")
    run_script(home, script(work, "many.py", MANY))
    return Seeded(home=home, work=work, good=ids[0], other=ids[1], failed=failed, report=report, chatty=chatty_id)


def start_live(home: Path, work: Path, url: str | None = None) -> tuple[subprocess.Popen[str], Path]:
    """`flightlog run` around a script that prints a line every 50 ms until ``stop`` exists;
    with ``url``, it ships to that server (remote mode) instead of writing the store itself."""
    path = script(work, "live.py", LIVE)
    stop = work / f"stop-{time.time_ns()}"
    env = env_for(home, FLIGHTLOG_URL=url) if url else env_for(home)
    proc = subprocess.Popen(
        [FLIGHTLOG, "run", "--project", "live", "--name", "ticker", "--", sys.executable, path, str(stop)],
        env=env,
        cwd=work,
        text=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, stop


if __name__ == "__main__":
    seeded = seed(Path(sys.argv[1]).resolve())
    print(json.dumps({k: str(v) for k, v in seeded.__dict__.items()}, indent=2))
