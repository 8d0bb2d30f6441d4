"""Disk use of a working directory, measured with a bounded walk.

Why bounded: a run's working directory can hold a dataset of millions of files, a virtual
environment or a network mount, and the probe runs on the sampler thread inside the runner or
the training process. Each entry costs one ``lstat`` (about 3 microseconds of CPU on a VM), so
the walk stops at a cap of entries (30,000: about 0.1 CPU-second) and of wall time (1 s, for
slow network filesystems) and says the figure is partial. It goes breadth-first, so a capped
walk has still counted the top-level files (checkpoints, outputs) rather than one deep tree.
It never follows symlinks, stays on the directory's own filesystem (like ``du -x``), and counts
a hard-linked file once. Sizes are allocated blocks (what ``du`` reports), not apparent sizes, since the
question it answers is "is this run filling the disk".
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass

__all__ = ["DiskUsage", "disk_usage"]


@dataclass(frozen=True)
class DiskUsage:
    bytes: int
    entries: int
    partial: bool  # stopped at a cap, or some directory could not be read


def disk_usage(path: str, *, max_entries: int = 30_000, max_seconds: float = 1.0) -> DiskUsage:
    """Allocated bytes under ``path`` (not following symlinks, not crossing mounts)."""
    try:
        top = os.stat(path, follow_symlinks=False)
    except OSError:
        return DiskUsage(0, 0, True)
    device = top.st_dev
    total = top.st_blocks * 512
    entries = 0
    partial = False
    seen_links: set[int] = set()
    deadline = time.monotonic() + max_seconds
    queue = deque([path])
    while queue:
        current = queue.popleft()
        try:
            it = os.scandir(current)
        except FileNotFoundError:
            continue
        except OSError:
            partial = True
            continue
        with it:
            for entry in it:
                entries += 1
                if entries > max_entries or (entries % 1024 == 0 and time.monotonic() > deadline):
                    return DiskUsage(total, entries - 1, True)
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                except OSError:
                    partial = True
                    continue
                if st.st_nlink > 1 and not entry.is_dir(follow_symlinks=False):
                    if st.st_ino in seen_links:
                        continue
                    seen_links.add(st.st_ino)
                total += st.st_blocks * 512
                if st.st_dev == device and entry.is_dir(follow_symlinks=False):
                    queue.append(entry.path)
    return DiskUsage(total, entries, partial)
