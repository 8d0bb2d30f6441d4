"""The warm runner the local executor forks step attempts from: each attempt a real
``flightlog run`` of its own (run, status, exit code, signal, directory, environment), one
server process for many attempts, and new processes when the server is gone."""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest
from tests.helpers import child_env, gone, kill_if_alive
from tests.helpers import wait_for as until

import flightlog
from flightlog.ids import new_run_id
from flightlog.pipeline.executors.base import StepLaunch
from flightlog.pipeline.executors.forkserver import ForkedRunner
from flightlog.pipeline.executors.local import LocalExecutor


def launch(home: Path, cwd: Path, *command: str, **env: str) -> StepLaunch:
    run_id = new_run_id()
    argv = [sys.executable, "-m", "flightlog.runner", "--project", "forks", "--run-id", run_id, "--", *command]
    return StepLaunch(run_id, argv, {**child_env(home), **env}, str(cwd))


def wait_for(executor: LocalExecutor, handle: object, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while (code := executor.poll(handle)) is None:
        assert time.monotonic() < deadline, "the attempt never ended"
        time.sleep(0.01)
    return code


def test_attempts_are_runs_of_their_own_forked_from_one_server(home: Path, tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("here")
    script = (
        "import os, pathlib; print(os.environ['FLIGHTLOG_STEP'], pathlib.Path('marker.txt').read_text()); "
        "raise SystemExit(int(os.environ['EXIT_WITH']))"
    )
    executor = LocalExecutor()
    try:
        launches = [
            launch(home, tmp_path, sys.executable, "-c", script, FLIGHTLOG_STEP=f"s{i}", EXIT_WITH=str(i * 3))
            for i in range(3)
        ]
        handles = [executor.start(each) for each in launches]
        assert all(isinstance(h, ForkedRunner) for h in handles)
        server = executor._server
        assert server is not None
        assert [wait_for(executor, h) for h in handles] == [0, 3, 6]
    finally:
        executor.close()
    assert server.process.poll() is not None, "closing the executor ends the server"
    client = flightlog.Client()
    for i, each in enumerate(launches):
        info = client.run(each.run_id, exact=True)
        assert info.status == ("succeeded" if i == 0 else "failed")
        lines = [e.message for e in client.logs(each.run_id)]
        assert f"s{i} here" in lines, "the step ran in its directory with its environment"


def test_a_stopped_attempt_is_recorded_stopped_and_reports_its_signal(home: Path, tmp_path: Path) -> None:
    executor = LocalExecutor()
    try:
        each = launch(home, tmp_path, "sleep", "60")
        handle = executor.start(each)
        assert executor._server is not None
        assert psutil.Process(handle.pid).ppid() == executor._server.process.pid, (
            "forked by the server, not a new interpreter"
        )
        client = flightlog.Client()
        deadline = time.monotonic() + 60
        while not [r for r in client.runs(project="forks") if r.status == "running"]:
            assert time.monotonic() < deadline, "the run never showed as running"
            time.sleep(0.05)
        executor.stop(handle, signal.SIGINT)
        code = wait_for(executor, handle)
    finally:
        executor.close()
    assert code != 0
    assert client.run(each.run_id, exact=True).status == "stopped"


def test_steps_start_as_new_processes_once_the_server_is_gone(home: Path, tmp_path: Path) -> None:
    executor = LocalExecutor()
    try:
        first = executor.start(launch(home, tmp_path, "true"))
        assert wait_for(executor, first) == 0
        assert executor._server is not None
        executor._server.process.kill()
        executor._server.process.wait()
        second = launch(home, tmp_path, "true")
        handle = executor.start(second)
        assert not isinstance(handle, ForkedRunner)
        assert wait_for(executor, handle) == 0
    finally:
        executor.close()
    assert flightlog.Client().run(second.run_id, exact=True).status == "succeeded"


def test_a_runner_whose_server_dies_ends_killed_and_its_end_is_known(home: Path, tmp_path: Path) -> None:
    executor = LocalExecutor()
    try:
        each = launch(home, tmp_path, "sleep", "60")
        handle = executor.start(each)
        client = flightlog.Client()
        deadline = time.monotonic() + 60
        while client.runs(project="forks") == [] or client.runs(project="forks")[0].status != "running":
            assert time.monotonic() < deadline, "the run never showed as running"
            time.sleep(0.05)
        assert executor._server is not None
        executor._server.process.kill()  # the runner gets SIGTERM: the server's death signal
        code = wait_for(executor, handle)
    finally:
        executor.close()
    assert code == -signal.SIGTERM
    assert client.run(each.run_id, exact=True).status == "killed"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the keeper is Linux only")
def test_what_a_killed_runner_left_is_killed_by_the_server_keeping_watch(home: Path, tmp_path: Path) -> None:
    """A forked runner has no keeper process of its own: the server reads its end of file when
    it dies, and a runner killed with SIGKILL still leaves nothing running (docs/runner.md)."""
    code = (
        "import subprocess, time; daemon = subprocess.Popen(['setsid', 'sleep', '300']); "
        "open('daemon.pid', 'w').write(str(daemon.pid)); time.sleep(300)"
    )
    pid_file = tmp_path / "daemon.pid"
    executor = LocalExecutor()
    daemon = 0
    try:
        handle = executor.start(launch(home, tmp_path, sys.executable, "-c", code))
        deadline = time.monotonic() + 60
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the workload never started its daemon"
            time.sleep(0.05)
        daemon = int(pid_file.read_text())
        assert not gone(daemon, within=0.2)
        os.kill(handle.pid, signal.SIGKILL)
        assert wait_for(executor, handle) == -signal.SIGKILL
        assert gone(daemon, within=5), f"the setsid daemon (pid {daemon}) outlived its killed runner"
    finally:
        executor.close()
        if daemon:
            kill_if_alive(daemon)


def test_each_attempt_has_its_own_environment_whatever_the_server_had(home: Path, tmp_path: Path) -> None:
    """A forked runner takes its attempt's environment by changing what differs from the
    server's: a variable the server had and the attempt has not is gone, and the temporary
    directory the attempt names is the one its runner uses."""
    own_tmp = tmp_path / "own-tmp"
    own_tmp.mkdir()
    script = (  # the runner's own temporary directory for the attempt (the hang watch's) is in the attempt's TMPDIR
        "import os; print('SERVER_ONLY' in os.environ, os.environ.get('STEP_ONLY'), "
        "os.path.dirname(os.environ['FLIGHTLOG_HANG_DIR']))"
    )
    executor = LocalExecutor()
    try:
        first = launch(home, tmp_path, sys.executable, "-c", script, SERVER_ONLY="1")
        executor.prepare(first.env)  # the server starts with SERVER_ONLY (and the usual TMPDIR)
        assert wait_for(executor, executor.start(first)) == 0
        second = launch(home, tmp_path, sys.executable, "-c", script, STEP_ONLY="yes", TMPDIR=str(own_tmp))
        assert wait_for(executor, executor.start(second)) == 0
    finally:
        executor.close()
    client = flightlog.Client()
    lines = [e.message for e in client.logs(second.run_id)]
    assert f"False yes {own_tmp}" in lines, lines
    assert client.run(second.run_id, exact=True).status == "succeeded"


def test_a_workload_that_cannot_start_fails_as_under_a_runner_of_its_own(home: Path, tmp_path: Path) -> None:
    """A forked runner spawns its workload from a process started ahead (``runner/seed.py``): an
    exec that fails is the same failure as ``Popen``'s, exit 127 for a command that is not there,
    126 for one that cannot run."""
    not_runnable = tmp_path / "not-runnable.sh"
    not_runnable.write_text("#!/bin/sh\n")
    executor = LocalExecutor()
    try:
        missing = launch(home, tmp_path, "no-such-command-anywhere", "x")
        refused = launch(home, tmp_path, str(not_runnable))
        codes = [wait_for(executor, executor.start(each)) for each in (missing, refused)]
    finally:
        executor.close()
    assert codes == [127, 126]
    client = flightlog.Client()
    for each, command, words in (
        (missing, "no-such-command-anywhere", "No such file or directory"),
        (refused, str(not_runnable), "Permission denied"),
    ):
        info = client.run(each.run_id, exact=True)
        assert info.status == "failed"
        assert info.failure is not None and info.failure["category"] == "dependency_error"
        assert f"cannot start {command!r}: {words}" in info.failure["message"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups and /proc are Linux only")
def test_a_forked_runners_workload_starts_as_popen_started_it(home: Path, tmp_path: Path) -> None:
    """In a cgroup of its attempt's own, in a process group of its own, the
    runner's child, stdin from /dev/null, no descriptor of the runner's but 0-2; SIGPIPE at its
    default (a shell's ignored signals are its parent's)."""
    from flightlog.resources._cgroupfs import memory_cgroup_dir

    script = (
        "import os; "
        "fds = sorted(int(fd) for fd in os.listdir('/proc/self/fd')); "
        "cgroup = [line.split(':')[2] for line in open('/proc/self/cgroup').read().splitlines() "
        "if 'memory' in line.split(':')[1].split(',') or line.startswith('0::')]; "
        "print('group', os.getpgid(0) == os.getpid(), 'parent', os.environ['FLIGHTLOG_RUNNER_PID'] == str(os.getppid())); "
        "links = [os.readlink(f'/proc/self/fd/{fd}') for fd in fds[3:] if os.path.exists(f'/proc/self/fd/{fd}')]; "
        "others = [link for link in links if not link.startswith(os.environ['FLIGHTLOG_HANG_DIR'])]; "
        "print('stdin', os.readlink('/proc/self/fd/0'), 'fds', fds[:3], 'others', others); "
        "print('cgroup', os.path.basename(cgroup[0]) if cgroup else '')"
    )
    executor = LocalExecutor()
    try:
        each = launch(home, tmp_path, sys.executable, "-c", script)
        assert wait_for(executor, executor.start(each)) == 0
        shell = launch(home, tmp_path, "sh", "-c", "grep '^SigIgn' /proc/$$/status")
        assert wait_for(executor, executor.start(shell)) == 0
    finally:
        executor.close()
    ignored = [e.message for e in flightlog.Client().logs(shell.run_id)]
    assert ignored and int(ignored[0].split()[1], 16) & (1 << (signal.SIGPIPE - 1)) == 0, ignored
    lines = [e.message for e in flightlog.Client().logs(each.run_id)]
    assert "group True parent True" in lines, lines
    assert "stdin /dev/null fds [0, 1, 2] others []" in lines, lines  # beyond 0-2, the hang watch's file only
    if memory_cgroup_dir() is not None and os.access(memory_cgroup_dir()[1], os.W_OK):  # type: ignore[index]
        assert [line for line in lines if line.startswith("cgroup flightlog-")], lines  # not the runner's


def _seeds(base: str, owner: str) -> list[str]:
    """The cgroups under ``base`` of the seeds whose name goes on with ``owner`` (``SERVER-`` or
    ``SERVER-SPARE``)."""
    return [name for name in os.listdir(base) if name.startswith(f"flightlog-seed-{owner}")]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux only")
def test_no_cgroup_of_a_workload_started_ahead_is_left_even_when_the_server_is_killed(
    home: Path, tmp_path: Path
) -> None:
    from flightlog.resources._cgroupfs import memory_cgroup_dir

    found = memory_cgroup_dir()
    if found is None or not os.access(found[1], os.W_OK):
        pytest.skip("no cgroup this process may make cgroups in")
    base = found[1]

    for kill in (False, True):
        executor = LocalExecutor()
        try:
            assert wait_for(executor, executor.start(launch(home, tmp_path, "true"))) == 0
            server = executor._server
            assert server is not None
            owner = f"{server.process.pid}-"  # the next step's seed, waiting in its cgroup
            until(functools.partial(_seeds, base, owner), "a workload started ahead")
            if kill:
                server.process.kill()
                server.process.wait()
        finally:
            executor.close()
        assert _seeds(base, f"{server.process.pid}-") == [], f"left behind (server killed: {kill})"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups and death signals are Linux only")
def test_no_cgroup_of_a_workload_started_ahead_is_left_when_the_controller_is_killed(
    home: Path, tmp_path: Path
) -> None:
    """The controller killed with SIGKILL takes its warm runner down (its death signal), and that
    one its spare: the spare removes the seed it planted and its cgroup before it dies."""
    import subprocess

    from flightlog.resources._cgroupfs import memory_cgroup_dir

    found = memory_cgroup_dir()
    if found is None or not os.access(found[1], os.W_OK):
        pytest.skip("no cgroup this process may make cgroups in")
    base = found[1]
    controller = (
        "import sys, time; from tests.pipeline.test_forkserver import launch, wait_for; "
        "from flightlog.pipeline.executors.local import LocalExecutor; from pathlib import Path; "
        "executor = LocalExecutor(); "
        "assert wait_for(executor, executor.start(launch(Path(sys.argv[1]), Path(sys.argv[2]), 'true'))) == 0; "
        "print(executor._server.process.pid, flush=True); time.sleep(300)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", controller, str(home), str(tmp_path)],
        env=child_env(home),
        cwd=Path(__file__).resolve().parents[2],  # the repository's root: `tests` imports there
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        server_pid = int(proc.stdout.readline())
        until(lambda: _seeds(base, f"{server_pid}-"), "a workload started ahead")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        until(lambda: not _seeds(base, f"{server_pid}-"), "the seeds' cgroups to be removed")
    finally:
        kill_if_alive(proc.pid)
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="cgroups are Linux only")
def test_a_step_with_a_memory_limit_runs_in_its_limits_cgroup_and_its_seed_is_gone(home: Path, tmp_path: Path) -> None:
    """A step with a memory limit spawns as before, into the limit's cgroup; the process started
    ahead for it is dismissed and removes its cgroup."""
    from flightlog.resources._cgroupfs import memory_cgroup_dir

    found = memory_cgroup_dir()
    if found is None or not os.access(found[1], os.W_OK):
        pytest.skip("no cgroup this process may make cgroups in")
    base = found[1]
    script = (
        "cgroup = [line.split(':')[2] for line in open('/proc/self/cgroup').read().splitlines() "
        "if 'memory' in line.split(':')[1].split(',') or line.startswith('0::')]; "
        "print('cgroup', cgroup[0].rsplit('/', 1)[-1])"
    )
    executor = LocalExecutor()
    try:
        each = launch(home, tmp_path, sys.executable, "-c", script)
        each.argv[3:3] = ["--memory-limit", "256M"]
        handle = executor.start(each)
        assert isinstance(handle, ForkedRunner)
        assert wait_for(executor, handle) == 0
        server = executor._server
        assert server is not None
        until(lambda: not _seeds(base, f"{server.process.pid}-{handle.pid}"), "the dismissed seed's cgroup to go")
    finally:
        executor.close()
    lines = [e.message for e in flightlog.Client().logs(each.run_id)]
    assert f"cgroup flightlog-{each.run_id[:12]}-a1" in lines, lines
