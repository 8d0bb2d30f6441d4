"""GPU probing: the real no-driver path on this machine, and the NVML mapping.

The mapping tests hand `open_gpu_probe` a stand-in for the third-party ``pynvml`` module
(flightlog code runs unmodified), so guards, units and per-process memory are checked on
machines without a GPU.
"""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest

from flightlog.resources import NoGpu, NvmlProbe, ProcessTreeSampler, open_gpu_probe


class NVMLError(Exception):
    pass


class NVMLError_LibraryNotFound(NVMLError):  # pynvml names its errors this way
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class FakeNvml:
    """Two devices; device 1 supports neither power nor process listing."""

    NVML_TEMPERATURE_GPU = 0

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.calls: dict[str, int] = {}

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def nvmlInit(self) -> None:
        self._count("init")

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA Test GPU"  # older pynvml returned bytes

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return f"GPU-{h}"

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(total=80 << 30, used=(10 + h) << 30, free=0)

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return SimpleNamespace(gpu=97, memory=40)

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        self._count(f"power{h}")
        if h == 1:
            raise NVMLError_NotSupported()
        return 312_500  # milliwatts

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        return 61

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[Any]:
        if h == 1:
            raise NVMLError_NotSupported()
        return [
            SimpleNamespace(pid=self.pid, usedGpuMemory=3 << 30),
            SimpleNamespace(pid=1, usedGpuMemory=5 << 30),  # someone else's
        ]

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: int) -> list[Any]:
        if h == 1:
            raise NVMLError_NotSupported()
        return [SimpleNamespace(pid=self.pid, usedGpuMemory=None)]  # not available


def test_no_driver_on_this_machine_is_a_clean_no_op() -> None:
    probe = open_gpu_probe()
    if not isinstance(probe, NoGpu):
        pytest.skip("this machine has an NVIDIA driver and GPU")
    assert probe.read([os.getpid()]) == []
    assert len(probe.notes) == 1
    assert probe.notes[0].startswith("GPU sampling off: ")


def test_without_a_driver_nvml_is_not_even_loaded() -> None:
    if not sys.platform.startswith("linux") or any(
        os.path.exists(p) for p in ("/proc/driver/nvidia", "/dev/nvidiactl", "/dev/dxg")
    ):
        pytest.skip("this machine has an NVIDIA driver (or is not Linux)")
    code = (
        "import sys\n"
        "from flightlog.resources import open_gpu_probe\n"
        "probe = open_gpu_probe()\n"
        "print(probe.notes[0], 'pynvml' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == (
        "GPU sampling off: no NVIDIA driver loaded (none of /proc/driver/nvidia, /dev/nvidiactl, /dev/dxg exists) False"
    )


def test_library_not_found_reads_as_a_note() -> None:
    class Missing:
        def nvmlInit(self) -> None:
            raise NVMLError_LibraryNotFound("NVML Shared Library Not Found")

    probe = open_gpu_probe(nvml=Missing())
    assert isinstance(probe, NoGpu)
    assert probe.notes == ["GPU sampling off: NVML not available (libnvidia-ml.so.1 not found)"]


def test_turned_off_by_caller() -> None:
    sampler = ProcessTreeSampler(os.getpid(), gpu=False)
    assert sampler.sample()["gpus"] == []
    assert sampler.notes == ["GPU sampling off: turned off by the caller"]


def test_nvml_fields_units_and_unsupported_calls() -> None:
    nvml = FakeNvml(os.getpid())
    probe = open_gpu_probe(nvml=nvml)
    assert isinstance(probe, NvmlProbe)
    first = probe.read([os.getpid()])
    second = probe.read([os.getpid()])
    assert first == second
    dev0, dev1 = first
    assert dev0 == {
        "index": 0,
        "name": "NVIDIA Test GPU",
        "uuid": "GPU-0",
        "utilization_percent": 97,
        "memory_used_bytes": 10 << 30,
        "memory_total_bytes": 80 << 30,
        "power_watts": 312.5,
        "temperature_c": 61,
        "process_memory_bytes": 3 << 30,  # only the tree's pid, and not the None entry
    }
    assert dev1["power_watts"] is None
    assert dev1["process_memory_bytes"] is None  # the driver would not tell
    assert dev1["utilization_percent"] == 97
    # "not supported" is remembered: asked once, never again.
    assert nvml.calls["power1"] == 1
    assert nvml.calls["power0"] == 2


def test_nvml_initialized_once_per_process() -> None:
    nvml = FakeNvml(os.getpid())
    open_gpu_probe(nvml=nvml)
    open_gpu_probe(nvml=nvml)
    assert nvml.calls["init"] == 1


def test_sampler_passes_the_tree_pids_to_the_probe() -> None:
    nvml = FakeNvml(os.getpid())
    sampler = ProcessTreeSampler(os.getpid(), gpu_probe=open_gpu_probe(nvml=nvml))
    gpus = sampler.sample()["gpus"]
    assert [g["index"] for g in gpus] == [0, 1]
    assert gpus[0]["process_memory_bytes"] == 3 << 30
    assert sampler.notes == []


def test_other_processes_memory_reads_zero() -> None:
    nvml = FakeNvml(pid=999_999_999)
    probe = open_gpu_probe(nvml=nvml)
    assert probe.read([os.getpid()])[0]["process_memory_bytes"] == 0
