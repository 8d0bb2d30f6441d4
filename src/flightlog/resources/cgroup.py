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
from dataclasses import dataclass
from typing import Protocol

from flightlog.errors import FlightlogError, InvalidInput

__all__ = [
    "MemoryLimit",
    "CgroupUnavailable",
    "CgroupV1MemoryLimit",
    "CgroupV2MemoryLimit",
    "create_memory_limit",
    "rlimit_preexec",
    "own_cgroup_memory",
    "killed_for_memory",
]

# The kernel's "no limit" in v1 is PAGE_COUNTER_MAX * page size (9223372036854771712 on x86-64);
# anything this large is unlimited for our purposes.
_UNLIMITED = 1 << 62
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


# --------------------------------------------------------------------------- discovery


@dataclass(frozen=True)
class _Mount:
    root: str
    point: str
    fstype: str
    options: frozenset[str]


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _cgroup_mounts() -> list[_Mount]:
    mounts: list[_Mount] = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return mounts
    for line in lines:
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        mounts.append(
            _Mount(
                root=_unescape(fields[3]),
                point=_unescape(fields[4]),
                fstype=tail[0],
                options=frozenset(tail[2].split(",")),
            )
        )
    return mounts


def _proc_cgroups(pid: int | str) -> tuple[str | None, str | None]:
    """(v1 memory path, v2 path) of a process, as /proc/<pid>/cgroup names them."""
    v1 = v2 = None
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None, None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hid, controllers, path = parts
        if hid == "0" and controllers == "":
            v2 = path
        elif "memory" in controllers.split(","):
            v1 = path
    return v1, v2


def _join(mount: _Mount, cgroup_path: str) -> str:
    """Directory of ``cgroup_path`` under ``mount``, allowing for a mount of a sub-tree."""
    rel = cgroup_path
    if mount.root != "/" and (rel == mount.root or rel.startswith(mount.root + "/")):
        rel = rel[len(mount.root) :]
    return os.path.join(mount.point, rel.lstrip("/"))


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def _read_int(path: str) -> int | None:
    text = _read_text(path)
    if text is None:
        return None
    text = text.strip()
    if text == "max":
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _read_keyed(path: str) -> dict[str, int]:
    """Parse flat keyed files: ``memory.events``, ``memory.stat``, ``memory.oom_control``."""
    out: dict[str, int] = {}
    for line in (_read_text(path) or "").splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[key] = int(value)
    return out


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode("ascii"))
    finally:
        os.close(fd)


def _memory_cgroup_dir(pid: int | str = "self") -> tuple[int, str, _Mount] | None:
    """(version, directory, mount) of the memory cgroup ``pid`` is in, or None."""
    mounts = _cgroup_mounts()
    v1_path, v2_path = _proc_cgroups(pid)
    for m in mounts:
        if m.fstype == "cgroup" and "memory" in m.options and v1_path is not None:
            return 1, _join(m, v1_path), m
    for m in mounts:
        if m.fstype == "cgroup2" and v2_path is not None:
            controllers = (_read_text(os.path.join(m.point, "cgroup.controllers")) or "").split()
            if "memory" in controllers or _read_text(os.path.join(m.point, "memory.stat")):
                return 2, _join(m, v2_path), m
    return None


# --------------------------------------------------------------------------- backends


class _CgroupMemoryLimit:
    """What both versions share: moving pids in, removing the directory, context manager."""

    version = 0

    def __init__(self, path: str, limit_bytes: int) -> None:
        self.path = path
        self.limit_bytes = limit_bytes
        self.removed = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path} limit={self.limit_bytes}>"

    def __enter__(self) -> _CgroupMemoryLimit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_pid(self, pid: int) -> None:
        _write(os.path.join(self.path, "cgroup.procs"), str(pid))

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
        text = _read_text(os.path.join(self.path, "cgroup.procs")) or ""
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


class CgroupV1MemoryLimit(_CgroupMemoryLimit):
    """cgroup v1: ``memory.limit_in_bytes`` (+ ``memory.memsw.limit_in_bytes`` so swap can't dodge it)."""

    version = 1

    def configure(self) -> None:
        _write(os.path.join(self.path, "memory.limit_in_bytes"), str(self.limit_bytes))
        memsw = os.path.join(self.path, "memory.memsw.limit_in_bytes")
        if os.path.exists(memsw):  # absent when swap accounting is off
            with contextlib.suppress(OSError):
                _write(memsw, str(self.limit_bytes))
        actual = _read_int(os.path.join(self.path, "memory.limit_in_bytes"))
        if actual is not None:
            self.limit_bytes = actual  # the kernel rounds down to whole pages

    def usage_bytes(self) -> int | None:
        return _read_int(os.path.join(self.path, "memory.usage_in_bytes"))

    def peak_bytes(self) -> int | None:
        return _read_int(os.path.join(self.path, "memory.max_usage_in_bytes"))

    def oom_kills(self) -> int:
        # "oom_kill N" appeared in memory.oom_control with Linux 4.13; older kernels don't
        # count, and the caller falls back to `killed_for_memory` (limit hit + SIGKILL).
        return _read_keyed(os.path.join(self.path, "memory.oom_control")).get("oom_kill", 0)

    def limit_hits(self) -> int:
        hits = max(
            _read_int(os.path.join(self.path, name)) or 0
            for name in ("memory.failcnt", "memory.memsw.failcnt")
        )
        # Recent kernels no longer bump failcnt on every charge failure (seen: 6.18 reports 0
        # after an OOM kill); a peak at the limit is the same evidence.
        if hits == 0 and (self.peak_bytes() or 0) >= self.limit_bytes:
            hits = 1
        return hits


