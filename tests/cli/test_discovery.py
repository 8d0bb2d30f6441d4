"""Every command of one project meets the same store: without ``FLIGHTLOG_HOME``, the nearest
``.flightlog`` above the working directory, else one at the top of the git work tree, else
``./.flightlog`` — the way git finds its repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flightlog.config import Settings, discover_home
from flightlog.server.config import ServerConfig

pytestmark = pytest.mark.embedded_only("store discovery is about the embedded store's directory")

FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))


def _env(tmp_path: Path) -> dict[str, str]:
    """No FLIGHTLOG_ setting at all, and $HOME at tmp_path: the walk stops there, whatever
    lies above the test's directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    env.update(HOME=str(tmp_path), PYTHONUNBUFFERED="1", FLIGHTLOG_QUIET="1")
    return env


def _script(cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", "import flightlog\nrun = flightlog.init(project='p')\nprint(run.id)\n"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return proc.stdout.strip()


def _runs_ls(cwd: Path, env: dict[str, str]) -> list[str]:
    proc = subprocess.run(
        [FLIGHTLOG, "runs", "ls", "--format", "json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [r["id"] for r in json.loads(proc.stdout)]


def test_a_script_in_a_sub_directory_writes_to_the_store_above_and_the_cli_elsewhere_finds_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".flightlog").mkdir(parents=True)
    (project / "pipelines" / "prep").mkdir(parents=True)
    (project / "notebooks").mkdir()
    env = _env(tmp_path)
    run_id = _script(project / "pipelines" / "prep", env)
    assert (project / ".flightlog" / "flightlog.db").exists()
    assert not (project / "pipelines" / "prep" / ".flightlog").exists()
    assert _runs_ls(project / "notebooks", env) == [run_id]
    assert _runs_ls(project, env) == [run_id]


def test_the_top_of_the_git_work_tree_is_the_default(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "train").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = _env(tmp_path)
    run_id = _script(repo / "src" / "train", env)
    assert (repo / ".flightlog" / "flightlog.db").exists()
    assert _runs_ls(repo / "src", env) == [run_id]


def test_the_runner_and_its_workload_meet_the_same_store_from_a_sub_directory(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "jobs").mkdir(parents=True)
    (repo / ".git").mkdir()
    env = _env(tmp_path)
    proc = subprocess.run(
        [
            FLIGHTLOG,
            "run",
            "--project",
            "p",
            "--",
            sys.executable,
            "-c",
            "import flightlog; flightlog.init().log({'x': 1.0})",
        ],
        cwd=repo / "jobs",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    [run_id] = _runs_ls(repo, env)
    proc = subprocess.run(
        [FLIGHTLOG, "metrics", run_id, "--format", "json"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "x" in proc.stdout


def test_without_git_or_a_store_above_it_is_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "alone").mkdir()
    assert discover_home(tmp_path / "alone", environ={"HOME": str(tmp_path)}) == tmp_path / "alone" / ".flightlog"


def test_the_nearest_store_wins_and_the_walk_stops_at_home(tmp_path: Path) -> None:
    (tmp_path / ".flightlog").mkdir()  # above $HOME: never looked at
    home = tmp_path / "user"
    deep = home / "a" / "b"
    deep.mkdir(parents=True)
    assert discover_home(deep, environ={"HOME": str(home)}) == deep / ".flightlog"
    (home / ".flightlog").mkdir()
    assert discover_home(deep, environ={"HOME": str(home)}) == home / ".flightlog"
    (home / "a" / ".flightlog").mkdir()
    assert discover_home(deep, environ={"HOME": str(home)}) == home / "a" / ".flightlog"
    # a store above the git work tree still wins over the work tree's default (nearest first)
    (deep / ".git").mkdir()
    assert discover_home(deep, environ={"HOME": str(home)}) == home / "a" / ".flightlog"


def test_flightlog_home_wins_and_every_reader_uses_the_same_discovery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / ".flightlog").mkdir(parents=True)
    (project / "sub").mkdir()
    for name in [n for n in os.environ if n.startswith("FLIGHTLOG_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(project / "sub")
    assert Settings.from_env().home == project / ".flightlog"
    assert ServerConfig.for_home().home == project / ".flightlog"
    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "elsewhere"))
    assert Settings.from_env().home == tmp_path / "elsewhere"
    assert ServerConfig.for_home().home == tmp_path / "elsewhere"
