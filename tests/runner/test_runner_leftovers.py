"""Processes a workload leaves behind do not outlive `flightlog run`, whatever session they are in (issue 15)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.helpers import cli
from tests.runner.test_runner import last_run, script

PY = sys.executable


def gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child subreaper is Linux only")
@pytest.mark.embedded_only("process handling is the runner's, whatever the transport")
def test_setsid_daemons_started_by_the_workload_are_killed_when_it_exits(home: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    code = script(tmp_path, "daemons.py", f"""
        import os, subprocess, sys, time
        here = {str(pids)!r}
        sleeper = "import os, sys, time; open(os.path.join(sys.argv[1], sys.argv[2]), 'w').write(str(os.getpid())); time.sleep(300)"
        # a daemon in its own session with its output elsewhere
        subprocess.Popen([sys.executable, "-c", sleeper, here, "detached"], start_new_session=True,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # a classic double fork: fork, setsid, fork; the grandchild keeps our stdout open
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", sleeper, here, "double_fork"])
            os._exit(0)
        deadline = time.monotonic() + 30
        while len(os.listdir(here)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        print("started", sorted(os.listdir(here)))
        """)
    try:
        proc = cli(home, "run", "--project", "t", "--", PY, code, timeout=60)
        assert "started ['detached', 'double_fork']" in proc.stdout
        for name in ("detached", "double_fork"):
            pid = int((pids / name).read_text())
            assert gone(pid, within=10), f"the {name} daemon (pid {pid}) outlived flightlog run"
        counters = last_run(home).counters
        assert counters.get("leftover_processes_killed", 0) >= 2, counters
    finally:
        for f in pids.iterdir():
            try:
                os.kill(int(f.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
