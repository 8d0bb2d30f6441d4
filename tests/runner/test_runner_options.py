"""`flightlog run` option parsing: a mistyped runner option is refused before anything starts,
the workload's own options pass through."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import flightlog
from tests.helpers import cli

PY = sys.executable


def stored_runs(home: Path) -> list[flightlog.models.RunInfo]:  # type: ignore[name-defined]
    return flightlog.Client().runs(limit=10)  # the test's store: FLIGHTLOG_HOME, or the server the fixture set


@pytest.mark.parametrize(
    "args",
    [
        ("--projct", "x", "--", "true"),
        ("--project", "x", "--projct", "y", "--", "true"),
        ("--projct=x", "--", "true"),
        ("--projct", "x", "true"),
    ],
)
def test_a_mistyped_runner_option_is_refused_with_a_suggestion_and_nothing_stored(
    home: Path, args: tuple[str, ...]
) -> None:
    proc = cli(home, "run", *args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "No such option '--projct'. Did you mean '--project'?" in proc.stderr
    assert "Usage: flightlog run" in proc.stderr and "started" not in proc.stderr
    assert not (home / "journal").exists()  # nothing began: no journal, not even an empty one
    assert stored_runs(home) == []


def test_the_runner_module_refuses_the_same_way(home: Path) -> None:
    """A pipeline starts its steps with `python -m flightlog.runner`: the same check applies there."""
    import subprocess

    from tests.helpers import child_env

    proc = subprocess.run(
        [PY, "-m", "flightlog.runner", "--tag", "a=b", "--retires", "2", "--", "true"],
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=home.parent,
    )
    assert proc.returncode == 2 and "No such option '--retires'. Did you mean '--retries'?" in proc.stderr
    assert stored_runs(home) == []


def test_the_workloads_own_options_still_pass_through(home: Path, tmp_path: Path) -> None:
    echo = tmp_path / "echo.py"
    echo.write_text("import sys; print(' '.join(sys.argv[1:]))\n")
    without_dashes = cli(home, "run", "--project", "t", PY, str(echo), "--projct", "--lr", "0.1")
    assert without_dashes.stdout == "--projct --lr 0.1\n"
    after_dashes = cli(home, "run", "--project", "t", "--", PY, str(echo), "--epochs", "3")
    assert after_dashes.stdout == "--epochs 3\n"
    # after `--`, even a word that looks like an option is the command, as the user asked
    dashed = cli(home, "run", "--project", "t", "--", "--not-a-program", check=False)
    assert dashed.returncode == 127 and "cannot start '--not-a-program'" in dashed.stderr
    assert [r.status for r in stored_runs(home)].count("succeeded") == 2
