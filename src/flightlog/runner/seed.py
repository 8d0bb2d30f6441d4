"""A workload process started ahead of its step: what a runner forked by the pipeline's warm
runner spawns its workload from.

Why: spawning the workload with ``subprocess.Popen`` and a ``preexec_fn`` (the death signal,
the move into the attempt's cgroup) puts a fork of a loaded interpreter and the cgroup move on
every step's path, and a move into a cgroup v1 waits for an RCU grace period (7–15 ms here).
A spare runner waits for its request anyway (``pipeline/executors/forkserver.py``): while it
does, :func:`plant` forks the *seed* of its workload, which sets its own process group and death
signal, joins a cgroup of its own, closes every descriptor it inherited and waits on a pipe. The
step's request then costs the seed one ``exec``: :func:`take` gives the runner the seed, whose
cgroup is the attempt's, and :meth:`Seed.spawn` sends the command, its environment and
directory. The cgroup keeps the seed's name (``flightlog-seed-SERVER-SPARE``): renaming it
after the run waits for the kernel's cgroup lock, which the next spare's seed holds while it
moves into its own cgroup (~4 ms a step here); nothing records a tree cgroup's name.

What the workload gets is what ``Popen(..., process_group=0, preexec_fn=...)`` gave it: its own
process group, SIGKILL when the runner dies, its cgroup joined before it runs a line, stdin from
``/dev/null`` (the forked runner's own), stdout and stderr on pipes the runner reads, every
other descriptor closed, SIGPIPE and SIGXFSZ at their defaults, the runner as its parent; an exec
that fails raises the same ``OSError`` in the runner. Only a step without a memory limit uses a
seed (a limit's cgroup is made with its size, ``--memory-limit-mode rlimit`` needs its
``preexec_fn``); retries, and every runner not forked from the warm runner, spawn as before.

A seed no command comes to leaves nothing behind: dismissed (the pipeline is over, or the step
has a memory limit) or orphaned (its runner died: SIGTERM, its death signal while it waits, or
its pipe's end of file), it moves back to the cgroup it came from, removes its own and exits; a
runner killed before its request has the warm runner's keeper kill it, and the controller
removes what a warm runner killed with its spares left (:func:`remove_leftovers`).
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import IO, Any, NoReturn

from flightlog.resources._cgroupfs import memory_cgroup_dir
from flightlog.resources.cgroup import CgroupUnavailable, TreeCgroup, cgroup_name, create_tree_cgroup
from flightlog.runner import reaper
from flightlog.runner.reaper import death_signal

__all__ = ["Seed", "SeededProcess", "plant", "take", "discard", "remove_leftovers"]

_SEED_MARK = "FLIGHTLOG_SEED_OF"  # a mark nothing carries: the keeper of a seed kills its cgroup's pids only


@dataclass
class SeededProcess:
    """The runner's handle on a workload spawned from a seed: what the runner uses of a
    ``subprocess.Popen`` (pid, its output pipes, ``poll`` and ``wait``)."""

    args: list[str]
    pid: int
    stdout: IO[bytes] | None
    stderr: IO[bytes] | None
    returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped already (a signal handler's poll): as Popen says it
                return self._reaped()
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:
                return self._reaped()
            if self.returncode is None:
                self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode
        code = self.poll()
        if code is not None:
            return code
        try:
            exit_fd = os.pidfd_open(self.pid)
        except OSError:
            exit_fd = None
        try:
            if exit_fd is not None:
                select.select([exit_fd], [], [], timeout)
            else:
                _sleep_poll(self, timeout)
        finally:
            if exit_fd is not None:
                os.close(exit_fd)
        code = self.poll()
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return code

    def _reaped(self) -> int:
        if self.returncode is None:
            self.returncode = 0  # what Popen says of a child reaped elsewhere (ECHILD)
        return self.returncode


def _sleep_poll(process: SeededProcess, timeout: float) -> None:
    import time

    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(min(0.005, max(0.0, deadline - time.monotonic())))


@dataclass
class Seed:
    """A seed waiting for its command, and the runner's ends of its pipes."""

    pid: int
    tree: Any  # resources.cgroup.TreeCgroup: the cgroup the seed joined
    command_fd: int  # write end: the command to exec
    error_fd: int  # read end: end of file at exec (close-on-exec), the errno of a failed one
    stdout_fd: int
    stderr_fd: int

    def spawn(self, args: list[str], env: dict[str, str]) -> SeededProcess:
        """Have the seed exec ``args`` with ``env`` in this process's working directory; raises
        the ``OSError`` of an exec that failed, as ``Popen`` does."""
        request = json.dumps({"args": list(args), "env": env, "cwd": os.getcwd()}).encode()
        try:
            _write_all(self.command_fd, request)
        except OSError:
            pass  # the seed died (killed): its end of file below says so
        finally:
            os.close(self.command_fd)
        failure = _read_all(self.error_fd)  # end of file at the exec (as Popen's, a seed killed first looks started)
        if failure:
            for fd in (self.stdout_fd, self.stderr_fd):
                os.close(fd)
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            code = int(failure) if failure.isdigit() else errno.EINVAL
            raise OSError(code, os.strerror(code), args[0] if args else None)
        return SeededProcess(list(args), self.pid, open(self.stdout_fd, "rb"), open(self.stderr_fd, "rb"))

    def dismiss(self, wait: bool = True) -> None:
        """Not wanted (a step with a memory limit, or no step at all): the seed reads the end of
        its pipe, leaves and removes its cgroup, and exits. ``wait=False`` for a step that goes
        on: its leaving waits for the kernel (an RCU grace period on cgroup v1), the step does
        not; it is reaped with this process."""
        for fd in (self.command_fd, self.error_fd, self.stdout_fd, self.stderr_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        if not wait:
            return
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        self.tree.close()  # removed by the seed already, unless it could not


_planted: Seed | None = None


def plant() -> None:
    """In a spare runner waiting for its request: fork the seed of its workload (see the
    module's text). Where no cgroup can be made, or the fork fails, there is none and the runner
    spawns its workload as before."""
    global _planted
    if not sys.platform.startswith("linux"):
        return
    # while it waits, the seed gets SIGTERM when this process dies, and then removes its cgroup;
    # from its exec on, SIGKILL, as a workload gets when its runner dies
    deaths = (death_signal(signal.SIGTERM), death_signal())
    _planted = _fork_seed(*deaths)
    if _planted is not None:
        _watch_seed(_planted.tree.path)


def _fork_seed(waiting_death: Any, workload_death: Any) -> Seed | None:
    try:
        tree = create_tree_cgroup(_seed_name(os.getppid(), os.getpid()))
    except (CgroupUnavailable, OSError):
        return None
    fds: list[int] = []
    try:
        command_read, command_write = os.pipe()
        error_read, error_write = os.pipe()
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        fds = [command_read, command_write, error_read, error_write, out_read, out_write, err_read, err_write]
        pid = os.fork()
    except OSError:
        for fd in fds:
            os.close(fd)
        tree.close()
        return None
    if pid == 0:
        _grow(command_read, error_write, out_write, err_write, tree.path, waiting_death, workload_death)
    for fd in (command_read, error_write, out_write, err_write):
        os.close(fd)
    return Seed(pid, tree, command_write, error_read, out_read, err_read)


def _seed_name(server_pid: int, spare_pid: int | str) -> str:
    return f"seed-{server_pid}-{spare_pid}"


def remove_leftovers(server_pid: int) -> None:
    """Remove the cgroups of seeds whose spare died with its warm runner (killed, with no one to
    dismiss them): each seed died with its spare, so they are empty. Never raises."""
    if not sys.platform.startswith("linux"):
        return
    try:
        found = memory_cgroup_dir()
        if found is None:
            return
        base = found[1]
        prefix = cgroup_name(_seed_name(server_pid, ""))
        for name in os.listdir(base):
            if name.startswith(prefix):
                TreeCgroup(os.path.join(base, name)).close()
    except Exception:  # noqa: BLE001 - a leftover empty cgroup is no reason to fail a pipeline
        pass


def take() -> Seed | None:
    """The seed planted in this process, once: the first attempt's (None where there is none)."""
    global _planted
    seed, _planted = _planted, None
    return seed


def discard(wait: bool = True) -> None:
    """A seed never taken (the runner ended before its attempt, or used none) is dismissed."""
    seed = take()
    if seed is not None:
        seed.dismiss(wait)
        _stand_down()


def _watch_seed(path: str) -> None:
    """Should this runner die before its attempt, the warm runner's keeper removes the seed and
    its cgroup (a mark that no process carries: the cgroup's pids only)."""
    if reaper._watcher is not None and reaper._watcher[1] == os.getpid():
        args = [os.path.join(path, "cgroup.procs"), f"{_SEED_MARK}={os.getpid()}"]
        try:
            os.write(reaper._watcher[0], json.dumps(args).encode() + b"\n")
        except OSError:
            pass


def _stand_down() -> None:
    if reaper._watcher is not None and reaper._watcher[1] == os.getpid():
        try:
            os.write(reaper._watcher[0], reaper._STOOD_DOWN)
        except OSError:
            pass


def _grow(
    command_fd: int, error_fd: int, out_fd: int, err_fd: int, cgroup: str, waiting_death: Any, workload_death: Any
) -> NoReturn:
    """The seed, in the forked child: set up, wait for the command, exec it. Never returns."""
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGTERM, lambda signum, frame: _wither(cgroup, died_of=signal.SIGTERM))
        if waiting_death is not None:
            waiting_death()  # SIGTERM when the runner dies (SIGKILL at once if it already has)
        _write_pid(os.path.join(cgroup, "cgroup.procs"))
        command_fd, error_fd, out_fd, err_fd = (_above_stdio(fd) for fd in (command_fd, error_fd, out_fd, err_fd))
        _close_all_but((command_fd, error_fd, out_fd, err_fd))
        request = _read_all(command_fd)
        if not request:  # dismissed, or the runner died (its end of the pipe closes before its death signal comes)
            _wither(cgroup)
        if workload_death is not None:
            workload_death()  # SIGKILL when the runner dies, as Popen's child had it
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        spec = json.loads(request)
        os.chdir(spec["cwd"])
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        for fd in (devnull, out_fd, err_fd):
            os.close(fd)
        for name in ("SIGPIPE", "SIGXFSZ"):  # as Popen's restore_signals: the workload starts with the defaults
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), signal.SIG_DFL)
        args = spec["args"]
        os.execvpe(args[0], args, spec["env"])
    except OSError as exc:
        try:
            os.write(error_fd, str(exc.errno or errno.EINVAL).encode())
        except (OSError, UnboundLocalError):
            pass
    except BaseException:  # noqa: BLE001 - nothing of the runner may run in the seed
        pass
    os._exit(127)


