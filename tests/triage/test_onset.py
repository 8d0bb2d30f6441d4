"""The onset from real processes: a new commit, and a new version of a package, between the
last good run and the first bad one; the bad runs go through `flightlog run` (the runner
classifies and parses the traceback the workload printed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flightlog.client import Client
from flightlog.triage.report import triage_report
from tests.helpers import child_env

TRAIN = """\
import os, sys
import flightlog

def read_config(path):
    with open(path) as f:
        return f.read()

if os.environ.get("FLIGHTLOG_RUN_ID") is None:  # the good runs: the SDK on its own
    with flightlog.init(project="nightly", name="train", resources=False, quiet=True):
        pass
else:
    read_config(f"/no/such/config-{os.getpid()}.yaml")
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _good(home: Path, repo: Path, **env: str) -> None:
    subprocess.run(
        [sys.executable, "train.py"], cwd=repo, env=child_env(home, **env), check=True, capture_output=True, timeout=60
    )


def _bad(home: Path, repo: Path, **env: str) -> None:
    flightlog_exe = str(Path(sys.executable).with_name("flightlog"))
    proc = subprocess.run(
        [flightlog_exe, "run", "--project", "nightly", "--name", "train", "--", sys.executable, "train.py"],
        cwd=repo,
        env=child_env(home, **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr


# real processes cost a second each: the grouping through a server is test_groups.py's
pytestmark = pytest.mark.embedded_only("real processes; the server transport is covered by test_groups.py")


def _onset(home: Path) -> dict:
    with Client() as client:
        report = triage_report(client, project="nightly")
    assert len(report["groups"]) == 1, [g["signature"] for g in report["groups"]]
    group = report["groups"][0]
    assert group["category"] == "missing_file"
    assert group["parts"]["frame"] == "train.py:read_config"
    return group["onset"]


def test_the_onset_is_the_commit_that_came_between(home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)
    _git(repo, "init", "-q")
    _git(repo, "add", "train.py")
    _git(repo, "commit", "-qm", "good")
    _good(home, repo)
    (repo / "README").write_text("a new commit\n")
    _git(repo, "add", "README")
    _git(repo, "commit", "-qm", "bad")
    _bad(home, repo)
    onset = _onset(home)
    assert onset["last_good"] is not None
    assert onset["changes"][0]["kind"] == "commit", onset
    assert onset["changes"][0]["before"] != onset["changes"][0]["after"]
    assert onset["summary"].startswith("commit ")


def _fake_package(root: Path, version: str) -> Path:
    site = root / f"site-{version}"
    dist = site / f"triagefake-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: triagefake\nVersion: {version}\n")
    return site


def test_the_onset_is_the_package_version_that_changed(home: Path, tmp_path: Path) -> None:
    repo = tmp_path / "work"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)
    src = str(Path(__file__).resolve().parents[2] / "src")
    old, new = _fake_package(tmp_path, "1.0"), _fake_package(tmp_path, "2.0")
    _good(home, repo, PYTHONPATH=f"{src}:{old}")
    _bad(home, repo, PYTHONPATH=f"{src}:{new}")
    onset = _onset(home)
    changes = [c for c in onset["changes"] if c["kind"] == "package"]
    assert changes and changes[0]["name"] == "triagefake", onset
    assert (changes[0]["before"], changes[0]["after"]) == ("1.0", "2.0")
    assert onset["changes"][0]["kind"] == "package"


# ── issue #29, item 7: onsets that hold ──────────────────────────────────────
FLAGGED = """\
import sys, time
import flightlog

lr = float(sys.argv[sys.argv.index("--lr") + 1])
if lr > 1:
    raise ValueError(f"learning rate {lr} is out of range for this optimizer")
print("trained", flush=True)
"""


