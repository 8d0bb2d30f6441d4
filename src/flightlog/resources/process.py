"""One resource sample of a whole process tree: the workload, its children and theirs.

Why a tree: training rarely runs in one process — data loader workers, ``torchrun`` ranks,
a shell wrapping ``python`` — and the process that runs out of memory or burns the CPU is
often a grandchild. Every sample re-walks root + descendants (cheap: psutil objects are cached
across samples) and reads each process's counters once (``Process.oneshot``).

Per tree: cpu_percent, cpu_seconds, cpu_wait_seconds, rss_bytes, memory_percent, threads,
procs, open_files, disk_read_bytes / disk_write_bytes. Host-wide: net_sent_bytes / net_recv_bytes (per-process
network bytes need eBPF or a network namespace; Linux has no per-process counter), host memory.
Slow (every ``slow_interval`` seconds): workdir_bytes. The field reference is docs/resources.md.

A process that vanishes, turns zombie or denies access mid-sample is skipped (or its denied
fields count as zero); sampling never raises for that.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import psutil

from flightlog.resources._cgroupfs import find_memory_cgroup, read_cgroup_memory
from flightlog.resources._tree import Reading, TreeAccumulator, TreeWalker
from flightlog.resources.cgroup import MemoryLimit
from flightlog.resources.gpu import GpuProbe, open_gpu_probe
from flightlog.resources.workdir import disk_usage

__all__ = ["ProcessTreeSampler"]

_OPTIONAL = (psutil.AccessDenied, psutil.ZombieProcess)
# Below this many seconds between samples the 10 ms CPU clock makes a percentage meaningless.
_MIN_CPU_WINDOW_S = 0.05
# a process's scheduler statistics: CPU time, time waiting on a run queue, time slices (ns)
_SCHEDSTAT = "/proc/{pid}/schedstat"


class ProcessTreeSampler:
    """Samples ``root_pid`` and all its descendants; one JSON-able dict per `sample` call.

    ``workdir``: measured every ``slow_interval`` seconds (bounded walk, see `disk_usage`), the
    first time once ``slow_delay`` seconds have passed since construction: ``flightlog run``
    waits a second, so a workload that ends within milliseconds (a pipeline step) is not held
    up by a walk of a large directory that it had no time to change.
    ``gpu``: read GPUs through NVML when a driver is there (a note says why not otherwise).
    ``cgroup``: the `MemoryLimit` the workload runs in; without one, the cgroup fields report
    the root process's own cgroup (a container's limit), None where there is no limit.
    ``gpu_probe`` replaces the NVML probe (any `GpuProbe`; mainly for tests and embedding).
    """

    def __init__(
        self,
        root_pid: int,
        *,
        workdir: str | None = None,
        slow_interval: float = 30.0,
        gpu: bool = True,
        cgroup: MemoryLimit | None = None,
        gpu_probe: GpuProbe | None = None,
        workdir_max_entries: int = 30_000,
        slow_delay: float = 0.0,
    ) -> None:
        self.root_pid = root_pid
        self.workdir = os.path.abspath(workdir) if workdir is not None else None
        self.slow_interval = slow_interval
        self.cgroup = cgroup
        self.workdir_max_entries = workdir_max_entries
        self.cpu_count = psutil.cpu_count() or 1
        self._walker = TreeWalker(root_pid)
        self._counters = TreeAccumulator(3)  # cpu seconds, disk read bytes, disk write bytes
        self._waits: dict[int, tuple[float, float]] = {}  # pid → (start, run-queue wait seconds)
        self._cpu_wait: float | None = 0.0 if os.path.exists(_SCHEDSTAT.format(pid=root_pid)) else None
        self._gpu: GpuProbe = gpu_probe if gpu_probe is not None else open_gpu_probe(gpu)
        self._own_notes: list[str] = []
        self._own_cgroup = None if cgroup is not None else find_memory_cgroup(root_pid)
        self._last_slow: float | None = None
        self._slow_from = time.monotonic() + slow_delay
        self._last_mono: float | None = None
        self._lock = threading.Lock()
        # Baseline, so the first sample already has a CPU percentage (since construction).
        self._read_tree(time.time(), time.monotonic())

    @property
    def notes(self) -> list[str]:
        """Things the run should record once: why GPUs are not sampled, a missing workdir, ..."""
        return [*self._gpu.notes, *self._own_notes]

    def _note(self, text: str) -> None:
        if text not in self._own_notes:
            self._own_notes.append(text)

    def _read_tree(self, wall: float, mono: float) -> dict[str, Any]:
        readings: dict[int, Reading] = {}
        rss = threads = fds = 0
        for proc in self._walker.processes():
            try:
                with proc.oneshot():
                    cpu = proc.cpu_times()
                    ppid = proc.ppid()
                    try:
                        rss += proc.memory_info().rss
                        threads += proc.num_threads()
                        fds += proc.num_fds()
                    except _OPTIONAL:
                        pass
                    try:
                        io = proc.io_counters()
                        disk = (float(io.read_bytes), float(io.write_bytes))
                    except _OPTIONAL:
                        prev = self._counters.last(proc.pid)
                        disk = (prev.values[1], prev.values[2]) if prev else (0.0, 0.0)
            except psutil.NoSuchProcess:
                continue
            except psutil.AccessDenied:
                continue
            total_cpu = cpu.user + cpu.system + cpu.children_user + cpu.children_system
            readings[proc.pid] = Reading(ppid, proc.create_time(), (total_cpu, *disk))

        increase = self._counters.update(readings, wall)
        self._add_cpu_wait(readings)
        cpu_percent: float | None = None
        if self._last_mono is not None and mono - self._last_mono >= _MIN_CPU_WINDOW_S:
            cpu_percent = round(100.0 * increase[0] / (mono - self._last_mono), 2)
        self._last_mono = mono
        totals = self._counters.totals
        return {
            "cpu_percent": cpu_percent,
            "cpu_seconds": round(totals[0], 3),
            "cpu_wait_seconds": round(self._cpu_wait, 3) if self._cpu_wait is not None else None,
            "rss_bytes": rss,
            "threads": threads,
            "procs": len(readings),
            "open_files": fds,
            "disk_read_bytes": int(totals[1]),
            "disk_write_bytes": int(totals[2]),
            "pids": list(readings),
        }

    def _add_cpu_wait(self, readings: dict[int, Reading]) -> None:
        """Add the time the tree's processes were ready to run but waited for a CPU (the
        kernel's run-queue delay, ``/proc/PID/schedstat``), since the previous sample. It tells a
        process that is idle (waiting on input, I/O, a lock) from one that is starved (the
        machine's CPUs busy with other work): both use little CPU. A process's main thread only
        (the file of the thread group's leader), and only the wait between two samples that saw
        it: cheap, and enough to see contention. None where the kernel does not keep it."""
        if self._cpu_wait is None:
            return
        waits: dict[int, tuple[float, float]] = {}
        for pid, reading in readings.items():
            try:
                with open(_SCHEDSTAT.format(pid=pid), "rb") as f:
                    waited = int(f.read().split()[1]) / 1e9
            except (OSError, ValueError, IndexError):
                continue
            waits[pid] = (reading.create_time, waited)
            before = self._waits.get(pid)
            if before is not None and before[0] == reading.create_time:
                self._cpu_wait += max(0.0, waited - before[1])
        self._waits = waits

    def _cgroup_fields(self) -> dict[str, Any]:
        if self.cgroup is not None:
            return {
                "cgroup_memory_usage": self.cgroup.usage_bytes(),
                "cgroup_memory_limit": self.cgroup.limit_bytes,
                "cgroup_oom_kills": self.cgroup.oom_kills(),
            }
        usage, limit = read_cgroup_memory(self._own_cgroup)
        return {"cgroup_memory_usage": usage, "cgroup_memory_limit": limit}

    def _slow_due(self, now: float) -> bool:
        if self._last_slow is None:
            return time.monotonic() >= self._slow_from
        return now - self._last_slow >= self.slow_interval

    def _slow_fields(self) -> dict[str, Any]:
        if self.workdir is None:
            return {}
        if not os.path.isdir(self.workdir):
            self._note(f"workdir {self.workdir} not found; its disk use is not sampled")
            return {}
        usage = disk_usage(self.workdir, max_entries=self.workdir_max_entries)
        return {"workdir_bytes": usage.bytes, "workdir_bytes_partial": usage.partial}

    def sample(self, now: float | None = None) -> dict[str, Any]:
        """Read the tree, the host, the cgroup and the GPUs; ``now`` is the sample's wall time.

        Safe to call from several threads (the sampler thread and a final look at the end):
        calls are serialized, since each one advances the CPU and I/O bookkeeping.
        """
        with self._lock:
            return self._sample(now)

    def _sample(self, now: float | None) -> dict[str, Any]:
        wall = time.time() if now is None else now
        # The tree's bookkeeping compares process start times, so it runs on the real clock
        # even when the caller stamps the sample with its own ``now``.
        tree = self._read_tree(time.time(), time.monotonic())
        pids = tree.pop("pids")
        vm = psutil.virtual_memory()
        net = psutil.net_io_counters()
        sample: dict[str, Any] = {
            "time": wall,
            **tree,
            "cpu_count": self.cpu_count,
            "memory_percent": round(100.0 * tree["rss_bytes"] / vm.total, 3) if vm.total else None,
            "net_sent_bytes": net.bytes_sent if net is not None else None,
            "net_recv_bytes": net.bytes_recv if net is not None else None,
            "host_memory_total": vm.total,
            "host_memory_available": vm.available,
            **self._cgroup_fields(),
            "gpus": self._gpu.read(pids),
        }
        if self._slow_due(wall):
            self._last_slow = wall
            sample.update(self._slow_fields())
        return sample