class CgroupV2MemoryLimit(_CgroupMemoryLimit):
    """cgroup v2: ``memory.max`` with ``memory.swap.max = 0``; events from ``memory.events``."""

    version = 2

    def configure(self) -> None:
        _write(os.path.join(self.path, "memory.max"), str(self.limit_bytes))
        swap = os.path.join(self.path, "memory.swap.max")
        if os.path.exists(swap):
            with contextlib.suppress(OSError):
                _write(swap, "0")
        actual = _read_int(os.path.join(self.path, "memory.max"))
        if actual is not None:
            self.limit_bytes = actual

    def usage_bytes(self) -> int | None:
        return _read_int(os.path.join(self.path, "memory.current"))

    def peak_bytes(self) -> int | None:
        return _read_int(os.path.join(self.path, "memory.peak"))  # Linux >= 5.19

    def oom_kills(self) -> int:
        return _read_keyed(os.path.join(self.path, "memory.events")).get("oom_kill", 0)

    def limit_hits(self) -> int:
        hits = _read_keyed(os.path.join(self.path, "memory.events")).get("max", 0)
        if hits == 0 and (self.peak_bytes() or 0) >= self.limit_bytes:
            hits = 1
        return hits


# --------------------------------------------------------------------------- factory


def _safe_name(name: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_.-]", "_", name).strip(".") or "run"
    return "flightlog-" + cleaned[:80]


def _explain(exc: OSError, where: str, mount: _Mount) -> str:
    if exc.errno == errno.EROFS:
        return (
            f"the cgroup filesystem at {mount.point} is read-only (usual inside an unprivileged "
            "container; run it with a writable cgroup or --memory-limit-mode rlimit)"
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        who = "not root" if os.geteuid() != 0 else "root, but not permitted"
        return (
            f"not permitted to write {where} ({who}; a memory limit needs root or a "
            "cgroup delegated to this user)"
        )
    return f"cannot write {where}: {exc.strerror or exc}"


def _mkdir_child(base: str, name: str, mount: _Mount) -> str:
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


def _enable_v2_memory(base: str, mount: _Mount) -> None:
    controllers = (_read_text(os.path.join(base, "cgroup.controllers")) or "").split()
    if "memory" not in controllers:
        raise CgroupUnavailable(
            f"cgroup v2: the memory controller is not available in {base} "
            "(the parent cgroup does not delegate it)"
        )
    subtree = (_read_text(os.path.join(base, "cgroup.subtree_control")) or "").split()
    if "memory" in subtree:
        return
    try:
        _write(os.path.join(base, "cgroup.subtree_control"), "+memory")
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
    found = _memory_cgroup_dir()
    if found is None:
        raise CgroupUnavailable(
            "no memory cgroup controller is mounted on this machine (neither cgroup v2 with "
            "the memory controller nor a v1 memory hierarchy)"
        )
    version, base, mount = found
    if not os.path.isdir(base):
        raise CgroupUnavailable(
            f"this process's memory cgroup {base} is not visible (cgroup namespace or mount "
            "mismatch)"
        )
    if version == 2:
        _enable_v2_memory(base, mount)
    path = _mkdir_child(base, name, mount)
    limit: CgroupV1MemoryLimit | CgroupV2MemoryLimit = (
        CgroupV2MemoryLimit(path, limit_bytes)
        if version == 2
        else CgroupV1MemoryLimit(path, limit_bytes)
    )
    try:
        limit.configure()
    except OSError as exc:
        limit.close()
        raise CgroupUnavailable(_explain(exc, path, mount), details={"path": path}) from exc
    return limit


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


def find_memory_cgroup(pid: int | None = None) -> tuple[int, str, str] | None:
    """(version, directory, mount point) of a process's memory cgroup, or None.

    Resolved once by the sampler, so each sample costs two small reads, not a mount scan.
    """
    found = _memory_cgroup_dir("self" if pid is None else pid)
    return None if found is None else (found[0], found[1], found[2].point)


def read_cgroup_memory(found: tuple[int, str, str] | None) -> tuple[int | None, int | None]:
    """(usage, effective limit) of a cgroup located by `find_memory_cgroup`."""
    if found is None:
        return None, None
    version, path, mount_point = found
    if version == 1:
        usage = _read_int(os.path.join(path, "memory.usage_in_bytes"))
        limit = _read_keyed(os.path.join(path, "memory.stat")).get("hierarchical_memory_limit")
        if limit is None:
            limit = _read_int(os.path.join(path, "memory.limit_in_bytes"))
    else:
        usage = _read_int(os.path.join(path, "memory.current"))
        limit = None
        cur = os.path.normpath(path)
        top = os.path.normpath(mount_point)
        while cur.startswith(top):
            value = _read_int(os.path.join(cur, "memory.max"))
            if value is not None:
                limit = value if limit is None else min(limit, value)
            if cur == top:
                break
            cur = os.path.dirname(cur)
    if limit is not None and limit >= _UNLIMITED:
        limit = None
    return usage, limit


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