def _wither(cgroup: str, died_of: int | None = None) -> NoReturn:
    """No command will come (dismissed, the runner died, or SIGTERM): leave the cgroup for the
    one it was made in, remove it, and exit (of the signal, if one came)."""
    try:
        _write_pid(os.path.join(os.path.dirname(cgroup), "cgroup.procs"))
        os.rmdir(cgroup)
    except OSError:
        pass  # the runner, or the controller's `remove_leftovers`, removes it once this seed is gone
    if died_of is not None:
        signal.signal(died_of, signal.SIG_DFL)
        os.kill(os.getpid(), died_of)
    os._exit(0 if died_of is None else 128 + died_of)


def _write_pid(procs: str) -> None:
    fd = os.open(procs, os.O_WRONLY)
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)


def _above_stdio(fd: int) -> int:
    """``fd`` itself, or a copy at 3 or above: 0, 1 and 2 are about to be replaced."""
    import fcntl

    return fd if fd > 2 else fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


def _close_all_but(keep: tuple[int, ...]) -> None:
    """Close every descriptor this process inherited from the runner except ``keep`` (and 0–2,
    replaced at exec): the store's connection, the warm runner's pipes."""
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, _max_fd())


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (OSError, ValueError):
        return 65536


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_all(fd: int) -> bytes:
    data = b""
    try:
        while chunk := os.read(fd, 65536):
            data += chunk
    finally:
        os.close(fd)
    return data
