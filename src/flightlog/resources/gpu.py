"""GPU readings through NVML (the library behind ``nvidia-smi``), or a clean no-op.

Why its own module behind a tiny interface (`GpuProbe`): most machines that run flightlog
have no NVIDIA driver, and the sampler must behave the same there — no exception, an empty
``gpus`` list and one note on the run saying why. The NVML path is the only one that touches
the driver; everything else sees ``read(pids) -> list[dict]``.

Every NVML call is guarded: devices differ in what they support (power on some consumer
cards, utilization under MIG, per-process memory inside containers), and an unsupported field
is ``None`` rather than a failed sample. A call that answers "not supported" once is not asked
again, so a sample stays a handful of cheap driver calls.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Collection
from typing import Any, Protocol

__all__ = ["GpuProbe", "NoGpu", "NvmlProbe", "open_gpu_probe"]


class GpuProbe(Protocol):
    """Reads every visible GPU; ``notes`` explains anything the run should know (e.g. no GPU)."""

    notes: list[str]

    def read(self, pids: Collection[int]) -> list[dict[str, Any]]:
        """One dict per device; ``process_memory_bytes`` sums what ``pids`` hold on it."""
        ...


class NoGpu:
    """The probe for machines without NVML: reads nothing, says why once."""

    def __init__(self, reason: str) -> None:
        self.notes = [f"GPU sampling off: {reason}"]

    def read(self, pids: Collection[int]) -> list[dict[str, Any]]:
        return []


# nvmlInit is process-wide and reference counted; flightlog initializes it once per process
# (per module object, so tests can hand in a stand-in) and keeps it for the process's life.
_INIT_LOCK = threading.Lock()
# keyed by the NVML module itself, not its id(): an id is reused once an object is gone, and a new
# binding would then pass for one already initialized
_INIT_DONE: dict[Any, str | None] = {}


def _reason(exc: BaseException) -> str:
    kind = type(exc).__name__
    if kind == "NVMLError_LibraryNotFound":
        return "NVML not available (libnvidia-ml.so.1 not found)"
    if kind == "NVMLError_DriverNotLoaded":
        return "NVIDIA driver not loaded"
    if kind == "NVMLError_NoPermission":
        return "no permission to query the NVIDIA driver"
    return f"NVML init failed: {exc}"


def _init_once(nvml: Any) -> str | None:
    """nvmlInit once per process; returns why it failed, or None."""
    with _INIT_LOCK:
        if nvml not in _INIT_DONE:
            try:
                nvml.nvmlInit()
                _INIT_DONE[nvml] = None
            except Exception as exc:
                _INIT_DONE[nvml] = _reason(exc)
        return _INIT_DONE[nvml]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


class NvmlProbe:
    """Per-device utilization, memory, power, temperature and the tree's own GPU memory."""

    def __init__(self, nvml: Any) -> None:
        self.notes: list[str] = []
        self._nvml = nvml
        self._unsupported: set[tuple[int, str]] = set()
        self._devices: list[dict[str, Any]] = []
        count = self._call(-1, "count", nvml.nvmlDeviceGetCount) or 0
        for index in range(count):
            handle = self._call(index, "handle", nvml.nvmlDeviceGetHandleByIndex, index)
            if handle is None:
                self.notes.append(f"GPU {index}: NVML gave no handle; not sampled")
                continue
            mem = self._call(index, "memory", nvml.nvmlDeviceGetMemoryInfo, handle)
            self._devices.append(
                {
                    "index": index,
                    "handle": handle,
                    "name": _text(self._call(index, "name", nvml.nvmlDeviceGetName, handle)),
                    "uuid": _text(self._call(index, "uuid", nvml.nvmlDeviceGetUUID, handle)),
                    "memory_total_bytes": getattr(mem, "total", None),
                }
            )

    @property
    def device_count(self) -> int:
        return len(self._devices)

    def _call(self, index: int, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        if (index, what) in self._unsupported:
            return None
        try:
            return fn(*args)
        except Exception as exc:
            if type(exc).__name__ in ("NVMLError_NotSupported", "NVMLError_FunctionNotFound"):
                self._unsupported.add((index, what))
            return None

    def _process_memory(self, index: int, handle: Any, pids: Collection[int]) -> int | None:
        nvml = self._nvml
        found = False
        total = 0
        answered = False
        for what, fn in (
            ("compute_procs", nvml.nvmlDeviceGetComputeRunningProcesses),
            ("graphics_procs", nvml.nvmlDeviceGetGraphicsRunningProcesses),
        ):
            procs = self._call(index, what, fn, handle)
            if procs is None:
                continue
            answered = True
            for p in procs:
                used = getattr(p, "usedGpuMemory", None)
                if getattr(p, "pid", None) in pids and used is not None:
                    found = True
                    total += int(used)
        if found:
            return total
        # The driver answered and none of the tree's processes hold memory there: 0. Inside a
        # container NVML reports host pids, so this may also read 0 (see docs/resources.md).
        return 0 if answered else None

    def read(self, pids: Collection[int]) -> list[dict[str, Any]]:
        nvml = self._nvml
        out: list[dict[str, Any]] = []
        pid_set = set(pids)
        for dev in self._devices:
            index, handle = dev["index"], dev["handle"]
            util = self._call(index, "utilization", nvml.nvmlDeviceGetUtilizationRates, handle)
            mem = self._call(index, "memory", nvml.nvmlDeviceGetMemoryInfo, handle)
            power = self._call(index, "power", nvml.nvmlDeviceGetPowerUsage, handle)
            temp = self._call(
                index,
                "temperature",
                nvml.nvmlDeviceGetTemperature,
                handle,
                getattr(nvml, "NVML_TEMPERATURE_GPU", 0),
            )
            out.append(
                {
                    "index": index,
                    "name": dev["name"],
                    "uuid": dev["uuid"],
                    "utilization_percent": getattr(util, "gpu", None),
                    "memory_used_bytes": getattr(mem, "used", None),
                    "memory_total_bytes": getattr(mem, "total", None) or dev["memory_total_bytes"],
                    "power_watts": None if power is None else power / 1000.0,  # NVML: milliwatts
                    "temperature_c": temp,
                    "process_memory_bytes": self._process_memory(index, handle, pid_set),
                }
            )
        return out


# Where a loaded NVIDIA driver shows itself on Linux: its procfs entry and control device (both
# also inside containers given GPUs), or WSL2's GPU paravirtualization device.
_DRIVER_PATHS = ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/dxg")


def _no_driver() -> str | None:
    """Why NVML cannot work here, when that is plain without loading it: on Linux, no NVIDIA
    driver is loaded. Importing ``pynvml`` and failing to load libnvidia-ml costs ~30 ms, which
    every short ``flightlog run`` (a pipeline step) would pay on a machine without GPUs."""
    if not sys.platform.startswith("linux") or any(os.path.exists(path) for path in _DRIVER_PATHS):
        return None
    return "no NVIDIA driver loaded (none of /proc/driver/nvidia, /dev/nvidiactl, /dev/dxg exists)"


def open_gpu_probe(enabled: bool = True, *, nvml: Any = None) -> GpuProbe:
    """The NVML probe when a driver and at least one GPU are there, else `NoGpu` with the reason.

    ``nvml`` is the ``pynvml`` module (from nvidia-ml-py) unless given; it is imported here,
    not at flightlog import time, so machines without GPUs never load it.
    """
    if not enabled:
        return NoGpu("turned off by the caller")
    if nvml is None:
        missing = _no_driver()
        if missing is not None:
            return NoGpu(missing)
        try:
            import pynvml
        except ImportError:
            return NoGpu("nvidia-ml-py (pynvml) is not installed")
        nvml = pynvml
    failure = _init_once(nvml)
    if failure is not None:
        return NoGpu(failure)
    try:
        probe = NvmlProbe(nvml)
    except Exception as exc:
        return NoGpu(f"NVML device query failed: {exc}")
    if probe.device_count == 0:
        return NoGpu("no NVIDIA GPU found by NVML")
    return probe
