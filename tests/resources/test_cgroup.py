"""Memory limits with real cgroups and real OOM kills.

This machine and CI have a writable cgroup v1 memory controller; these tests skip only when
no memory cgroup can be made at all, and say why.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from flightlog.errors import InvalidInput
from flightlog.resources import (
    CgroupUnavailable,
    CgroupV2MemoryLimit,
    MemoryLimit,
    ProcessTreeSampler,
    create_memory_limit,
    killed_for_memory,
    own_cgroup_memory,
    rlimit_preexec,
)

from .conftest import Spawn

MiB = 1024 * 1024
ALLOCATE_512 = "data = b'x' * (512 * 1024 * 1024)\nprint('survived', flush=True)\n"


@pytest.fixture
def limit64() -> Iterator[MemoryLimit]:
    try:
        limit = create_memory_limit(64 * MiB, f"test-{uuid.uuid4().hex[:8]}")
    except CgroupUnavailable as exc:
        pytest.skip(f"no memory cgroup can be made here: {exc.message}")
    yield limit
    limit.close()


def test_real_oom_kill_is_detected(limit64: MemoryLimit, spawn: Spawn) -> None:
    assert os.path.isdir(limit64.path)
    assert limit64.limit_bytes == 64 * MiB
    child = spawn([sys.executable, "-c", ALLOCATE_512], preexec_fn=limit64.preexec())
    sampler = ProcessTreeSampler(child.pid, gpu=False, cgroup=limit64)
    rc = child.wait(timeout=60)

    assert rc == -signal.SIGKILL
    assert limit64.oom_kills() >= 1
    peak = limit64.peak_bytes()
    assert peak is not None and 0.9 * limit64.limit_bytes <= peak <= 1.05 * limit64.limit_bytes
    assert limit64.limit_hits() >= 1
    assert killed_for_memory(limit64, rc)
    sample = sampler.sample()
    assert sample["cgroup_memory_limit"] == 64 * MiB
    assert sample["cgroup_oom_kills"] >= 1

    path = limit64.path
    limit64.close()
    assert not os.path.exists(path)


def test_add_pid_after_start_and_grandchildren_follow(limit64: MemoryLimit, spawn: Spawn) -> None:
    # The shell waits for a line before starting the allocating grandchild.
    child = spawn(
        ["sh", "-c", f'read go; "{sys.executable}" -c "{ALLOCATE_512}"'],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    limit64.add_pid(child.pid)
    assert child.pid in limit64.pids()
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(b"go\n")
    child.stdin.close()
    rc = child.wait(timeout=60)
    assert child.stdout.read() == b""  # never survived
    assert rc == 128 + signal.SIGKILL  # as a shell reports its killed child
    assert limit64.oom_kills() >= 1
    assert killed_for_memory(limit64, rc)


def test_workload_under_the_limit_is_left_alone(limit64: MemoryLimit, spawn: Spawn) -> None:
    child = spawn(
        [sys.executable, "-c", "data = b'x' * (16 * 1024 * 1024)"],
        preexec_fn=limit64.preexec(),
    )
    rc = child.wait(timeout=60)
    assert rc == 0
    assert limit64.oom_kills() == 0
    assert not killed_for_memory(limit64, rc)
    peak = limit64.peak_bytes()
    assert peak is not None and 16 * MiB <= peak < 64 * MiB


def test_usage_is_read_while_running(limit64: MemoryLimit, spawn: Spawn) -> None:
    child = spawn(
        [
            sys.executable,
            "-c",
            "import sys\ndata = b'x' * (32 * 1024 * 1024)\nprint('ok', flush=True)\nsys.stdin.read()",
        ],
        preexec_fn=limit64.preexec(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == b"ok\n"
    usage = limit64.usage_bytes()
    assert usage is not None and 32 * MiB <= usage <= 64 * MiB
    # Seen from inside, as in a container: the process's own cgroup and its limit.
    inside_usage, inside_limit = own_cgroup_memory(child.pid)
    assert inside_limit == 64 * MiB
    assert inside_usage is not None and inside_usage >= 32 * MiB
    sample = ProcessTreeSampler(child.pid, gpu=False).sample()
    assert sample["cgroup_memory_limit"] == 64 * MiB
    assert sample["cgroup_memory_usage"] >= 32 * MiB


def test_close_is_safe_twice_and_with_a_process_inside(limit64: MemoryLimit, spawn: Spawn) -> None:
    child = spawn(["sleep", "30"], preexec_fn=limit64.preexec())
    limit64.close()  # busy: gives up after a short retry, never raises, moves nothing
    assert os.path.isdir(limit64.path)
    child.kill()
    child.wait()
    limit64.close()
    limit64.close()
    assert not os.path.exists(limit64.path)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(InvalidInput):
        create_memory_limit(0, "zero")
    with pytest.raises(InvalidInput):
        rlimit_preexec(-1)


def test_cgroup_unavailable_is_a_flightlog_error() -> None:
    exc = CgroupUnavailable("no writable memory controller")
    assert exc.to_dict()["error"]["code"] == "cgroup_unavailable"


def test_own_cgroup_memory_reports_usage() -> None:
    usage, limit = own_cgroup_memory()
    if usage is None:
        pytest.skip("no memory cgroup is visible to this process")
    assert usage > 0
    assert limit is None or limit > 0


def test_rlimit_mode_fails_allocation_in_the_child(spawn: Spawn) -> None:
    child = spawn(
        [sys.executable, "-c", "data = b'x' * (512 * 1024 * 1024)"],
        preexec_fn=rlimit_preexec(256 * MiB),
        stderr=subprocess.PIPE,
    )
    assert child.wait(timeout=60) == 1
    assert child.stderr is not None
    assert b"MemoryError" in child.stderr.read()


def test_v2_files_are_read_as_the_kernel_writes_them(tmp_path: Path) -> None:
    # The v2 backend's readers against files laid out like a v2 cgroup directory
    # (this machine's memory controller is on v1, so the kernel side runs in CI on v2 hosts).
    (tmp_path / "memory.current").write_text("1048576\n")
    (tmp_path / "memory.peak").write_text("67108864\n")
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 17\noom 2\noom_kill 1\noom_group_kill 0\n")
    (tmp_path / "memory.max").write_text("max\n")
    limit = CgroupV2MemoryLimit(str(tmp_path), 64 * MiB)
    assert limit.usage_bytes() == 1048576
    assert limit.peak_bytes() == 64 * MiB
    assert limit.oom_kills() == 1
    assert limit.limit_hits() == 17
    assert killed_for_memory(limit, -signal.SIGKILL)


def test_sigkill_at_the_limit_counts_where_the_kernel_does_not(tmp_path: Path) -> None:
    # Kernels without an oom_kill counter: a SIGKILL after the limit was hit is the evidence.
    (tmp_path / "memory.events").write_text("max 3\noom_kill 0\n")
    limit = CgroupV2MemoryLimit(str(tmp_path), 64 * MiB)
    assert killed_for_memory(limit, -signal.SIGKILL)
    assert killed_for_memory(limit, 137)
    assert not killed_for_memory(limit, 0)
    assert not killed_for_memory(limit, -signal.SIGTERM)
    (tmp_path / "memory.events").write_text("max 0\noom_kill 0\n")
    assert not killed_for_memory(limit, -signal.SIGKILL)
    assert not killed_for_memory(None, -signal.SIGKILL)


def test_cgroup_path_under_a_mounted_sub_tree() -> None:
    # Inside some containers the hierarchy is mounted from the container's own cgroup, and
    # /proc/self/cgroup still names the full path.
    from flightlog.resources._cgroupfs import Mount, _join

    mount = Mount("/docker/abc", "/sys/fs/cgroup/memory", "cgroup", frozenset({"memory"}))
    assert _join(mount, "/docker/abc/sub") == "/sys/fs/cgroup/memory/sub"
    assert _join(mount, "/docker/abc") == "/sys/fs/cgroup/memory/"
    root = Mount("/", "/sys/fs/cgroup", "cgroup2", frozenset())
    assert _join(root, "/user.slice/a.scope") == "/sys/fs/cgroup/user.slice/a.scope"
