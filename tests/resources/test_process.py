"""ProcessTreeSampler against real process trees (children, grandchildren, exits)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from flightlog.resources import ProcessTreeSampler

from .conftest import Spawn

MB = 1024 * 1024


def _script(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / name
    path.write_text(code)
    return str(path)


def test_grandchild_cpu_and_memory_are_counted(tmp_path: Path, spawn: Spawn) -> None:
    # A shell (the child) starts python (the grandchild) that holds 200 MB, forks a
    # great-grandchild, and both spin: the tree is three levels deep.
    burner = _script(
        tmp_path,
        "burn.py",
        "import os, time\n"
        "block = b'x' * (200 * 1024 * 1024)\n"
        "if os.fork():\n"
        "    print('ready', flush=True)\n"
        "end = time.time() + 30\n"
        "while time.time() < end:\n"
        "    pass\n",
    )
    child = spawn(
        ["sh", "-c", f'"{sys.executable}" "{burner}"; exit 0'],
        stdout=subprocess.PIPE,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"ready"
    spinners = psutil.Process(child.pid).children(recursive=True)
    assert len(spinners) == 2
    sampler = ProcessTreeSampler(child.pid, gpu=False)
    # One-second windows, each checked against the truth (the spinners' own CPU times), until
    # the spinners got at least 60 % of a core in a window. A machine crowded by other jobs
    # may never give them that; the agreement in every window still proves they are counted.
    seen: list[tuple[float, float]] = []
    for _ in range(10):
        before = sum(sum(p.cpu_times()[:2]) for p in spinners)
        time.sleep(1.0)
        sample = sampler.sample()
        truth = 100 * (sum(sum(p.cpu_times()[:2]) for p in spinners) - before)
        seen.append((sample["cpu_percent"], round(truth, 1)))
        assert abs(sample["cpu_percent"] - truth) <= max(5.0, 0.15 * truth), seen
        if truth >= 60:
            assert sample["cpu_percent"] >= 50, seen
            break
    assert max(truth for _, truth in seen) >= 20, f"the spinners barely ran: {seen}"
    assert sample["procs"] == 3
    assert sample["rss_bytes"] >= 200 * MB
    assert sample["threads"] >= 3
    assert sample["open_files"] >= 3
    assert 0 < sample["memory_percent"] < 100
    json.dumps(sample)  # one JSON-able dict


def test_cpu_of_children_that_exited_counts_once(tmp_path: Path, spawn: Spawn) -> None:
    # The grandchild burns ~1 CPU-second and exits while the shell lives on; its time moves
    # to the shell's children_user. Sampled during and after, it must count once, not twice.
    burner = _script(
        tmp_path,
        "cpu.py",
        "import time\nwhile time.process_time() < 1.0:\n    pass\n",
    )
    # `read` is a shell builtin: once python exits, the shell is alone in the tree.
    child = spawn(["sh", "-c", f'"{sys.executable}" "{burner}"; read x'], stdin=subprocess.PIPE)
    sampler = ProcessTreeSampler(child.pid, gpu=False)
    deadline = time.monotonic() + 60  # a crowded machine may take a while to give 1 CPU-s
    seen_grandchild = False
    while time.monotonic() < deadline:
        sample = sampler.sample()
        seen_grandchild = seen_grandchild or sample["procs"] >= 2
        if seen_grandchild and sample["procs"] == 1:
            break
        time.sleep(0.2)
    else:
        pytest.fail("the grandchild never finished")
    sample = sampler.sample()
    assert seen_grandchild
    assert 0.8 <= sample["cpu_seconds"] <= 1.5, sample


def test_vanishing_processes_are_skipped(spawn: Spawn) -> None:
    # A shell forking hundreds of short-lived children: they vanish between listing and reading.
    child = spawn(["sh", "-c", "i=0; while [ $i -lt 400 ]; do /bin/true; i=$((i+1)); done"])
    sampler = ProcessTreeSampler(child.pid, gpu=False)
    samples = []
    while child.poll() is None:
        samples.append(sampler.sample())
    after = sampler.sample()  # the root itself is gone now
    assert samples
    assert after["procs"] == 0
    assert after["rss_bytes"] == 0
    assert after["cpu_seconds"] >= samples[-1]["cpu_seconds"]  # totals never go back


def test_root_that_never_existed_is_an_empty_tree() -> None:
    pid = 2**22 + 12345  # above the default pid_max
    sampler = ProcessTreeSampler(pid, gpu=False)
    sample = sampler.sample()
    assert sample["procs"] == 0
    assert sample["host_memory_total"] > 0


def test_sample_fields_and_host_wide_values(spawn: Spawn) -> None:
    # a child of our own: the test process may have children of other fixtures (a PostgreSQL server)
    sampler = ProcessTreeSampler(spawn([sys.executable, "-c", "import time; time.sleep(60)"]).pid, gpu=False)
    sample = sampler.sample(now=1234.5)
    assert sample["time"] == 1234.5
    for key in (
        "cpu_percent",
        "cpu_count",
        "rss_bytes",
        "memory_percent",
        "threads",
        "procs",
        "open_files",
        "disk_read_bytes",
        "disk_write_bytes",
        "net_sent_bytes",
        "net_recv_bytes",
        "host_memory_total",
        "host_memory_available",
        "cgroup_memory_usage",
        "cgroup_memory_limit",
        "gpus",
    ):
        assert key in sample, key
    assert sample["procs"] == 1
    assert sample["cpu_count"] == os.cpu_count()
    assert 0 < sample["host_memory_available"] <= sample["host_memory_total"]


def test_disk_writes_of_the_tree_accumulate(tmp_path: Path, spawn: Spawn) -> None:
    target = tmp_path / "out.bin"
    writer = _script(
        tmp_path,
        "write.py",
        "import os, sys\n"
        f"with open({str(target)!r}, 'wb') as fh:\n"
        "    fh.write(os.urandom(8 * 1024 * 1024))\n"
        "    fh.flush()\n"
        "    os.fsync(fh.fileno())\n"
        "print('done', flush=True)\n"
        "sys.stdin.read()\n",
    )
    child = spawn([sys.executable, writer], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    sampler = ProcessTreeSampler(child.pid, gpu=False)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"done"
    sample = sampler.sample()
    assert sample["disk_write_bytes"] >= 8 * 1024 * 1024


def test_no_gpu_gives_a_note_and_no_devices() -> None:
    sampler = ProcessTreeSampler(os.getpid())
    sample = sampler.sample()
    if sample["gpus"]:
        pytest.skip("this machine has a GPU; the no-driver path is covered in test_gpu.py")
    assert sample["gpus"] == []
    assert any(note.startswith("GPU sampling off: ") for note in sampler.notes), sampler.notes


def test_slow_probe_runs_only_every_slow_interval(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"x" * 100_000)
    sampler = ProcessTreeSampler(os.getpid(), workdir=str(tmp_path), slow_interval=30, gpu=False)
    probed = ["workdir_bytes" in sampler.sample(now=t) for t in (1000, 1010, 1029.9, 1031, 1040, 1061)]
    assert probed == [True, False, False, True, False, True]


def test_first_workdir_walk_waits_for_slow_delay(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"x" * 100_000)
    created = time.monotonic()
    sampler = ProcessTreeSampler(os.getpid(), workdir=str(tmp_path), gpu=False, slow_delay=0.3)
    assert "workdir_bytes" not in sampler.sample()  # a workload that ended at once: no walk
    deadline = created + 10
    while time.monotonic() < deadline:
        sample = sampler.sample()
        if "workdir_bytes" in sample:
            break
        time.sleep(0.02)
    assert time.monotonic() - created >= 0.3
    assert sample["workdir_bytes"] >= 100_000 and sample["workdir_bytes_partial"] is False


def test_workdir_walk_is_bounded_and_marked_partial(tmp_path: Path) -> None:
    for i in range(50):
        (tmp_path / f"f{i}").write_bytes(b"x" * 5000)
    full = ProcessTreeSampler(os.getpid(), workdir=str(tmp_path), gpu=False).sample()
    capped = ProcessTreeSampler(os.getpid(), workdir=str(tmp_path), gpu=False, workdir_max_entries=10).sample()
    assert full["workdir_bytes"] >= 50 * 5000
    assert full["workdir_bytes_partial"] is False
    assert capped["workdir_bytes_partial"] is True
    assert capped["workdir_bytes"] < full["workdir_bytes"]


def test_missing_workdir_is_a_note(tmp_path: Path) -> None:
    sampler = ProcessTreeSampler(os.getpid(), workdir=str(tmp_path / "nope"), gpu=False)
    sample = sampler.sample()
    assert "workdir_bytes" not in sample
    assert any("not found" in note for note in sampler.notes)


def test_both_tree_walks_find_the_same_descendants(spawn: Spawn) -> None:
    from flightlog.resources import _tree

    if not _tree._task_children_supported():
        pytest.skip("this kernel has no /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)")
    child = spawn(["sh", "-c", "sleep 30 & sleep 30 & sh -c 'sleep 30; true' & wait"])
    deadline = time.monotonic() + 10
    while len(psutil.Process(child.pid).children(recursive=True)) < 4:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    fast = _tree.TreeWalker(child.pid)
    slow = _tree.TreeWalker(child.pid)
    slow._task_children = False
    assert {p.pid for p in fast.processes()} == {p.pid for p in slow.processes()}
