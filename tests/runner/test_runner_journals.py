"""`flightlog run` and the journals: none left behind by the fork into the workload, a workload
that never calls finish() keeps its last points, and a runner killed with SIGKILL ends up
``crashed`` for the next reader."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil

import flightlog
from flightlog.journal import list_journals
from tests.helpers import child_env, cli, cli_json


def test_the_runner_leaves_no_journal_behind(home: Path) -> None:
    for _ in range(2):
        cli(home, "run", "--project", "t", "--", "true")
    assert list_journals(home) == []
    assert [r.status for r in flightlog.Client().runs(project="t")] == ["succeeded", "succeeded"]


def test_a_workload_that_never_calls_finish_keeps_its_last_points(home: Path, tmp_path: Path) -> None:
    code = tmp_path / "train.py"
    code.write_text(
        textwrap.dedent("""
        import time, flightlog
        from flightlog.errors import NotFound
        run = flightlog.init()
        run.log({"x": 0.0})
        client = flightlog.Client()

        def shipped():  # the run and its first point reached the store: the transport is open
            try:
                return bool(client.run(run.id).metrics)
            except NotFound:  # a server learns of the run when the runner's journal ships it
                return False

        deadline = time.monotonic() + 30
        while not shipped():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        for i in range(1, 2500):
            run.log({"x": float(i)})
        """)
    )
    proc = cli(home, "run", "--project", "t", "--", sys.executable, str(code))
    assert "has been closed" not in proc.stderr, proc.stderr
    info = flightlog.Client().runs(project="t")[0]
    assert info.status == "succeeded" and info.metrics["x"].count == 2500
    assert list_journals(home) == []


def test_a_runner_killed_with_sigkill_is_marked_crashed_by_the_next_reader(home: Path) -> None:
    exe = Path(sys.executable).with_name("flightlog")
    runner = subprocess.Popen(
        [str(exe), "run", "--project", "t", "--", "sleep", "300"],
        env=child_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workload: list[psutil.Process] = []
    try:
        client = flightlog.Client()
        deadline = time.monotonic() + 60
        while not (workload and [r.status for r in client.runs(project="t")] == ["running"]):
            assert time.monotonic() < deadline, "the run never showed as running"
            workload = psutil.Process(runner.pid).children(recursive=True)
            time.sleep(0.05)
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=10)
        runs = cli_json(home, "runs", "ls", "--project", "t")
        assert [(r["status"], r["end_reason"]) for r in runs] == [("crashed", "lost")]
        assert list_journals(home) == [], "nothing left to ship: the journals are gone"
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait(timeout=10)
        for proc in workload:  # the workload runs in its own process group and outlives the runner
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def test_everything_of_a_short_run_is_stored_when_the_runner_returns(home: Path, tmp_path: Path) -> None:
    """A pipeline step reads its run the moment `flightlog run` exits: the final status, the
    context, the resource evidence and every count are there, and no journal is left to sync."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.bin").write_bytes(b"x" * 200_000)
    _run_in(home, work, "true")
    assert list_journals(home) == []
    client = flightlog.Client()
    [run] = client.runs(project="t")
    assert (run.status, run.exit_code) == ("succeeded", 0)
    context = client.context(run.id)
    assert context["packages"]["numpy"] and context["cwd"] == str(work)
    [summary] = client.evidence(run.id, kind="resources", name="summary-attempt-1")
    assert summary["data"]["cpu_seconds"] is not None
    assert client.evidence(run.id, kind="runner", name="config")


def test_the_working_directory_is_measured_once_the_workload_runs_a_while(home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.bin").write_bytes(b"x" * 200_000)
    _run_in(home, work, "sleep", "1.6", options=("--sample-interval", "0.2s"))
    client = flightlog.Client()
    [run] = client.runs(project="t")
    [summary] = client.evidence(run.id, kind="resources", name="summary-attempt-1")
    assert summary["data"]["workdir_bytes_max"] >= 200_000


def _run_in(home: Path, cwd: Path, *command: str, options: tuple[str, ...] = ()) -> None:
    exe = Path(sys.executable).with_name("flightlog")
    subprocess.run(
        [str(exe), "run", "--project", "t", *options, "--", *command],
        env=child_env(home),
        cwd=cwd,
        check=True,
        capture_output=True,
        timeout=120,
    )
