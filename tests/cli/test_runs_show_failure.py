"""``runs show`` on a failed run that raised no Python exception says how it ended and the line
that says why (issue 29: it printed ``failure :`` — nothing — for an argparse usage error, a
kill and an OOM kill, found on complete runs of a seventh set written for the purpose)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.helpers import cli

pytestmark = pytest.mark.embedded_only("rendering: the Client returns the same records on every transport")


def _show(home: Path, code: str) -> str:
    proc = cli(home, "run", "--project", "show", "--", sys.executable, "-c", code, check=False, timeout=60)
    m = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)
    assert m, proc.stderr
    return cli(home, "runs", "show", m[1]).stdout


def test_a_usage_error_shows_its_exit_code_and_its_last_line(home: Path) -> None:
    code = (
        "import argparse\n"
        "p = argparse.ArgumentParser(prog='train.py')\n"
        "p.add_argument('--optimizer', choices=['adam', 'sgd'])\n"
        "p.parse_args(['--optimizer', 'adamw8bit'])\n"
    )
    failure = next(line for line in _show(home, code).splitlines() if line.startswith("failure"))
    assert failure.startswith(
        "failure exit code 2; last line: train.py: error: argument --optimizer: invalid choice"
    ), failure


def test_a_kill_shows_the_signal_by_name(home: Path) -> None:
    code = "import os, signal\nprint('downloading shards', flush=True)\nos.kill(os.getpid(), signal.SIGHUP)\n"
    failure = next(line for line in _show(home, code).splitlines() if line.startswith("failure"))
    assert failure == "failure killed by SIGHUP (signal 1); last line: downloading shards", failure


def test_an_exception_still_shows_its_type_and_message(home: Path) -> None:
    failure = next(
        line for line in _show(home, "raise ValueError('bad lr')").splitlines() if line.startswith("failure")
    )
    assert failure == "failure ValueError: bad lr", failure
