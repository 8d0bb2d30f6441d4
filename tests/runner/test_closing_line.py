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


def test_a_runner_whose_stderr_has_no_descriptor_ends_quietly(tmp_path: Path) -> None:
    """The runner ends the workload's open line on its own stderr; a stderr without a file
    descriptor (a runner driven in-process, its stderr captured) raised ``UnsupportedOperation``
    out of the runner's end instead of having no line to end."""
    import io
    import os

    from flightlog.capture import CaptureConfig, CapturePipeline
    from flightlog.runner.pump import OutputPump

    err_r, err_w = os.pipe()
    devnull = os.open(os.devnull, os.O_WRONLY)
    pump = OutputPump({"stderr": (err_r, devnull)}, CapturePipeline(CaptureConfig(env={})), lambda batch: None)
    try:
        pump.start()
        os.write(err_w, b"download:  37%|###    | 146/400")  # a bar a kill cut short
        os.close(err_w)
        assert pump.join(30)
        assert pump.open_line_fd == devnull
        pump.end_open_line(io.StringIO())  # raised io.UnsupportedOperation
    finally:
        os.close(devnull)
