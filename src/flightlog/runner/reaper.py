"""Processes the workload leaves behind: found, killed and reaped, whatever session they joined.

Killing the workload's process group is not enough: a daemon started with ``setsid`` (or
``nohup … &`` from a shell that then exits, or a double fork) has a process group and session
of its own, and when its parent exits the kernel hands it to init, out of reach. So the runner
makes itself a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): orphans of the
workload's tree are re-parented to the runner instead of init, and stay its descendants. When
an attempt ends, every descendant that belongs to the workload is killed — the workload's
process group, everything in its memory cgroup when there is one, and every descendant whose
environment carries the runner's mark (``FLIGHTLOG_CAPTURED=1``, inherited by everything the
workload starts) or cannot be read. Adopted orphans that exit while the workload runs are
reaped as they go, so they do not pile up as zombies.

Where the prctl is not available (not Linux), only the process group and the cgroup are
killed, as before.

The runner itself may die without a chance to clean up (``kill -9``, the OOM killer). Then
the kernel kills the workload (``PR_SET_PDEATHSIG``, asked for in the child before exec), and a
:class:`Keeper` — a tiny process of its own session, started before the workload, that waits
on a pipe only the runner holds — sees the pipe close and kills what is left: everything in
the workload's cgroup (which holds even ``setsid env -i`` daemons), and every process that
carries this attempt's environment.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable

import psutil

from flightlog.resources import child_pids

__all__ = [
    "become_subreaper",
    "death_signal",
    "libc",
    "Keeper",
    "KeptWatch",
    "Reaper",
    "MARK",
    "watched_by",
    "release_keeper",
]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
#: The environment entry every process of a workload inherits from ``flightlog run``.
MARK = ("FLIGHTLOG_CAPTURED", "1")
_MARK_BYTES = f"{MARK[0]}={MARK[1]}".encode()


def libc() -> ctypes.CDLL:
    """The C library, for prctl (here, and for the pipeline executor's death signal)."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)  # glibc's name: no `ldconfig -p` run (~10 ms) to find it
    except OSError:
        return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants; False where that is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def death_signal(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A preexec step: the child gets ``sig`` when the thread that forked it dies (the runner's
    main thread, which lives as long as the runner). None where unsupported (not Linux).

    Parent pid and prctl are looked up before the fork; in the child it is two syscalls, and
    a parent that died before the prctl took effect is noticed (the child kills itself)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = libc().prctl
    except (OSError, TypeError, AttributeError):
        return None
    parent = os.getpid()

    def setup() -> None:
        prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return setup


# The keeper runs as `python -I -S -c KEEPER procs run_id attempt`: no site, no flightlog import
# (a few ms to start), nothing but this file's text. It reads its stdin, the read end of a pipe
# whose only write end the runner holds: a byte means "the runner cleaned up, stand down"; end
# of file means the runner died, and the keeper kills what is left, for up to 10 s.
KEEPER = r"""
import os, signal, sys, time
procs, marks = sys.argv[1], [m.encode() for m in sys.argv[2:]]
try:
    said = os.read(0, 1)
except OSError:
    said = b""
if said:
    sys.exit(0)
me = os.getpid()

def leftovers():
    pids = set()
    if procs:
        try:
            with open(procs) as f:
                pids.update(int(x) for x in f.read().split())
        except (OSError, ValueError):
            pass
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/" + name + "/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if all(m in env for m in marks):
                pids.add(int(name))
    pids.discard(me)
    return pids

deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    left = leftovers()
    if not left:
        break
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.05)
if procs:
    for _ in range(100):
        try:
            os.rmdir(os.path.dirname(procs))
            break
        except FileNotFoundError:
            break
        except OSError:
            time.sleep(0.02)
"""


class Keeper:
    """Takes a workload's tree down should its runner die first (see the module's text).

    ``start`` before the workload is spawned, ``stand_down`` once the runner has swept up
    itself. The keeper has a session of its own (a Ctrl-C at the terminal does not reach it),
    an environment without the workload's mark, and no limit or cgroup of the workload's.

    A runner forked from the pipeline's warm runner is watched by that process instead
    (:func:`watched_by`): ``start`` and ``stand_down`` are a line each on a pipe to it, and it
    starts a keeper only for a runner that died without standing down (:func:`release_keeper`).
    A process of its own per step, forked or started afresh, cost each step a few milliseconds
    of CPU for a keeper that nearly always just stands down.
    """

    def __init__(self, proc: subprocess.Popen[bytes] | None, fd: int) -> None:
        self.proc, self._fd = proc, fd  # proc None: the warm runner keeps watch (its pipe stays open)

    @classmethod
    def start(cls, procs: str | None, marks: Iterable[str]) -> Keeper:
        """A keeper killing, on the runner's death, the pids listed in ``procs`` (a cgroup's
        ``cgroup.procs``, or None) and every process whose environment holds all of ``marks``."""
        global _watcher
        args = [procs or "", *marks]
        if _watcher is not None and _watcher[1] == os.getpid():
            try:
                os.write(_watcher[0], json.dumps(args).encode() + b"\n")
                return cls(None, _watcher[0])
            except OSError:  # the warm runner is gone: a keeper of this attempt's own, as usual
                _watcher = None
        read_fd, write_fd = os.pipe()  # both ends non-inheritable: the workload never holds the write end
        try:
            proc = _keeper_process(args, stdin=read_fd)
        except BaseException:
            os.close(write_fd)
            raise
        finally:
            os.close(read_fd)
        return cls(proc, write_fd)

    def stand_down(self, timeout: float = 2.0) -> None:
        """The runner swept up itself: tell the keeper to exit without killing anything."""
        if self.proc is None:  # the warm runner: forget this attempt (the pipe serves the next one)
            try:
                os.write(self._fd, _STOOD_DOWN)
            except OSError:
                pass
            return
        try:
            os.write(self._fd, b"x")
        except OSError:
            pass
        finally:
            os.close(self._fd)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_watcher: tuple[int, int] | None = None  # (the pipe to the warm runner keeping watch, the pid it serves)
_STOOD_DOWN = b"-\n"


def watched_by(fd: int) -> None:
    """In a runner forked by the pipeline's warm runner: ``fd`` is the write end of a pipe that
    process reads, keeping watch over this runner's attempts (``Keeper.start`` writes what to
    watch, ``stand_down`` that it is over). Only this process holds it, so the warm runner reads
    its end of file when the runner dies, however it dies."""
    global _watcher
    _watcher = (fd, os.getpid())


class KeptWatch:
    """The warm runner's side of one runner's pipe: what its current attempt asked to be watched."""

    def __init__(self) -> None:
        self.watching: list[str] | None = None
        self._buffer = b""

    def feed(self, data: bytes) -> None:
        *lines, self._buffer = (self._buffer + data).split(b"\n")
        for line in lines:
            if line == _STOOD_DOWN.strip():
                self.watching = None
            elif line:
                try:
                    args = json.loads(line)
                except ValueError:
                    continue
                if isinstance(args, list) and args and all(isinstance(a, str) for a in args):
                    self.watching = args

    def runner_gone(self) -> None:
        """End of file: the runner exited. Had its attempt not stood down, a keeper takes what is left."""
        if self.watching is not None:
            release_keeper(self.watching)
            self.watching = None


def release_keeper(args: list[str]) -> None:
    """A keeper for a runner already dead: its stdin at end of file at once, it kills what the
    attempt left (``args``: the cgroup's ``cgroup.procs`` or "", then the marks) and exits. Not
    waited for: the warm runner reaps every child of its own as it ends."""
    devnull = os.devnull
    try:
        os.posix_spawn(
            sys.executable,
            [sys.executable, "-I", "-S", "-c", KEEPER, *args],
            {"PATH": os.environ.get("PATH", os.defpath)},
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_DUP2, 1, 2),
            ],
            setsid=True,
        )
    except OSError:
        pass  # nothing more can be done from here: the workload got the runner's death signal


