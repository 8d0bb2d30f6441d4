"""Resource evidence for a run: what the process tree used, and the memory limit it ran under.

Used by ``flightlog run`` (the workload's tree, optionally inside a memory cgroup) and by
``flightlog.init`` (the training process's own tree). The pieces, one job each:

* `ProcessTreeSampler` (process.py) — one sample of CPU, memory, threads, files, disk, network,
  working-directory size, cgroup memory and GPUs of a process and all its descendants;
* `SamplerThread` (thread.py) — samples on a fixed interval in a daemon thread;
* `ResourceSummary` (summary.py) — peaks, averages and totals for the run;
* `open_gpu_probe` (gpu.py) — NVML, or a no-op with a note;
* `create_memory_limit` and friends (cgroup.py) — a real memory limit, and OOM-kill evidence.

See docs/resources.md for the field reference.
"""

from typing import TYPE_CHECKING

from flightlog.lazy import lazy_attributes

if TYPE_CHECKING:
    from flightlog.resources._tree import child_pids
    from flightlog.resources.cgroup import (
        CgroupUnavailable,
        CgroupV1MemoryLimit,
        CgroupV2MemoryLimit,
        MemoryLimit,
        TreeCgroup,
        create_memory_limit,
        create_tree_cgroup,
        killed_for_memory,
        own_cgroup_memory,
        rlimit_preexec,
    )
    from flightlog.resources.gpu import GpuProbe, NoGpu, NvmlProbe, open_gpu_probe
    from flightlog.resources.process import ProcessTreeSampler
    from flightlog.resources.summary import ResourceSummary
    from flightlog.resources.thread import Sampler, SamplerThread
    from flightlog.resources.workdir import DiskUsage, disk_usage

__all__ = [
    "CgroupUnavailable",
    "CgroupV1MemoryLimit",
    "CgroupV2MemoryLimit",
    "DiskUsage",
    "GpuProbe",
    "MemoryLimit",
    "NoGpu",
    "NvmlProbe",
    "ProcessTreeSampler",
    "ResourceSummary",
    "Sampler",
    "SamplerThread",
    "TreeCgroup",
    "child_pids",
    "create_memory_limit",
    "create_tree_cgroup",
    "disk_usage",
    "killed_for_memory",
    "open_gpu_probe",
    "own_cgroup_memory",
    "rlimit_preexec",
]

# imported on first use: `import flightlog` loads the hang watch's agent (resources/agent), and
# this package's own modules bring psutil, which a workload under `flightlog run` never uses
# (the runner samples it) (issue 32)
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "child_pids": "._tree",
        "CgroupUnavailable": ".cgroup",
        "CgroupV1MemoryLimit": ".cgroup",
        "CgroupV2MemoryLimit": ".cgroup",
        "MemoryLimit": ".cgroup",
        "TreeCgroup": ".cgroup",
        "create_memory_limit": ".cgroup",
        "create_tree_cgroup": ".cgroup",
        "killed_for_memory": ".cgroup",
        "own_cgroup_memory": ".cgroup",
        "rlimit_preexec": ".cgroup",
        "GpuProbe": ".gpu",
        "NoGpu": ".gpu",
        "NvmlProbe": ".gpu",
        "open_gpu_probe": ".gpu",
        "ProcessTreeSampler": ".process",
        "ResourceSummary": ".summary",
        "Sampler": ".thread",
        "SamplerThread": ".thread",
        "DiskUsage": ".workdir",
        "disk_usage": ".workdir",
    },
)