def _runner(home: Path, cwd: Path, *command: str, name: str = "train") -> subprocess.CompletedProcess[str]:
    flightlog_exe = str(Path(sys.executable).with_name("flightlog"))
    return subprocess.run(
        [flightlog_exe, "run", "--project", "nightly", "--name", name, *command],
        cwd=cwd,
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _only_group(home: Path) -> dict:
    with Client() as client:
        report = triage_report(client, project="nightly")
    assert len(report["groups"]) == 1, [g["signature"] for g in report["groups"]]
    return report["groups"][0]


def test_a_changed_command_line_is_an_onset_like_a_commit(home: Path, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(FLAGGED)
    assert _runner(home, tmp_path, "--", sys.executable, "train.py", "--lr", "0.1").returncode == 0
    assert _runner(home, tmp_path, "--", sys.executable, "train.py", "--lr", "10").returncode == 1
    onset = _only_group(home)["onset"]
    assert onset["last_good"] is not None, onset
    head = onset["changes"][0]
    assert head["kind"] == "command", onset
    assert head["before"].endswith("train.py --lr 0.1") and head["after"].endswith("train.py --lr 10"), head
    assert onset["summary"].startswith("command: "), onset


INPUTS = """\
import os, sys, time
import flightlog

run = flightlog.init(project="nightly", name="train", quiet=True)
if sys.argv[1] == "crash-at-start":
    raise ImportError("cannot import name 'Trainer' from 'trainlib'")
time.sleep(0.6)  # reading the configuration, building the model: then the data
if sys.argv[1] == "good":
    run.log_input(os.path.join(os.path.dirname(__file__), "data"))
    run.finish()
else:  # it got past where the data is logged (well past: the good run hashed its files), and never logged it
    time.sleep(0.6)
    raise RuntimeError("no shards to read")
"""


def _sdk(home: Path, cwd: Path, mode: str) -> None:
    subprocess.run([sys.executable, "train.py", mode], cwd=cwd, env=child_env(home), capture_output=True, timeout=60)


def test_an_input_is_removed_only_for_a_run_that_got_far_enough_to_log_it(home: Path, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "part-0.csv").write_text("x\n1\n")
    (tmp_path / "train.py").write_text(INPUTS)
    _sdk(home, tmp_path, "good")
    _sdk(home, tmp_path, "crash-at-start")
    onset = _only_group(home)["onset"]
    assert onset["last_good"] is not None, onset
    assert not any(c["kind"] == "data" for c in onset["changes"]), onset  # it died before reading any data


def test_an_input_a_run_got_past_without_logging_is_removed(home: Path, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "part-0.csv").write_text("x\n1\n")
    (tmp_path / "train.py").write_text(INPUTS)
    _sdk(home, tmp_path, "good")
    _sdk(home, tmp_path, "late-failure")
    onset = _only_group(home)["onset"]
    data = [c for c in onset["changes"] if c["kind"] == "data"]
    assert data and "removed" in data[0]["text"], onset


GREEDY = """\
chunks = []
while True:
    chunks.append(bytearray(16 * 1024 * 1024))
    chunks[-1][::4096] = b"x" * len(chunks[-1][::4096])
"""


def test_an_oom_group_shows_its_memory_figures_the_same_in_every_report(home: Path, tmp_path: Path) -> None:
    import json

    from flightlog.timefmt import format_size
    from tests.helpers import cli

    (tmp_path / "greedy.py").write_text(GREEDY)
    for _ in range(2):
        proc = _runner(
            home, tmp_path, "--memory-limit", "128M", "--sample-interval", "0.1s", "--", sys.executable, "greedy.py"
        )
        assert proc.returncode == 137, proc.stderr
    group = _only_group(home)
    assert group["category"] == "oom_killed"
    memory = group["memory"]
    assert memory["limit_bytes"] == 128 * 1024 * 1024, memory
    assert 64 * 1024 * 1024 < memory["peak_bytes"] <= 160 * 1024 * 1024, memory
    figure = (
        f"memory peaked at {format_size(memory['peak_bytes'])} against a limit of {format_size(memory['limit_bytes'])}"
    )
    assert memory["text"].startswith(figure), memory
    doc = json.loads(cli(home, "triage", "--project", "nightly", "--format", "json").stdout)
    assert doc["groups"][0]["memory"] == memory
    text = " ".join(cli(home, "triage", "--project", "nightly").stdout.split())
    assert figure in text, text
    newest = group["runs"][0]
    with Client() as client:
        summary = client.diagnose(newest)["findings"][0]["summary"]
    own = memory["runs"][0]  # the newest run's own figure: the one its diagnosis quotes
    assert own["run"] == newest
    assert (
        f"memory peaked at {format_size(own['peak_bytes'])} against a limit of {format_size(own['limit_bytes'])}"
        in summary
    ), summary
