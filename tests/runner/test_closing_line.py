"""The runner's closing line starts a line of its own. A kill that cuts a progress bar short
leaves the terminal in the middle of the bar's line, and ``flightlog: run … killed (…)`` was
glued to it (``download:  36%|███▋ | 145/400 [00:02<00:05]flightlog: run 8d67… killed``), and
said "killed (signal, exit code 129, …)" without naming the signal; found on a seventh set of
complete runs (setup and configuration; issue 29)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import cli

pytestmark = pytest.mark.embedded_only("the runner's own output, whatever store it writes to")

CUT_SHORT = (
    "import os, signal, sys\n"
    "sys.stderr.write('download:  36%|###    | 145/400\\r')\n"
    "sys.stderr.write('download:  37%|###    | 146/400')\n"
    "sys.stderr.flush()\n"
    "os.kill(os.getpid(), signal.SIGHUP)\n"
)


def test_the_closing_line_does_not_glue_itself_to_a_bar_cut_short(home: Path) -> None:
    proc = cli(home, "run", "--", sys.executable, "-c", CUT_SHORT, check=False, timeout=60, process=True)
    assert "download:  37%|###    | 146/400\nflightlog: run " in proc.stderr, proc.stderr[-400:]
    assert " killed (SIGHUP, exit code 129, " in proc.stderr, proc.stderr[-400:]


def test_output_that_ended_its_line_gets_no_blank_line(home: Path) -> None:
    proc = cli(
        home, "run", "--", sys.executable, "-c", "print('done', flush=True)", check=False, timeout=60, process=True
    )
    assert "\n\nflightlog: run" not in proc.stderr and "flightlog: run" in proc.stderr, proc.stderr[-400:]
