"""The Python snippets of the quickstart and of the README's "In one minute" run as written,
and land where the text says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import flightlog
from tests.helpers import child_env

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.embedded_only("the snippets are about the first minute on the embedded store")


def _first_python_block(page: Path, after: str) -> str:
    text = page.read_text()
    section = text[text.index(after) :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, f"no Python block after {after!r} in {page.name}"
    return match.group(1)


def _run(code: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=child_env(home, FLIGHTLOG_CONSOLE="auto"),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_the_quickstart_snippet_runs_as_written(home: Path, tmp_path: Path) -> None:
    proc = _run(
        _first_python_block(ROOT / "docs" / "quickstart.md", "## Record a run from Python"), home, tmp_path / "q"
    )
    assert re.search(r"learned w = 2\.\d\d|learned w = 3\.0\d", proc.stdout), proc.stdout
    [info] = flightlog.Client().runs(project="vision")
    assert info.status == "succeeded" and info.name == "linear" and info.params == {"lr": 0.5, "optim.name": "sgd"}
    assert f"flightlog: run {info.id[:12]} in project vision → {home}" in proc.stderr
    kinds = sorted(a.kind for a in flightlog.Client().artifacts(info.id))
    assert kinds == ["checkpoint", "checkpoint", "checkpoint", "dataset", "model"]
    assert flightlog.Client().metric_history(info.id, "loss").values.size == 300


def test_the_readme_snippet_runs_as_written(home: Path, tmp_path: Path) -> None:
    proc = _run(_first_python_block(ROOT / "README.md", "## In one minute"), home, tmp_path / "r")
    [info] = flightlog.Client().runs(project="vision")
    assert info.status == "succeeded" and info.params["lr"] == 0.1
    assert flightlog.Client().metric_history(info.id, "loss").values[-1] < 0.01
    assert f"in project vision → {home}" in proc.stderr
