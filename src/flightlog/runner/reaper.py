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
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable

import psutil

__all__ = ["become_subreaper", "libc", "Reaper", "MARK"]

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
        try:
            children = psutil.Process(self._me).children()
        except psutil.Error:
            children = []
        for child in children:
            pid = child.pid
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
        try:
            descendants: Iterable[psutil.Process] = psutil.Process(self._me).children(recursive=True)
        except psutil.Error:
            descendants = []
        for proc in descendants:
            pid = proc.pid
            try:
                if proc.status() == psutil.STATUS_ZOMBIE:
                    if proc.ppid() == self._me and pid != self.workload:
                        self.adopted.add(pid)  # dead already: only to be reaped
                    continue
            except psutil.Error:
                continue
            if pid == self.workload or _marked(pid):
                pids.add(pid)
                if proc.ppid() == self._me and pid != self.workload:
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


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
