"""Series a threshold can watch: a metric by name, or a resource series from the samples.

Resource samples (docs/resources.md) become named series here, from the sample fields each one
needs (the live feed asks SQLite for just those fields; the replay reads the samples). GPU
series have one series per device, labelled ``gpu`` (its index); only the devices the run's
process tree holds memory on are watched, or every device when the driver does not report
per-process memory.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flightlog.alerts.delta import Column, SegmentKey

__all__ = [
    "RESOURCE_SERIES",
    "HOST",
    "GPU",
    "is_resource_series",
    "fields_of",
    "resource_columns",
    "combine",
    "SampleTable",
]

Combine = Callable[[Sequence[np.ndarray]], np.ndarray]


def _one(a: Sequence[np.ndarray]) -> np.ndarray:
    return a[0]


def _percent(a: Sequence[np.ndarray]) -> np.ndarray:
    return 100.0 * a[0] / a[1]


def _per_core(a: Sequence[np.ndarray]) -> np.ndarray:
    return a[0] / a[1]


HOST: dict[str, tuple[tuple[str, ...], Combine, str]] = {
    "cpu.percent": (("cpu_percent",), _one, "CPU use of the run's process tree; 100 = one core busy"),
    "cpu.utilization": (("cpu_percent", "cpu_count"), _per_core, "cpu.percent over every core of the host (0–100)"),
    "memory.rss": (("rss_bytes",), _one, "resident memory of the tree, bytes"),
    "memory.percent": (("memory_percent",), _one, "memory.rss as a percentage of the host's memory"),
    "memory.cgroup_percent": (
        ("cgroup_memory_usage", "cgroup_memory_limit"),
        _percent,
        "memory cgroup usage as a percentage of its limit (how close to an OOM kill)",
    ),
    "threads": (("threads",), _one, "threads in the tree"),
    "open_files": (("open_files",), _one, "open file descriptors in the tree"),
}
GPU: dict[str, tuple[tuple[str, ...], Combine, str]] = {
    "gpu.utilization": (("utilization_percent",), _one, "per GPU (label gpu): busy percentage"),
    "gpu.memory_used": (("memory_used_bytes",), _one, "per GPU: memory used, bytes"),
    "gpu.memory_percent": (
        ("memory_used_bytes", "memory_total_bytes"),
        _percent,
        "per GPU: memory used as a percentage of the device's",
    ),
    "gpu.power": (("power_watts",), _one, "per GPU: watts"),
    "gpu.temperature": (("temperature_c",), _one, "per GPU: degrees Celsius"),
}
RESOURCE_SERIES: dict[str, str] = {name: spec[2] for name, spec in (HOST | GPU).items()}


def is_resource_series(name: str) -> bool:
    return name in HOST or name in GPU


def fields_of(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """The sample fields (host, per GPU) the given series read."""
    host = sorted({f for n in names if n in HOST for f in HOST[n][0]})
    gpu = sorted({f for n in names if n in GPU for f in GPU[n][0]})
    return host, gpu


def combine(name: str, fields: Mapping[str, np.ndarray]) -> np.ndarray:
    spec = HOST.get(name) or GPU[name]
    with np.errstate(invalid="ignore", divide="ignore"):
        return spec[1]([fields[f] for f in spec[0]])


def _floats(values: Sequence[Any]) -> np.ndarray:
    try:
        return np.array(values, dtype=np.float64)  # None becomes NaN
    except (TypeError, ValueError):
        return np.array(
            [v if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan for v in values], dtype=np.float64
        )


@dataclass
class SampleTable:
    """The wanted fields of many samples, column by column (host rows; one row per sample and GPU)."""

    host_fields: list[str]
    gpu_fields: list[str]
    host_runs: list[str] = field(default_factory=list)
    host_times: list[Any] = field(default_factory=list)
    host: dict[str, list[Any]] = field(default_factory=dict)
    gpu_runs: list[str] = field(default_factory=list)
    gpu_samples: list[int] = field(default_factory=list)
    gpu_times: list[Any] = field(default_factory=list)
    gpu_index: list[Any] = field(default_factory=list)
    gpu_memory: list[Any] = field(default_factory=list)  # process_memory_bytes: which GPUs the run uses
    gpu: dict[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for f in self.host_fields:
            self.host.setdefault(f, [])
        for f in self.gpu_fields:
            self.gpu.setdefault(f, [])

    def __len__(self) -> int:
        return len(self.host_runs) + len(self.gpu_runs)

    def keep_runs(self, runs: Container[str]) -> SampleTable:
        """Only the rows of these runs."""
        out = SampleTable(self.host_fields, self.gpu_fields)
        keep = [i for i, r in enumerate(self.host_runs) if r in runs]
        out.host_runs = [self.host_runs[i] for i in keep]
        out.host_times = [self.host_times[i] for i in keep]
        out.host = {f: [v[i] for i in keep] for f, v in self.host.items()}
        keep = [i for i, r in enumerate(self.gpu_runs) if r in runs]
        for name in ("gpu_runs", "gpu_samples", "gpu_times", "gpu_index", "gpu_memory"):
            values = getattr(self, name)
            setattr(out, name, [values[i] for i in keep])
        out.gpu = {f: [v[i] for i in keep] for f, v in self.gpu.items()}
        return out

    def extend(self, other: SampleTable) -> None:
        self.host_runs += other.host_runs
        self.host_times += other.host_times
        for f in self.host_fields:
            self.host[f] += other.host[f]
        self.gpu_runs += other.gpu_runs
        self.gpu_samples += other.gpu_samples
        self.gpu_times += other.gpu_times
        self.gpu_index += other.gpu_index
        self.gpu_memory += other.gpu_memory
        for f in self.gpu_fields:
            self.gpu[f] += other.gpu[f]

    @classmethod
    def from_samples(
        cls, samples: Sequence[Mapping[str, Any]], run_id: str, host_fields: Sequence[str], gpu_fields: Sequence[str]
    ) -> SampleTable:
        """From sample dicts (the replay's path)."""
        t = cls(list(host_fields), list(gpu_fields))
        for i, s in enumerate(samples):
            t.host_runs.append(run_id)
            t.host_times.append(s.get("time"))
            for f in host_fields:
                t.host[f].append(s.get(f))
            for g in s.get("gpus") or []:
                t.gpu_runs.append(run_id)
                t.gpu_samples.append(i)
                t.gpu_times.append(s.get("time"))
                t.gpu_index.append(g.get("index"))
                t.gpu_memory.append(g.get("process_memory_bytes"))
                for f in gpu_fields:
                    t.gpu[f].append(g.get(f))
        return t


def resource_columns(names: Sequence[str], table: SampleTable) -> dict[str, Column]:
    """Columns of the named series, one segment per run (and GPU), in time order within each."""
    out: dict[str, Column] = {}
    if table.host_runs and any(n in HOST for n in names):
        codes, keys_of = _codes(table.host_runs)
        order = np.argsort(codes, kind="stable")
        times = _floats(table.host_times)[order]
        fields = {f: _floats(v)[order] for f, v in table.host.items()}
        sorted_codes = codes[order]
        for name in names:
            if name in HOST:
                out[name] = _column(
                    sorted_codes, [(keys_of[c], ()) for c in range(len(keys_of))], times, combine(name, fields)
                )
    if table.gpu_runs and any(n in GPU for n in names):
        memory = _floats(table.gpu_memory)
        reported = ~np.isnan(memory)
        _, sample = np.unique(np.asarray(table.gpu_samples), return_inverse=True)
        any_reported = np.bincount(sample, weights=reported.astype(np.float64)) > 0
        with np.errstate(invalid="ignore"):
            used = ~any_reported[sample] | (memory > 0)  # the GPUs the tree holds memory on (or all)
        index = [str(i) for i in table.gpu_index]
        codes, keys_of = _codes([f"{r}\x00{i}" for r, i in zip(table.gpu_runs, index, strict=True)])
        keys = [(k.split("\x00")[0], (("gpu", k.split("\x00")[1]),)) for k in keys_of]
        order = np.flatnonzero(used)[np.argsort(codes[used], kind="stable")]
        times = _floats(table.gpu_times)[order]
        fields = {f: _floats(v)[order] for f, v in table.gpu.items()}
        for name in names:
            if name in GPU:
                out[name] = _column(codes[order], keys, times, combine(name, fields))
    return out


def _codes(values: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.int64, count=len(values))
    return codes, list(index)


def _column(codes: np.ndarray, keys: Sequence[SegmentKey], times: np.ndarray, values: np.ndarray) -> Column:
    """Rows sorted by segment code; rows without a finite value are left out."""
    ok = np.isfinite(values) & np.isfinite(times)
    if not ok.all():
        codes, times, values = codes[ok], times[ok], values[ok]
    if not len(codes):
        return Column([], np.zeros(1, dtype=np.int64), times, values)
    cut = np.flatnonzero(np.diff(codes)) + 1
    starts = np.concatenate(([0], cut, [len(codes)])).astype(np.int64)
    return Column([keys[c] for c in codes[starts[:-1]].tolist()], starts, times, values)
