"""A warm runner for the local executor: one process that has loaded ``flightlog run``'s code and
forks a fresh runner for each step attempt.

Every step attempt still gets a ``flightlog run`` process of its own: its own run, capture,
sampling and end, in its own session, taken down when the controller dies. What it no longer
pays is a new interpreter importing the runner, about 0.2–0.3 s of CPU per step, more than a
small step itself. Forked from this warm process, a runner starts with its code loaded.

The protocol, with :class:`ForkServer` on the controller's side: one JSON line per attempt on
this process's stdin (``{"args": the runner's arguments, "env", "cwd", "verbose"}``); answers on
the reply descriptor: ``started PID`` at once, ``ended PID STATUS`` when that runner ends
(STATUS as :attr:`subprocess.Popen.returncode` has it: negative for a signal). The server keeps
one runner forked ahead, waiting for its request, so a step does not wait for a fork. It is also
each runner's keeper (``runner/reaper.py``): a pipe per runner tells it what the runner's attempt
asked to be watched, and a runner that dies without standing down gets a keeper then, instead of
every step paying for a keeper process. When stdin closes, the server waits for its runners and
exits. It runs no thread and opens no store or connection, so a fork copies nothing half done
(see :mod:`flightlog.forksafe`).
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, NoReturn

from flightlog.errors import FlightlogError
from flightlog.journal.liveness import process_alive
from flightlog.pipeline.executors.base import StepLaunch
from flightlog.pipeline.wakeup import drain

__all__ = ["ForkServer", "ForkedRunner", "ForkServerError", "RUNNER_MODULE"]

RUNNER_MODULE = "flightlog.runner"  # a launch whose argv is `python -m flightlog.runner ...` can be forked
_START_TIMEOUT = 60.0  # seconds for the server to load its code and answer the first request


class ForkServerError(FlightlogError):
    """The warm runner could not start or stopped answering; steps start as new processes instead."""


@dataclass
class ForkedRunner:
    """The handle of one forked runner: its pid, and its exit status once the server reported it."""

    pid: int
    returncode: int | None = None


@dataclass
class ForkServer:
    """The controller's side: starts the server, asks it for runners, and learns when they end."""

    process: subprocess.Popen[bytes]
    replies: int  # the read end of the reply pipe
    runners: dict[int, ForkedRunner] = field(default_factory=dict)
    _buffer: bytes = b""

    @classmethod
    def start(cls, env: dict[str, str], preexec: Any) -> ForkServer:
        read_end, write_end = os.pipe()
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", __name__, str(write_end)],
                env=env,
                stdin=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=preexec,
                pass_fds=(write_end,),
                close_fds=True,
            )
        except OSError as exc:
            os.close(read_end)
            raise ForkServerError(f"cannot start the warm runner: {exc}") from None
        finally:
            os.close(write_end)
        os.set_blocking(read_end, False)
        return cls(process, read_end)

    @staticmethod
    def accepts(launch: StepLaunch) -> bool:
        return launch.argv[:3] == [sys.executable, "-m", RUNNER_MODULE]

    def launch(self, launch: StepLaunch) -> ForkedRunner:
        request = {"args": launch.argv[3:], "env": launch.env, "cwd": launch.cwd, "verbose": launch.verbose}
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except (OSError, ValueError) as exc:
            raise ForkServerError(f"the warm runner stopped taking requests ({exc})") from None
        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            for kind, pid, _ in self._read():
                if kind == "started":
                    runner = self.runners[pid] = ForkedRunner(pid)
                    return runner
            left = deadline - time.monotonic()
            if left <= 0 or self.process.poll() is not None:
                raise ForkServerError("the warm runner did not start the step (it exited or stopped answering)")
            select.select([self.replies], [], [], left)

    def poll(self, runner: ForkedRunner) -> int | None:
        self._read()
        if runner.returncode is None and self.process.poll() is not None and not process_alive(runner.pid, None):
            # the server died (killed): nobody reports this runner's end, which the server's
            # death signal brought about; its runner still recorded the run as killed
            runner.returncode = -signal.SIGTERM
            self.runners.pop(runner.pid, None)
        return runner.returncode

    def close(self) -> None:
        if self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self.replies)
        from flightlog.runner.seed import remove_leftovers

        remove_leftovers(self.process.pid)  # a seed's cgroup, where the server was killed with its spare

    def _read(self) -> list[tuple[str, int, int]]:
        """Every reply that has arrived; an ``ended`` one sets its runner's status as it is read."""
        try:
            while chunk := os.read(self.replies, 65536):
                self._buffer += chunk
        except BlockingIOError:
            pass
        *lines, self._buffer = self._buffer.split(b"\n")
        replies = []
        for line in lines:
            kind, pid, *rest = line.decode().split()
            status = int(rest[0]) if rest else 0
            if kind == "ended" and int(pid) in self.runners:
                self.runners.pop(int(pid)).returncode = status
            replies.append((kind, int(pid), status))
        return replies


