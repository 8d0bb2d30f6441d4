"""Finding a process's memory cgroup and reading cgroup files, for cgroup v1 and v2.

Why apart from cgroup.py: the sampler needs only this (a container's usage and limit, two
small reads per sample), and the mount/path rules are their own subject: a controller lives in
exactly one hierarchy, ``/proc/<pid>/cgroup`` names paths relative to the hierarchy's root, and
a container may have a sub-tree mounted as its root (``mountinfo`` says which).
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass

__all__ = [
    "UNLIMITED",
    "Mount",
    "cgroup_mounts",
    "find_memory_cgroup",
    "memory_cgroup_dir",
    "proc_cgroups",
    "read_cgroup_memory",
    "read_int",
    "read_keyed",
    "read_text",
    "write",
]

# The kernel's "no limit" in v1 is PAGE_COUNTER_MAX * page size (9223372036854771712 on x86-64);
# anything this large is unlimited for our purposes.
UNLIMITED = 1 << 62


@dataclass(frozen=True)
class Mount:
    root: str
    point: str
    fstype: str
    options: frozenset[str]


_OCTAL = re.compile(r"\\([0-7]{3})")  # compiled at import, not in each (forked) runner


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo.
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def cgroup_mounts() -> list[Mount]:
    """The cgroup hierarchies mounted here. The table is read each time (a mount may come or
    go); parsed only when it changed, so a runner forked from the pipeline's warm runner, which
    read it once, pays a read for it, not a parse per step."""
    global _parsed
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return []
    if _parsed is None or _parsed[0] != text:
        _parsed = (text, _parse_mounts(text))
    return list(_parsed[1])


_parsed: tuple[str, list[Mount]] | None = None  # (mountinfo's text, its cgroup mounts)


def _parse_mounts(text: str) -> list[Mount]:
    mounts: list[Mount] = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        mounts.append(
            Mount(
                root=_unescape(fields[3]),
                point=_unescape(fields[4]),
                fstype=tail[0],
                options=frozenset(tail[2].split(",")),
            )
        )
    return mounts


def proc_cgroups(pid: int | str) -> tuple[str | None, str | None]:
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


def _join(mount: Mount, cgroup_path: str) -> str:
    """Directory of ``cgroup_path`` under ``mount``, allowing for a mount of a sub-tree."""
    rel = cgroup_path
    if mount.root != "/" and (rel == mount.root or rel.startswith(mount.root + "/")):
        rel = rel[len(mount.root) :]
    return os.path.join(mount.point, rel.lstrip("/"))


def read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def read_int(path: str) -> int | None:
    text = read_text(path)
    if text is None:
        return None
    text = text.strip()
    if text == "max":
        return None
    try:
        return int(text)
    except ValueError:
        return None


def read_keyed(path: str) -> dict[str, int]:
    """Parse flat keyed files: ``memory.events``, ``memory.stat``, ``memory.oom_control``."""
    out: dict[str, int] = {}
    for line in (read_text(path) or "").splitlines():
        key, _, value = line.partition(" ")
        with contextlib.suppress(ValueError):
            out[key] = int(value)
    return out


def write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode("ascii"))
    finally:
        os.close(fd)


def memory_cgroup_dir(pid: int | str = "self") -> tuple[int, str, Mount] | None:
    """(version, directory, mount) of the memory cgroup ``pid`` is in, or None."""
    mounts = cgroup_mounts()
    v1_path, v2_path = proc_cgroups(pid)
    for m in mounts:
        if m.fstype == "cgroup" and "memory" in m.options and v1_path is not None:
            return 1, _join(m, v1_path), m
    for m in mounts:
        if m.fstype == "cgroup2" and v2_path is not None:
            controllers = (read_text(os.path.join(m.point, "cgroup.controllers")) or "").split()
            if "memory" in controllers or read_text(os.path.join(m.point, "memory.stat")):
                return 2, _join(m, v2_path), m
    return None


def find_memory_cgroup(pid: int | None = None) -> tuple[int, str, str] | None:
    """(version, directory, mount point) of a process's memory cgroup, or None.

    Resolved once by the sampler, so each sample costs two small reads, not a mount scan.
    """
    found = memory_cgroup_dir("self" if pid is None else pid)
    return None if found is None else (found[0], found[1], found[2].point)


def read_cgroup_memory(found: tuple[int, str, str] | None) -> tuple[int | None, int | None]:
    """(usage, effective limit) of a cgroup located by `find_memory_cgroup`."""
    if found is None:
        return None, None
    version, path, mount_point = found
    if version == 1:
        usage = read_int(os.path.join(path, "memory.usage_in_bytes"))
        limit = read_keyed(os.path.join(path, "memory.stat")).get("hierarchical_memory_limit")
        if limit is None:
            limit = read_int(os.path.join(path, "memory.limit_in_bytes"))
    else:
        usage = read_int(os.path.join(path, "memory.current"))
        limit = None
        cur = os.path.normpath(path)
        top = os.path.normpath(mount_point)
        while cur.startswith(top):
            value = read_int(os.path.join(cur, "memory.max"))
            if value is not None:
                limit = value if limit is None else min(limit, value)
            if cur == top:
                break
            cur = os.path.dirname(cur)
    if limit is not None and limit >= UNLIMITED:
        limit = None
    return usage, limit
