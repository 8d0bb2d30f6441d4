"""The hang watch of a process that called ``flightlog.init()``: a stall is recorded while it
lasts (evidence, a warning event, a line on stderr), diagnosed as a hang while the run still
runs, resolved when progress resumes; its settings are checked at ``init``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest

import flightlog
from flightlog.errors import InvalidInput, NotFound
from flightlog.sdk.hangs import _progress_of
from tests.helpers import child_env

pytestmark = pytest.mark.embedded_only("one process's watch; the distributed suite runs through a server")

STALLS = """
import os, sys, time
from pathlib import Path
import flightlog

def read_shard(release):
    while not release.exists():  # stuck, as a read from a storage that stopped answering
        time.sleep(0.05)

run = flightlog.init(project="t", name="stuck")
print(run.id, flush=True)
for step in range(20):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.02)
read_shard(Path(sys.argv[1]))
run.log({"loss": 0.01}, step=20)
run.finish()
"""


def _wait_for(predicate, what: str, proc: subprocess.Popen[str] | None = None) -> None:  # type: ignore[no-untyped-def]
    """Until ``predicate()`` holds (a row in the store); a run not stored yet counts as not yet."""

    def holds() -> bool:
        try:
            return bool(predicate())
        except NotFound:
            return False

    while not holds():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the workload ended before {what}: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.1)


def test_a_stuck_process_is_a_hang_while_it_hangs_and_not_once_it_resumed(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "stuck.py"
    script.write_text(STALLS)
    release = tmp_path / "release"
    env = child_env(home, FLIGHTLOG_HANG_MIN="0.5", FLIGHTLOG_HANG_MAX="2")
    proc = subprocess.Popen(
        [sys.executable, str(script), str(release)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        run_id = proc.stdout.readline().strip()
        client = flightlog.Client(home=home)
        _wait_for(lambda: client.evidence(run_id, kind="stacks"), "its stacks were recorded", proc)
        (stall,) = client.evidence(run_id, kind="stall")
        assert stall["data"]["state"] == "stalled" and stall["data"]["progress"]
        assert client.run(run_id).status == "running"
        report = client.diagnose(run_id, auto_baseline=False)
        top = report["findings"][0]
        assert top["category"] == "hang" and top["confidence"] >= 0.5, report
        assert top["where"]["function"] == "read_shard" and top["where"]["file"] == str(script)
        assert "no progress for" in top["summary"] and "read_shard at stuck.py:" in top["summary"]
        warnings = client.logs(run_id, level="warning", component="flightlog")
        assert any("no progress for" in e.message for e in warnings)
    finally:
        release.write_text("go")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "flightlog: this process: no progress for" in err
    states = [e["data"]["state"] for e in client.evidence(run_id, kind="stall")]
    assert states == ["stalled", "resumed"]
    report = client.diagnose(run_id, auto_baseline=False)
    assert not [f for f in report["findings"] if f["confidence"] >= 0.5], report


def test_the_watch_runs_with_the_run_and_stops_with_it(home: Path) -> None:
    run = flightlog.init(project="t")
    try:
        assert any(t.name == "flightlog-hang-watch" for t in threading.enumerate())
    finally:
        run.finish()
    assert not any(t.name == "flightlog-hang-watch" and t.is_alive() for t in threading.enumerate())


def test_steps_stages_and_heartbeats_are_its_signs_of_progress(home: Path) -> None:
    run = flightlog.init(project="t")
    try:
        progress = _progress_of(run)
        seen = [progress()]
        run.log({"loss": 1.0})
        seen.append(progress())
        with run.stage("data_loading"):
            pass
        seen.append(progress())
        run.heartbeat()
        seen.append(progress())
        assert len(set(seen)) == 4, seen
    finally:
        run.finish()


def test_it_can_be_turned_off(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLIGHTLOG_HANG_WATCH", "off")
    run = flightlog.init(project="t")
    try:
        assert not any(t.name == "flightlog-hang-watch" for t in threading.enumerate())
    finally:
        run.finish()


def test_a_bad_setting_stops_init_with_the_variable_named(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLIGHTLOG_HANG_MIN", "a minute")
    with pytest.raises(InvalidInput, match=r"FLIGHTLOG_HANG_MIN='a minute': not a number of seconds"):
        flightlog.init(project="t")
    assert flightlog.Client(home=home).runs() == []  # nothing recorded


def test_init_turns_torch_s_flight_recorder_on_unless_the_job_chose(home: Path, tmp_path: Path) -> None:
    code = """
        import os, flightlog
        run = flightlog.init(project="t")
        print(os.environ.get("TORCH_FR_BUFFER_SIZE"))
        run.finish()
    """
    env = child_env(home)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "2000", out.stderr
    env.update(TORCH_FR_BUFFER_SIZE="50")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "50"
    env.pop("TORCH_FR_BUFFER_SIZE")
    env["FLIGHTLOG_FR_BUFFER"] = "0"
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "None"


def test_the_hang_signal_prints_a_process_s_stacks_without_ending_it(home: Path) -> None:
    """The signal is the runner's fallback for a process whose watch cannot answer because C code
    holds the GIL (here a regular expression that backtracks): faulthandler prints every thread's
    stack from the signal handler, and the process goes on. (Sent to a process whose threads run
    Python code, CPython's dump reads frames that move under it: the runner sends it only after
    the watch failed to answer, docs/distributed.md.)"""
    code = """
        import re, flightlog
        run = flightlog.init(project="t")
        print("busy", flush=True)
        re.match(r"(a+)+$", "a" * 25 + "b")  # seconds in C, holding the GIL
        print("alive", flush=True)
        run.finish()
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=child_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "busy"
    child = psutil.Process(proc.pid)
    busy_from = child.cpu_times().user
    while child.cpu_times().user - busy_from < 0.2:  # inside the match: its CPU time grows
        assert proc.poll() is None, "the match ended before the signal was sent"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGRTMIN + 7)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.strip() == "alive", err
    assert "most recent call first" in err  # faulthandler's dump, on stderr
    assert "line 5 in <module>" in err, err  # the main thread, where it was: in the match