def _keeper_process(args: list[str], stdin: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", KEEPER, *args],
        stdin=stdin,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        start_new_session=True,
        env={"PATH": os.environ.get("PATH", os.defpath)},
    )


def _marked(pid: int) -> bool:
    """Whether ``pid`` belongs to a workload: it carries the mark, or its environment cannot be
    read (another user after a setuid: a descendant the runner did not start itself)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            entries = fh.read().split(b"\0")
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return _MARK_BYTES in entries


class Reaper:
    """The leftovers of one workload: ``adopt`` as it runs, ``sweep`` when it has ended.

    ``workload`` is the pid of the process ``subprocess`` started (its Popen reaps it; this
    class never does). ``cgroup_pids`` lists the pids in the workload's cgroup, when it has one.
    """

    def __init__(self, workload: int, cgroup_pids: Callable[[], list[int]] | None = None) -> None:
        self.workload = workload
        self._cgroup_pids = cgroup_pids
        self._me = os.getpid()
        self.adopted: set[int] = set()  # orphans re-parented to us: ours to reap
        self.signalled: set[int] = set()  # leftovers sent SIGTERM or SIGKILL

    # --- while the workload runs ----------------------------------------------------------

    def adopt(self) -> None:
        """Note the workload's orphans now re-parented to us, and reap those that exited."""
        for pid in child_pids(self._me):
            if pid != self.workload and pid not in self.adopted and _marked(pid):
                self.adopted.add(pid)
        self._reap(block=False)

    # --- at the end -----------------------------------------------------------------------

    def terminate(self) -> None:
        """Ask what is left to stop (SIGTERM), once: a daemon may want to flush or clean up."""
        _kill_group(self.workload, signal.SIGTERM)
        for pid in self._leftovers():
            self._signal(pid, signal.SIGTERM)

    def sweep(self, timeout: float = 5.0) -> int:
        """Kill what is left of the workload (SIGKILL) and reap it; the number of leftover
        processes signalled, here or by ``terminate``.

        Killing goes on until nothing is left or ``timeout`` passes: a process may fork while
        it is being killed, and grandchildren re-parent to us one generation at a time."""
        deadline = time.monotonic() + timeout
        while True:
            left = self._leftovers()
            for pid in left:
                self._signal(pid, signal.SIGKILL)
            _kill_group(self.workload, signal.SIGKILL)
            if not left:
                break
            self._reap(block=False)
            if time.monotonic() >= deadline:
                break
            time.sleep(0.01)
        self._reap(block=False)
        self.signalled.discard(self.workload)
        return len(self.signalled)

    def _signal(self, pid: int, sig: int) -> None:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        self.signalled.add(pid)

    def _leftovers(self) -> list[int]:
        pids: set[int] = set()
        if self._cgroup_pids is not None:
            try:
                pids.update(self._cgroup_pids())
            except Exception:  # a cgroup gone already: nothing in it
                pass
        for pid, parent in _descendants(self._me):
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    if parent == self._me and pid != self.workload:
                        self.adopted.add(pid)  # dead already: only to be reaped
                    continue
            except psutil.Error:
                continue
            if pid == self.workload or _marked(pid):
                pids.add(pid)
                if parent == self._me and pid != self.workload:
                    self.adopted.add(pid)
        pids.discard(self._me)
        return sorted(pids)

    def _reap(self, block: bool) -> None:
        for pid in list(self.adopted):
            try:
                done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                self.adopted.discard(pid)
                continue
            except OSError:
                continue
            if done:
                self.adopted.discard(pid)


def _descendants(root: int) -> list[tuple[int, int]]:
    """(pid, parent) of every descendant of ``root``, found through the children of each
    (resources.child_pids: no scan of every process on the host where the kernel says)."""
    out: list[tuple[int, int]] = []
    seen = {root}
    queue = [root]
    while queue:
        parent = queue.pop()
        for pid in child_pids(parent):
            if pid not in seen:
                seen.add(pid)
                queue.append(pid)
                out.append((pid, parent))
    return out


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