# ── the server's side ──────────────────────────────────────────────────────
@dataclass
class _Spare:
    """A runner forked ahead of its request, set up (its own session, the death signal) and
    waiting on its pipe: a request costs a write, not a fork."""

    pid: int
    request_fd: int  # the write end of its pipe

    def give(self, line: bytes) -> None:
        try:
            os.write(self.request_fd, line)
        finally:
            os.close(self.request_fd)

    def dismiss(self) -> None:
        os.close(self.request_fd)  # it reads end-of-file and exits quietly


def serve(reply_fd: int) -> None:
    from flightlog.pipeline.executors.local import parent_death_signal  # the fork server's own process only
    from flightlog.runner.reaper import KeptWatch

    _load_runner_code()
    os.set_inheritable(reply_fd, False)  # a keeper this process starts (reaper.release_keeper) never holds it
    die_with_parent = parent_death_signal()  # libc found once, here, not in each runner
    gc.collect()
    gc.freeze()  # what is loaded now is never collected: a runner's collections skip it (less work, fewer pages copied)
    server_pid = os.getpid()
    wake_read, wake_write = os.pipe()
    for fd in (wake_read, wake_write):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes the select below through the pipe

    watches: dict[int, KeptWatch] = {}  # the read end of each runner's pipe → what its attempt asked

    def fork_spare() -> _Spare:
        read_end, write_end = os.pipe()
        watch_read, watch_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            server_fds = (0, reply_fd, wake_read, wake_write, write_end, watch_read, *watches)
            _wait_as_spare(read_end, watch_write, server_pid, die_with_parent, server_fds)
        os.close(read_end)
        os.close(watch_write)
        os.set_blocking(watch_read, False)
        watches[watch_read] = KeptWatch()
        return _Spare(pid, write_end)

    spare: _Spare | None = fork_spare()
    running: set[int] = set()
    pending = b""
    taking = True
    while taking or running or watches:
        readable, _, _ = select.select([0, wake_read, *watches] if taking else [wake_read, *watches], [], [], 1.0)
        if wake_read in readable:
            drain(wake_read)
        for fd in readable:
            if fd in watches:
                _keep_watch(fd, watches)
        for pid, status in _reap():
            if pid in running:
                running.discard(pid)
                _reply(reply_fd, f"ended {pid} {status}")
            elif spare is not None and pid == spare.pid:  # it died before its request (killed): another
                os.close(spare.request_fd)
                spare = fork_spare()
        if 0 not in readable:
            continue
        data = os.read(0, 65536)
        if not data:  # the controller closed its end: finish with the runners still going
            taking = False
            if spare is not None:
                spare.dismiss()
                spare = None
            continue
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            given = spare or fork_spare()
            given.give(line)  # first, so that the next spare does not inherit this pipe
            running.add(given.pid)
            _reply(reply_fd, f"started {given.pid}")
            spare = fork_spare()


def _keep_watch(fd: int, watches: dict[int, Any]) -> None:
    """Read what a runner said about its attempt; at its end of file (the runner exited, however
    it died) a keeper takes what an attempt that did not stand down left behind."""
    try:
        while data := os.read(fd, 65536):
            watches[fd].feed(data)
    except BlockingIOError:
        return
    except OSError:
        pass
    os.close(fd)
    watches.pop(fd).runner_gone()


