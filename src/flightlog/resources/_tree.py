"""The process tree, and counters over it that survive children exiting.

Why this is subtle: a process tree's CPU seconds and disk bytes are not the sum over the
processes alive right now. Children come and go between samples (a data loader worker, a
``subprocess.run``), and Linux hands a reaped child's totals to its parent (``cutime``/
``cstime`` for CPU, the parent's ``/proc/<pid>/io`` for I/O). So:

* each process's cumulative reading includes its reaped descendants (user + system +
  children_user + children_system; I/O counters already do);
* the tree total grows by each process's *increase* between samples, a process that appears
  counts in full if it was born after the previous sample (it is new work), and in nothing if
  it is older (it joined the tree, its past is not ours);
* when a process vanishes and its parent is still in the tree, the parent is about to report
  the child's final totals as its own increase; the part already counted (the child's last
  reading) is debited from the parent's next increases, so nothing is counted twice.

What is still lost: the work a child does between its last sample and its exit when it is not
reaped inside the tree (orphaned to init, or auto-reaped with SIGCHLD ignored).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import psutil

__all__ = ["Reading", "TreeAccumulator", "TreeWalker", "child_pids"]

# psutil's create_time derives from the boot time in whole seconds, so it can read up to ~1 s
# early; a process counts as "born since the last sample" within this slack.
_BIRTH_SLACK_S = 2.0
# A debit waits this many samples for the parent to report the reaped child, then lapses.
_DEBIT_SAMPLES = 2


def _task_children_supported() -> bool:
    return os.path.exists(f"/proc/self/task/{threading.get_native_id()}/children")


def _task_children(pid: int) -> list[int]:
    """Children of ``pid`` from /proc/<pid>/task/<tid>/children (one file per thread)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out.extend(int(x) for x in fh.read().split())
        except (OSError, ValueError):
            continue
    return out


_TASK_CHILDREN: bool | None = None


def child_pids(pid: int) -> list[int]:
    """The children of ``pid``: from its task files where the kernel has them (the cost grows
    with its children), else from psutil's scan of every process (it grows with the host's)."""
    global _TASK_CHILDREN
    if _TASK_CHILDREN is None:
        _TASK_CHILDREN = _task_children_supported()
    if _TASK_CHILDREN:
        return _task_children(pid)
    try:
        return [c.pid for c in psutil.Process(pid).children()]
    except psutil.Error:
        return []


class TreeWalker:
    """Root plus all descendants, refreshed per call, reusing psutil.Process objects.

    Reusing the objects matters: psutil caches per-process facts on them. Descendants are
    found through /proc/<pid>/task/<tid>/children where the kernel has it (cost grows with
    the tree), else through psutil's scan of every /proc/<pid>/stat (cost grows with the
    host's process count: ~1 ms per 70 processes).
    """

    def __init__(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self._cache: dict[int, psutil.Process] = {}
        self._task_children = _task_children_supported()

    def _reuse(self, proc: psutil.Process) -> psutil.Process:
        cached = self._cache.get(proc.pid)
        if cached is not None and cached == proc:  # same pid and creation time
            return cached
        self._cache[proc.pid] = proc
        return proc

    def _descendants_from_task_files(self) -> list[psutil.Process]:
        found: list[psutil.Process] = []
        seen = {self.root_pid}
        queue = [self.root_pid]
        while queue:
            for pid in _task_children(queue.pop()):
                if pid in seen:
                    continue
                seen.add(pid)
                queue.append(pid)
                proc = self._cache.get(pid)
                if proc is None:
                    try:
                        proc = psutil.Process(pid)
                    except psutil.Error:
                        continue
                found.append(proc)
        return found

    def processes(self) -> list[psutil.Process]:
        root = self._cache.get(self.root_pid)
        try:
            if root is None:
                root = psutil.Process(self.root_pid)
                self._cache[self.root_pid] = root
            elif not root.is_running():
                self._cache.clear()
                return []
            children = self._descendants_from_task_files() if self._task_children else root.children(recursive=True)
        except psutil.Error:
            self._cache.clear()
            return []
        found = [root] + [self._reuse(c) for c in children]
        alive = {p.pid for p in found}
        for pid in [pid for pid in self._cache if pid not in alive]:
            del self._cache[pid]
        return found


@dataclass(frozen=True)
class Reading:
    """One process's cumulative counters at one sample, with what identifies it."""

    ppid: int
    create_time: float
    values: tuple[float, ...]


class TreeAccumulator:
    """Monotonic tree-wide totals of cumulative per-process counters (see module docstring)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.totals = [0.0] * width
        self._last: dict[int, Reading] = {}
        self._last_time: float | None = None
        self._debits: dict[int, tuple[list[float], int]] = {}

    def last(self, pid: int) -> Reading | None:
        return self._last.get(pid)

    def update(self, readings: dict[int, Reading], now: float) -> list[float]:
        """Fold one sample's readings in (``now`` on the wall clock); returns the increase."""
        for pid, old in self._last.items():
            new = readings.get(pid)
            if new is not None and new.create_time == old.create_time:
                continue
            if old.ppid in readings:  # vanished under a living parent: expect it reported
                owed, _ = self._debits.get(old.ppid, ([0.0] * self.width, 0))
                self._debits[old.ppid] = (
                    [a + b for a, b in zip(owed, old.values, strict=True)],
                    _DEBIT_SAMPLES,
                )

        increase = [0.0] * self.width
        for pid, reading in readings.items():
            prev = self._last.get(pid)
            if prev is not None and prev.create_time == reading.create_time:
                delta = [max(0.0, a - b) for a, b in zip(reading.values, prev.values, strict=True)]
            elif self._last_time is not None and reading.create_time >= self._last_time - _BIRTH_SLACK_S:
                delta = list(reading.values)
            else:
                delta = [0.0] * self.width
            debit = self._debits.get(pid)
            if debit is not None:
                owed, _ = debit
                for i in range(self.width):
                    paid = min(delta[i], owed[i])
                    delta[i] -= paid
                    owed[i] -= paid
            for i in range(self.width):
                increase[i] += delta[i]

        # Debits lapse when the parent is gone or after a couple of samples.
        kept: dict[int, tuple[list[float], int]] = {}
        for pid, (owed, left) in self._debits.items():
            if pid in readings and left > 1 and any(owed):
                kept[pid] = (owed, left - 1)
        self._debits = kept

        self._last = readings
        self._last_time = now
        for i in range(self.width):
            self.totals[i] += increase[i]
        return increase
