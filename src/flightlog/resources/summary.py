"""Peaks and averages of a run's resource samples, kept as running sums.

Why running sums rather than the samples: the summary is written on the run when it ends and
must not cost memory proportional to its length (a week-long run at 1 s is 600,000 samples).
It is mergeable (`merge`), so attempts, ranks or shipped batches can be summarized separately
and combined; `to_dict` renders flat snake_case keys that store and compare easily.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ResourceSummary"]

# Cumulative counters whose run total is last - first.
_COUNTERS = (
    "cpu_seconds",
    "disk_read_bytes",
    "disk_write_bytes",
    "net_sent_bytes",
    "net_recv_bytes",
)


@dataclass
class _Stat:
    """Count, sum and max of one gauge; None values are not observations."""

    count: int = 0
    total: float = 0.0
    peak: float | None = None

    def add(self, value: Any) -> None:
        if value is None or isinstance(value, bool):
            return
        self.count += 1
        self.total += value
        self.peak = value if self.peak is None or value > self.peak else self.peak

    def merge(self, other: _Stat) -> None:
        self.count += other.count
        self.total += other.total
        if other.peak is not None and (self.peak is None or other.peak > self.peak):
            self.peak = other.peak

    @property
    def avg(self) -> float | None:
        return self.total / self.count if self.count else None


@dataclass
class _Gpu:
    name: str | None = None
    uuid: str | None = None
    memory_total_bytes: int | None = None
    stats: dict[str, _Stat] = field(default_factory=dict)

    def stat(self, key: str) -> _Stat:
        return self.stats.setdefault(key, _Stat())


_GAUGES = (
    "cpu_percent",
    "rss_bytes",
    "memory_percent",
    "threads",
    "procs",
    "open_files",
    "workdir_bytes",
    "cgroup_memory_usage",
)
_GPU_GAUGES = (
    "utilization_percent",
    "memory_used_bytes",
    "power_watts",
    "temperature_c",
    "process_memory_bytes",
)


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


class ResourceSummary:
    """Add samples as they come (`add`), combine summaries (`merge`), render (`to_dict`).

    Samples are added in time order. Counters (CPU seconds, disk and network bytes) total
    the growth between consecutive samples, so a summary of several attempts or ranks, each
    sampled by its own sampler, is the sum of theirs.
    """

    def __init__(self) -> None:
        self.samples = 0
        self.start: float | None = None
        self.end: float | None = None
        self._gauges: dict[str, _Stat] = {k: _Stat() for k in _GAUGES}
        self._prev: dict[str, float] = {}  # counter -> value in the previous sample
        self._totals: dict[str, float] = {}
        self._gpus: dict[int, _Gpu] = {}
        self.cgroup_memory_limit: int | None = None
        self.cgroup_oom_kills = 0
        self.workdir_partial = False

    def add(self, sample: Mapping[str, Any]) -> None:
        t = float(sample.get("time") or 0.0)
        self.samples += 1
        self.start = t if self.start is None else min(self.start, t)
        self.end = t if self.end is None else max(self.end, t)
        for key, stat in self._gauges.items():
            stat.add(sample.get(key))
        for key in _COUNTERS:
            value = sample.get(key)
            if value is None:
                continue
            prev = self._prev.get(key)
            # A counter that goes backwards was restarted (a new sampler): count from there.
            grown = 0.0 if prev is None or value < prev else value - prev
            self._totals[key] = self._totals.get(key, 0.0) + grown
            self._prev[key] = value
        if sample.get("cgroup_memory_limit") is not None:
            self.cgroup_memory_limit = sample["cgroup_memory_limit"]
        self.cgroup_oom_kills = max(self.cgroup_oom_kills, sample.get("cgroup_oom_kills") or 0)
        self.workdir_partial = self.workdir_partial or bool(sample.get("workdir_bytes_partial"))
        for gpu in sample.get("gpus") or ():
            entry = self._gpus.setdefault(int(gpu["index"]), _Gpu())
            entry.name = gpu.get("name") or entry.name
            entry.uuid = gpu.get("uuid") or entry.uuid
            entry.memory_total_bytes = gpu.get("memory_total_bytes") or entry.memory_total_bytes
            for key in _GPU_GAUGES:
                entry.stat(key).add(gpu.get(key))

    def merge(self, other: ResourceSummary) -> ResourceSummary:
        """Fold ``other`` in (e.g. another attempt or rank); returns self."""
        self.samples += other.samples
        for attr, pick in (("start", min), ("end", max)):
            mine, theirs = getattr(self, attr), getattr(other, attr)
            setattr(
                self,
                attr,
                theirs if mine is None else mine if theirs is None else pick(mine, theirs),
            )
        for key, stat in other._gauges.items():
            self._gauges[key].merge(stat)
        for key, total in other._totals.items():
            self._totals[key] = self._totals.get(key, 0.0) + total
        self.cgroup_memory_limit = other.cgroup_memory_limit or self.cgroup_memory_limit
        self.cgroup_oom_kills = max(self.cgroup_oom_kills, other.cgroup_oom_kills)
        self.workdir_partial = self.workdir_partial or other.workdir_partial
        for index, gpu in other._gpus.items():
            mine_gpu = self._gpus.setdefault(index, _Gpu())
            mine_gpu.name = mine_gpu.name or gpu.name
            mine_gpu.uuid = mine_gpu.uuid or gpu.uuid
            mine_gpu.memory_total_bytes = mine_gpu.memory_total_bytes or gpu.memory_total_bytes
            for key, stat in gpu.stats.items():
                mine_gpu.stat(key).merge(stat)
        return self

    def _total(self, key: str) -> float | None:
        return self._totals.get(key)

    def to_dict(self) -> dict[str, Any]:
        """Flat peaks, averages and totals; None where no sample carried the field."""
        g = self._gauges
        duration = None if self.start is None or self.end is None else self.end - self.start
        cpu_seconds = self._total("cpu_seconds")
        out: dict[str, Any] = {
            "samples": self.samples,
            "start": self.start,
            "end": self.end,
            "duration_s": _r(duration, 3),
            "cpu_percent_avg": _r(g["cpu_percent"].avg),
            "cpu_percent_max": _r(g["cpu_percent"].peak),
            "cpu_seconds": _r(cpu_seconds, 3),
            "rss_bytes_avg": None if g["rss_bytes"].avg is None else int(g["rss_bytes"].avg),
            "rss_bytes_max": g["rss_bytes"].peak,
            "memory_percent_max": _r(g["memory_percent"].peak, 3),
            "threads_max": g["threads"].peak,
            "procs_max": g["procs"].peak,
            "open_files_max": g["open_files"].peak,
        }
        for key in _COUNTERS[1:]:
            total = self._total(key)
            out[key] = None if total is None else int(total)
        out.update(
            {
                "workdir_bytes_max": g["workdir_bytes"].peak,
                "workdir_bytes_partial": self.workdir_partial,
                "cgroup_memory_max": g["cgroup_memory_usage"].peak,
                "cgroup_memory_limit": self.cgroup_memory_limit,
                "cgroup_oom_kills": self.cgroup_oom_kills,
                "gpus": [self._gpu_dict(i, gpu) for i, gpu in sorted(self._gpus.items())],
            }
        )
        return out

    @staticmethod
    def _gpu_dict(index: int, gpu: _Gpu) -> dict[str, Any]:
        s = gpu.stat
        return {
            "index": index,
            "name": gpu.name,
            "uuid": gpu.uuid,
            "memory_total_bytes": gpu.memory_total_bytes,
            "utilization_percent_avg": _r(s("utilization_percent").avg),
            "utilization_percent_max": s("utilization_percent").peak,
            "memory_used_bytes_max": s("memory_used_bytes").peak,
            "process_memory_bytes_max": s("process_memory_bytes").peak,
            "power_watts_avg": _r(s("power_watts").avg),
            "power_watts_max": s("power_watts").peak,
            "temperature_c_max": s("temperature_c").peak,
        }
