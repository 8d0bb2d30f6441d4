"""What `flightlog run` makes of a workload's output: stored text and levels, metrics from lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import flightlog
from tests.helpers import child_env
from tests.runner.test_runner import last_run, script

PY = sys.executable
FLIGHTLOG = str(Path(PY).with_name("flightlog"))


@pytest.mark.embedded_only("capture happens in the runner, before any transport")
def test_colour_codes_reach_the_terminal_but_not_the_store(home: Path, tmp_path: Path) -> None:
    code = script(tmp_path, "colours.py", """
        import sys
        sys.stderr.write("\\x1b[31mERROR\\x1b[0m: disk full\\n")
        print("\\x1b[1;33mWARNING\\x1b[0m:root:slow batch")
        """)
    proc = subprocess.run([FLIGHTLOG, "run", "--project", "t", "--", PY, code], env=child_env(home),
                          capture_output=True, cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout == b"\x1b[1;33mWARNING\x1b[0m:root:slow batch\n"  # passthrough: raw bytes
    assert b"\x1b[31mERROR\x1b[0m: disk full\n" in proc.stderr
    events = flightlog.Client(home=home).logs(last_run(home).id)
    assert sorted((e.message, e.level_name) for e in events) == [
        ("ERROR: disk full", "error"),
        ("WARNING:root:slow batch", "warning"),
    ]
