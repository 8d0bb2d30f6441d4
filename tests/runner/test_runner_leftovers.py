"""Processes a workload leaves behind do not outlive `flightlog run`, whatever session they are in (issue 15)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from flightlog.runner.reaper import KeptWatch
from tests.helpers import child_env, cli, gone, kill_if_alive
from tests.runner.test_runner import last_run, script

PY = sys.executable


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="child subreaper is Linux only")
@pytest.mark.embedded_only("process handling is the runner's, whatever the transport")
def test_setsid_daemons_started_by_the_workload_are_killed_when_it_exits(home: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    code = script(
        tmp_path,
        "daemons.py",
        f"""
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
        """,
    )
    try:
        proc = cli(home, "run", "--project", "t", "--", PY, code, timeout=60)
        assert "started ['detached', 'double_fork']" in proc.stdout
        for name in ("detached", "double_fork"):
            pid = int((pids / name).read_text())
            assert gone(pid, within=10), f"the {name} daemon (pid {pid}) outlived flightlog run"
        counters = last_run(home).counters
        assert counters.get("leftover_processes_killed", 0) >= 2, counters
    finally:
        kill_if_alive(*(int(f.read_text()) for f in pids.iterdir() if f.read_text().strip().isdigit()))


def _wait_for_files(paths: list[Path], within: float) -> None:
    deadline = time.monotonic() + within
    while not all(p.exists() and p.read_text().strip() for p in paths):
        assert time.monotonic() < deadline, f"not all of {[p.name for p in paths]} appeared"
        time.sleep(0.05)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent death signals and cgroups are Linux only")
@pytest.mark.embedded_only("process handling is the runner's, whatever the transport")
def test_the_workload_and_a_scrubbed_setsid_daemon_die_with_a_killed_runner(home: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    workload, daemon = pids / "workload", pids / "daemon"
    code = script(
        tmp_path,
        "long.py",
        f"""
        import os, subprocess, time
        open({str(workload)!r}, "w").write(str(os.getpid()))
        # a daemon in a session of its own with an empty environment: no mark, no group, no parent
        subprocess.Popen(["setsid", "env", "-i", "/bin/sh", "-c", "echo $$ > {daemon}; exec /bin/sleep 300"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(300)
        """,
    )
    runner = subprocess.Popen(
        [str(Path(PY).with_name("flightlog")), "run", "--project", "t", "--timeout", "600", "--", PY, code],
        env=child_env(home),
        cwd=home.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started: list[int] = []
    try:
        _wait_for_files([workload, daemon], within=30)
        started = [int(workload.read_text()), int(daemon.read_text())]
        assert all(not gone(pid, within=0.1) for pid in started)
        runner.kill()  # kill -9: the runner cleans up nothing itself
        runner.wait(timeout=10)
        for name, pid in zip(("workload", "setsid env -i daemon"), started, strict=True):
            assert gone(pid, within=5), f"the {name} (pid {pid}) outlived the killed flightlog run"
    finally:
        if runner.poll() is None:
            runner.kill()
        kill_if_alive(*started)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the keeper is Linux only")
@pytest.mark.embedded_only("process handling is the runner's, whatever the transport")
def test_a_run_that_ends_leaves_no_keeper_behind(home: Path) -> None:
    run_id = os.urandom(16).hex()  # the keepers of this run only: other tests' runs may have theirs now
    cli(home, "run", "--project", "t", "--run-id", run_id, "--", PY, "-c", "print('ok')", timeout=60)
    assert [p.pid for p in psutil.process_iter() if _is_keeper(p, run_id)] == []


def _is_keeper(proc: psutil.Process, run_id: str) -> bool:
    try:
        cmd = proc.cmdline()
    except psutil.Error:
        return False
    return (
        len(cmd) > 4
        and cmd[1:4] == ["-I", "-S", "-c"]
        and "os.read(0, 1)" in cmd[4]
        and f"FLIGHTLOG_RUN_ID={run_id}" in cmd[5:]
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the keeper is Linux only")
@pytest.mark.embedded_only("process handling is the runner's, whatever the transport")
def test_without_a_cgroup_the_keeper_still_kills_what_carries_the_attempts_mark(tmp_path: Path) -> None:
    """Where no cgroup can be made, a killed runner's keeper finds the workload's processes by
    their environment: a setsid daemon that kept it dies; one that cleared it is out of reach
    (docs/runner.md)."""
    marks = {"FLIGHTLOG_CAPTURED": "1", "FLIGHTLOG_RUN_ID": os.urandom(16).hex(), "FLIGHTLOG_ATTEMPT": "1"}
    fake_runner = script(
        tmp_path,
        "runner.py",
        f"""
        import os, subprocess, time
        from flightlog.runner.reaper import Keeper
        marks = {marks!r}
        Keeper.start(None, [f"{{k}}={{v}}" for k, v in marks.items()])  # no cgroup: marks only
        kept = subprocess.Popen(["setsid", "sleep", "300"], env={{**os.environ, **marks}})
        print(kept.pid, flush=True)
        time.sleep(300)
        """,
    )
    runner = subprocess.Popen([PY, fake_runner], stdout=subprocess.PIPE, text=True)
    daemon = 0
    try:
        assert runner.stdout is not None
        daemon = int(runner.stdout.readline())
        assert not gone(daemon, within=0.2)
        runner.kill()
        runner.wait(timeout=10)
        assert gone(daemon, within=5), f"the marked setsid daemon (pid {daemon}) outlived its killed runner"
    finally:
        if runner.poll() is None:
            runner.kill()
        if runner.stdout is not None:
            runner.stdout.close()
        if daemon:
            kill_if_alive(daemon)


WATCHED_RUNNER = """
import os, subprocess, sys, time
from flightlog.runner.reaper import Keeper, watched_by
marks = {marks!r}
watched_by(int(sys.argv[2]))  # as a pipeline step's runner is: the warm runner that forked it keeps watch
keeper = Keeper.start(None, [f"{{k}}={{v}}" for k, v in marks.items()])
kept = subprocess.Popen(["setsid", "sleep", "300"], env={{**os.environ, **marks}})
print(kept.pid, flush=True)
if sys.argv[1] == "stand-down":
    sys.stdin.readline()  # the test has looked: told to stand down only now
    keeper.stand_down()
    print("stood down", flush=True)
time.sleep(300)
"""


def _watch_until_gone(read_fd: int, watch: KeptWatch) -> None:
    """The warm runner's side of a runner's pipe (``forkserver._keep_watch``): what it says, then its end of file."""
    while data := os.read(read_fd, 65536):
        watch.feed(data)
    watch.runner_gone()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the keeper is Linux only")
@pytest.mark.embedded_only("process handling is the runner's, whatever the transport")
@pytest.mark.parametrize("end", ["killed", "stand-down"])
def test_a_watched_runner_s_keeper_kills_for_it_when_killed_and_nothing_when_it_stood_down(
    tmp_path: Path, end: str
) -> None:
    """The keeper of a pipeline step's runner is the warm runner that forked it (``watched_by``):
    told what to watch by ``Keeper.start``, it starts no process while the runner lives, kills
    the attempt's marked processes when the runner dies, and kills nothing for a runner that
    stood down."""
    marks = {"FLIGHTLOG_CAPTURED": "1", "FLIGHTLOG_RUN_ID": os.urandom(16).hex(), "FLIGHTLOG_ATTEMPT": "1"}
    fake_runner = tmp_path / "runner.py"
    fake_runner.write_text(WATCHED_RUNNER.format(marks=marks))
    read_fd, write_fd = os.pipe()
    runner = subprocess.Popen(
        [PY, str(fake_runner), end, str(write_fd)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        pass_fds=(write_fd,),
    )
    os.close(write_fd)
    watch = KeptWatch()
    daemon = 0
    try:
        assert runner.stdout is not None
        daemon = int(runner.stdout.readline())
        assert not gone(daemon, within=0.2)
        assert [p.pid for p in psutil.process_iter() if _is_keeper(p, marks["FLIGHTLOG_RUN_ID"])] == [], (
            "no keeper process of its own while the runner lives"
        )
        if end == "killed":
            runner.kill()
            runner.wait(timeout=10)
            _watch_until_gone(read_fd, watch)
            assert gone(daemon, within=5), f"the marked setsid daemon (pid {daemon}) outlived its killed runner"
        else:
            assert runner.stdin is not None
            runner.stdin.write("stand down\n")
            runner.stdin.flush()
            assert runner.stdout.readline().strip() == "stood down"
            runner.kill()  # its end after standing down: nothing left to take
            runner.wait(timeout=10)
            _watch_until_gone(read_fd, watch)
            assert not gone(daemon, within=0.5), "a keeper told to stand down kills nothing"
    finally:
        os.close(read_fd)
        if runner.poll() is None:
            runner.kill()
            runner.wait(timeout=10)
        for pipe in (runner.stdin, runner.stdout):
            if pipe is not None:
                pipe.close()
        if daemon:
            kill_if_alive(daemon)
