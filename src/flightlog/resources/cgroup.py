"""Real memory limits for a workload, through the kernel's memory cgroup controller.

Why: an orchestrator (Kubernetes, Slurm, a container runtime) kills a job that crosses its
memory limit; to reproduce that failure on a laptop or CI box, ``flightlog run --memory-limit``
puts the workload into a cgroup of its own with the same limit, and reads back the kernel's own
OOM-kill counter afterwards, so "killed for memory" is evidence, not a guess.

One protocol (`MemoryLimit`), two backends: cgroup v2 (``memory.max``) and cgroup v1
(``memory.limit_in_bytes``), chosen by which hierarchy carries the memory controller on this
machine (a controller lives in exactly one hierarchy). The new cgroup is made *below this
process's own* memory cgroup, so it works inside containers and nested sessions and is
accounted to them too. Where nothing can be made, `CgroupUnavailable` says why and the caller
runs without the limit (or with `rlimit_preexec`, an address-space limit, when asked).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import resource
import signal
import time
from collections.abc import Callable
from typing import Protocol

from flightlog.errors import FlightlogError, InvalidInput
from flightlog.resources._cgroupfs import (
    Mount,
    find_memory_cgroup,
    memory_cgroup_dir,
    read_cgroup_memory,
    read_int,
    read_keyed,
    read_text,
    write,
)

__all__ = [
    "MemoryLimit",
    "CgroupUnavailable",
    "TreeCgroup",
    "create_tree_cgroup",
    "CgroupV1MemoryLimit",
    "CgroupV2MemoryLimit",
    "create_memory_limit",
    "rlimit_preexec",
    "own_cgroup_memory",
    "killed_for_memory",
]

_RMDIR_WAIT_S = 1.0


class CgroupUnavailable(FlightlogError):
    """No memory cgroup could be made here; the message says why, for the runner to print."""

    code = "cgroup_unavailable"
    http_status = 503


class MemoryLimit(Protocol):
    """A memory cgroup holding the workload; the same contract for cgroup v1 and v2."""

    path: str
    version: int
    limit_bytes: int

    def add_pid(self, pid: int) -> None:
        """Move ``pid`` into the cgroup (its future children follow it)."""
        ...

    def preexec(self) -> Callable[[], None]:
        """A ``preexec_fn`` that moves the child into the cgroup before it execs."""
        ...

    def pids(self) -> list[int]:
        """Processes inside now (e.g. leftovers that keep `close` from removing it)."""
        ...

    def usage_bytes(self) -> int | None: ...

    def peak_bytes(self) -> int | None: ...

    def oom_kills(self) -> int:
        """How many processes the kernel OOM-killed inside this cgroup."""
        ...

    def limit_hits(self) -> int:
        """How many times usage ran into the limit (reclaim or kill followed)."""
        ...

    def close(self) -> None:
        """Remove the cgroup once its processes are gone; never raises."""
        ...


# --------------------------------------------------------------------------- backends


class _Cgroup:
    """A cgroup directory of our own: moving pids in, listing them, removing it, context manager."""

    version = 0

    def __init__(self, path: str) -> None:
        self.path = path
        self.removed = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path}>"

    def __enter__(self) -> _Cgroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_pid(self, pid: int) -> None:
        write(os.path.join(self.path, "cgroup.procs"), str(pid))

    def preexec(self) -> Callable[[], None]:
        # Runs in the forked child before exec: keep it to three syscalls, nothing allocated
        # beyond the pid's digits, so it is safe even when the parent has threads.
        procs = os.path.join(self.path, "cgroup.procs").encode()

        def _join_cgroup() -> None:
            fd = os.open(procs, os.O_WRONLY)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)

        return _join_cgroup

    def pids(self) -> list[int]:
        text = read_text(os.path.join(self.path, "cgroup.procs")) or ""
        return [int(x) for x in text.split()]

    def close(self) -> None:
        # Move nothing: a process still inside keeps its limit. The kernel refuses rmdir
        # (EBUSY) while tasks remain, which for a just-killed process lasts a few ms.
        deadline = time.monotonic() + _RMDIR_WAIT_S
        while not self.removed:
            try:
                os.rmdir(self.path)
                self.removed = True
            except FileNotFoundError:
                self.removed = True
            except OSError:
                if time.monotonic() >= deadline:
                    return
                time.sleep(0.02)
            except Exception:  # never raise from cleanup
                return


class TreeCgroup(_Cgroup):
    """A cgroup that only holds a workload's process tree, with no limit: every process the
    workload starts stays in it, whatever session it makes and whatever environment it scrubs
    (``setsid env -i …``), so the runner, or its keeper when the runner is gone, finds them all."""


class _CgroupMemoryLimit(_Cgroup):
    """What both versions of a memory limit share."""

    def __init__(self, path: str, limit_bytes: int) -> None:
        super().__init__(path)
        self.limit_bytes = limit_bytes

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path} limit={self.limit_bytes}>"


class CgroupV1MemoryLimit(_CgroupMemoryLimit):
    """cgroup v1: ``memory.limit_in_bytes`` (+ ``memory.memsw.limit_in_bytes`` so swap can't dodge it)."""

    version = 1

    def configure(self) -> None:
        write(os.path.join(self.path, "memory.limit_in_bytes"), str(self.limit_bytes))
        memsw = os.path.join(self.path, "memory.memsw.limit_in_bytes")
        if os.path.exists(memsw):  # absent when swap accounting is off
            with contextlib.suppress(OSError):
                write(memsw, str(self.limit_bytes))
        actual = read_int(os.path.join(self.path, "memory.limit_in_bytes"))
        if actual is not None:
            self.limit_bytes = actual  # the kernel rounds down to whole pages

    def usage_bytes(self) -> int | None:
        return read_int(os.path.join(self.path, "memory.usage_in_bytes"))

    def peak_bytes(self) -> int | None:
        return read_int(os.path.join(self.path, "memory.max_usage_in_bytes"))

    def oom_kills(self) -> int:
        # "oom_kill N" appeared in memory.oom_control with Linux 4.13; older kernels don't
        # count, and the caller falls back to `killed_for_memory` (limit hit + SIGKILL).
        return read_keyed(os.path.join(self.path, "memory.oom_control")).get("oom_kill", 0)

    def limit_hits(self) -> int:
        hits = max(read_int(os.path.join(self.path, name)) or 0 for name in ("memory.failcnt", "memory.memsw.failcnt"))
        # Recent kernels no longer bump failcnt on every charge failure (seen: 6.18 reports 0
        # after an OOM kill); a peak at the limit is the same evidence.
        if hits == 0 and (self.peak_bytes() or 0) >= self.limit_bytes:
            hits = 1
        return hits


class CgroupV2MemoryLimit(_CgroupMemoryLimit):
    """cgroup v2: ``memory.max`` with ``memory.swap.max = 0``; events from ``memory.events``."""

    version = 2

    def configure(self) -> None:
        write(os.path.join(self.path, "memory.max"), str(self.limit_bytes))
        swap = os.path.join(self.path, "memory.swap.max")
        if os.path.exists(swap):
            with contextlib.suppress(OSError):
                write(swap, "0")
        actual = read_int(os.path.join(self.path, "memory.max"))
        if actual is not None:
            self.limit_bytes = actual

    def usage_bytes(self) -> int | None:
        return read_int(os.path.join(self.path, "memory.current"))

    def peak_bytes(self) -> int | None:
        return read_int(os.path.join(self.path, "memory.peak"))  # Linux >= 5.19

    def oom_kills(self) -> int:
        return read_keyed(os.path.join(self.path, "memory.events")).get("oom_kill", 0)

    def limit_hits(self) -> int:
        hits = read_keyed(os.path.join(self.path, "memory.events")).get("max", 0)
        if hits == 0 and (self.peak_bytes() or 0) >= self.limit_bytes:
            hits = 1
        return hits


# --------------------------------------------------------------------------- factory


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")  # compiled at import, not in each (forked) runner


def _safe_name(name: str) -> str:
    cleaned = _UNSAFE.sub("_", name).strip(".") or "run"
    return "flightlog-" + cleaned[:80]


def cgroup_name(name: str) -> str:
    """The directory name ``create_tree_cgroup(name)`` and ``create_memory_limit`` give a cgroup."""
    return _safe_name(name)


def _explain(exc: OSError, where: str, mount: Mount) -> str:
    if exc.errno == errno.EROFS:
        return (
            f"the cgroup filesystem at {mount.point} is read-only (usual inside an unprivileged "
            "container; run it with a writable cgroup or --memory-limit-mode rlimit)"
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        who = "not root" if os.geteuid() != 0 else "root, but not permitted"
        return f"not permitted to write {where} ({who}; a memory limit needs root or a cgroup delegated to this user)"
    return f"cannot write {where}: {exc.strerror or exc}"


def _mkdir_child(base: str, name: str, mount: Mount) -> str:
    path = os.path.join(base, _safe_name(name))
    for attempt in range(3):
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            # Never take over (or remove) a cgroup that exists: it may be another run's.
            path = os.path.join(base, f"{_safe_name(name)}-{os.getpid()}-{attempt}")
        except OSError as exc:
            raise CgroupUnavailable(_explain(exc, base, mount), details={"path": base}) from exc
    raise CgroupUnavailable(f"cannot create a cgroup named {name!r} under {base}")


def _enable_v2_memory(base: str, mount: Mount) -> None:
    controllers = (read_text(os.path.join(base, "cgroup.controllers")) or "").split()
    if "memory" not in controllers:
        raise CgroupUnavailable(
            f"cgroup v2: the memory controller is not available in {base} (the parent cgroup does not delegate it)"
        )
    subtree = (read_text(os.path.join(base, "cgroup.subtree_control")) or "").split()
    if "memory" in subtree:
        return
    try:
        write(os.path.join(base, "cgroup.subtree_control"), "+memory")
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            raise CgroupUnavailable(
                f"cgroup v2: cannot enable the memory controller below {base} because that "
                "cgroup holds processes (the no-internal-processes rule); start flightlog in a "
                "delegated cgroup, e.g. `systemd-run --scope -p Delegate=yes flightlog run ...`"
            ) from exc
        raise CgroupUnavailable(_explain(exc, base, mount)) from exc


def create_memory_limit(limit_bytes: int, name: str) -> MemoryLimit:
    """Make a memory cgroup below this process's own one, limited to ``limit_bytes``.

    The caller then moves the workload in (``add_pid`` after fork, or ``preexec()`` as the
    ``preexec_fn`` so the child cannot allocate before it is inside) and calls ``close()`` when
    the workload is gone. Raises `CgroupUnavailable` saying why when no cgroup can be made.
    """
    if not isinstance(limit_bytes, int) or isinstance(limit_bytes, bool) or limit_bytes <= 0:
        raise InvalidInput(f"memory limit must be a positive number of bytes, got {limit_bytes!r}")
    found = memory_cgroup_dir()
    if found is None:
        raise CgroupUnavailable(
            "no memory cgroup controller is mounted on this machine (neither cgroup v2 with "
            "the memory controller nor a v1 memory hierarchy)"
        )
    version, base, mount = found
    if not os.path.isdir(base):
        raise CgroupUnavailable(
            f"this process's memory cgroup {base} is not visible (cgroup namespace or mount mismatch)"
        )
    if version == 2:
        _enable_v2_memory(base, mount)
    path = _mkdir_child(base, name, mount)
    limit: CgroupV1MemoryLimit | CgroupV2MemoryLimit = (
        CgroupV2MemoryLimit(path, limit_bytes) if version == 2 else CgroupV1MemoryLimit(path, limit_bytes)
    )
    try:
        limit.configure()
    except OSError as exc:
        limit.close()
        raise CgroupUnavailable(_explain(exc, path, mount), details={"path": path}) from exc
    return limit


def create_tree_cgroup(name: str) -> TreeCgroup:
    """Make a cgroup below this process's own one (in the hierarchy that carries the memory
    controller, where this process may make cgroups) to hold a workload's process tree.

    Nothing is limited or enabled: on cgroup v2 a child cgroup needs no controller to hold
    processes. Raises `CgroupUnavailable` saying why when none can be made.
    """
    found = memory_cgroup_dir()
    if found is None:
        raise CgroupUnavailable("no cgroup hierarchy this process can make cgroups in is mounted")
    version, base, mount = found
    if not os.path.isdir(base):
        raise CgroupUnavailable(f"this process's cgroup {base} is not visible (cgroup namespace or mount mismatch)")
    tree = TreeCgroup(_mkdir_child(base, name, mount))
    tree.version = version
    return tree


def rlimit_preexec(limit_bytes: int) -> Callable[[], None]:
    """A ``preexec_fn`` capping the child's address space (RLIMIT_AS) at ``limit_bytes``.

    A fallback for ``--memory-limit-mode rlimit`` only: address space is not memory, so
    programs that reserve large virtual ranges up front (the JVM, CUDA, jemalloc/tcmalloc
    arenas) fail at start-up far below the limit, and the failure is an allocation error
    (MemoryError, ``std::bad_alloc``), not the SIGKILL an orchestrator would send.
    """
    if limit_bytes <= 0:
        raise InvalidInput(f"memory limit must be a positive number of bytes, got {limit_bytes!r}")

    def _set_rlimit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return _set_rlimit


def own_cgroup_memory(pid: int | None = None) -> tuple[int | None, int | None]:
    """(usage, limit) in bytes of the memory cgroup a process is in (default: this one).

    Why: inside a container the host's memory figures say nothing about how close the job is
    to being killed; the container's cgroup does. The limit is the effective one — the
    smallest along the path to the root (v1 reports it as ``hierarchical_memory_limit``) —
    and None when unlimited or when no memory controller is visible.
    """
    return read_cgroup_memory(find_memory_cgroup(pid))


def killed_for_memory(limit: MemoryLimit | None, returncode: int | None) -> bool:
    """Whether a workload that ended with ``returncode`` was killed for memory.

    The kernel's own counter (``oom_kills() >= 1``) is decisive. Kernels that do not count
    (v1 before Linux 4.13) leave a heuristic: the process died of SIGKILL (``-9`` from
    subprocess, 137 through a shell) and the cgroup had run into its limit.
    """
    if limit is None:
        return False
    try:
        if limit.oom_kills() >= 1:
            return True
        sigkill = returncode in (-signal.SIGKILL, 128 + signal.SIGKILL)
        return bool(sigkill and limit.limit_hits() > 0)
    except Exception:
        return False