def _load_runner_code() -> None:
    """Import what a runner uses, here once, so that each forked runner finds it loaded."""
    import encodings.ascii  # noqa: F401 - the sampler reads cgroup files as ASCII

    import flightlog.alerts.discovery  # noqa: F401
    import flightlog.alerts.monitor  # noqa: F401
    import flightlog.client  # noqa: F401 - init(id=...) looks the run up
    import flightlog.redaction.userstrings  # noqa: F401
    import flightlog.runner.__main__  # noqa: F401
    import flightlog.runner.runner  # noqa: F401
    from flightlog.capture import CaptureConfig, CapturePipeline, LineMetrics  # noqa: F401
    from flightlog.config import Settings  # loaded once here, for every forked runner
    from flightlog.plugins import features  # (as above)
    from flightlog.redaction import redactor  # (as above)
    from flightlog.redaction.patterns import load_patterns  # noqa: F401
    from flightlog.resources import ProcessTreeSampler, ResourceSummary, SamplerThread  # noqa: F401
    from flightlog.resources._cgroupfs import cgroup_mounts  # (as above)
    from flightlog.runner.cli import run_cmd  # (as above)
    from flightlog.sdk.context import allowed_env, warm_interpreter_context  # (as above)
    from flightlog.sdk.hangs import hang_settings  # (as above)
    from flightlog.sdk.sink import load_sink_code  # (as above)

    try:
        features()  # the feature table every runner's run-start hooks use: its imports and entry points, once
    except Exception:  # noqa: BLE001 - each runner reports a broken table, as a runner started afresh does
        pass
    settings = Settings.from_env()
    warm_interpreter_context(settings.home)  # the run context every runner records, less its git state
    allowed_env(os.environ, settings.env_allow)  # its allow-list's pattern, compiled once
    redactor(settings.home)  # the redaction rules every runner applies to its records, compiled once
    cgroup_mounts()  # the mount table parsed once: a runner reads it again, and parses it only if it changed
    tempfile.gettempdir()  # found once (it writes a file to try each candidate): the hang watch's directory goes there
    try:
        hang_settings()  # the patterns its parsing uses, compiled once (re caches them)
    except FlightlogError:
        pass  # each runner reports a bad value, as a runner started afresh does
    try:
        load_sink_code(settings)
    except FlightlogError:
        pass  # each runner reports a store it cannot use, as a runner started afresh does
    try:  # click makes its help option on a command's first parse: here, once, not in every runner
        run_cmd.make_context("flightlog run", ["--", "true"])
    except Exception:  # noqa: BLE001 - each runner parses its own arguments and reports what is wrong
        pass


def _reap() -> list[tuple[int, int]]:
    ended: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended.append((pid, os.waitstatus_to_exitcode(status)))


def _reply(fd: int, line: str) -> None:
    try:
        os.write(fd, line.encode() + b"\n")
    except OSError:
        pass  # the controller is gone; its runners still finish and record their ends


def _wait_as_spare(
    request_fd: int, watch_fd: int, server_pid: int, die_with_parent: Any, server_fds: tuple[int, ...]
) -> NoReturn:
    """In a forked child: set up as a step's runner needs, wait for the request, then become
    ``flightlog run ARGS`` in the step's directory and environment, exactly as a runner started
    with ``python -m flightlog.runner`` would be, except that the server keeps watch for its
    keeper (``watch_fd``, ``reaper.watched_by``) instead of a process of its own."""
    from flightlog.runner.__main__ import main  # already loaded by _load_runner_code
    from flightlog.runner.reaper import watched_by  # (as above)
    from flightlog.runner.seed import discard as discard_seed  # (as above)
    from flightlog.runner.seed import plant as plant_seed  # (as above)

    code = 1
    try:
        os.setsid()
        if die_with_parent is not None:
            die_with_parent()
        if os.getppid() != server_pid:  # the server died before the line above: so do we
            os._exit(1)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in server_fds:
            os.close(fd)
        watched_by(watch_fd)
        plant_seed()  # the step's workload forked ahead, in a cgroup of its own
        _open_store_ahead()
        request = _read_all(request_fd)
        if not request:  # dismissed: the pipeline is over
            discard_seed()
            os._exit(0)
        _become_step(json.loads(request))
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            discard_seed()  # a seed the runner did not take (it ended before its attempt)
        except BaseException:  # noqa: BLE001 - its exit status is the runner's
            pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        atexit._run_exitfuncs()  # what the interpreter would run at exit: the SDK ships its last records
        os._exit(code)


def _open_store_ahead() -> None:
    """Open this process's connection to the store while waiting for the step: the runner's run
    lookup and its shipping use it (one connection per process and store, ``sdk.sink``) if the
    step's settings name the same store, as they do when the controller's environment names it."""
    from flightlog.config import Settings  # already loaded by _load_runner_code
    from flightlog.sdk.sink import open_sink  # (as above)

    try:
        settings = Settings.from_env()
        if settings.mode == "online":
            open_sink(settings)
    except Exception:  # noqa: BLE001 - the runner opens the store itself, and reports what fails
        pass


def _read_all(fd: int) -> bytes:
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    os.close(fd)
    return data


def _become_step(request: dict[str, Any]) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    if not request["verbose"]:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
    os.close(devnull)
    os.chdir(request["cwd"])
    _take_environment(request["env"])
    sys.argv = [RUNNER_MODULE, *request["args"]]


_TEMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")


def _take_environment(env: dict[str, str]) -> None:
    """Make ``env`` this process's environment, changing only what differs: a step's is the
    server's plus a few variables, and each change is a ``putenv`` or ``unsetenv``."""
    temp_before = [os.environ.get(name) for name in _TEMP_VARIABLES]
    for name in [name for name in os.environ if name not in env]:
        del os.environ[name]
    for name, value in env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value
    if [os.environ.get(name) for name in _TEMP_VARIABLES] != temp_before:
        tempfile.tempdir = None  # found again from the step's own variables (the server found its own)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
    os._exit(0)  # nothing to flush or finalise: skip the teardown of every module, which the controller waits for
