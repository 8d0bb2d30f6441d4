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
