"""Start a thread on the CPU of the thread that starts it (Linux; elsewhere, a plain start).

``threading.Thread.start`` returns once the new thread has run. Linux puts a new thread on the
CPU it judges least loaded, and on a machine whose other CPUs are busy (a shared VM, a data
loader's workers) that can be a queue behind another process's time slice while the starter's
own CPU sits idle, waiting for it: on the 2-core VM of ``bench/many_runs.py`` one start of the
hang watch's thread in six took 0.5–7 ms instead of ~50 µs, 0.4 ms a run on average (issue 32,
``bench/README.md``). A new thread inherits its starter's CPU affinity, so the starter pins
itself to the CPU it runs on for the length of ``start()``: the new thread runs there as soon
as the starter waits for it. Then both get the starter's mask back (the new thread by its
native id), so the new thread runs, and ends, wherever the scheduler likes from then on.

Only from a process's second start on: a process that starts one watch (a training job) pays
neither the ``ctypes`` import (~2 ms) nor the system calls (~15 µs of CPU a start). Standard library
only (see ``agent/__init__.py``); never raises: any failure is a plain start.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing into a workload at start-up
if TYPE_CHECKING:
    import threading
    from collections.abc import Callable

__all__ = ["start_beside"]

_starts = 0
_getcpu: Callable[[], int] | None = None
_usable = hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity")


def start_beside(thread: threading.Thread) -> None:
    """Start ``thread`` on the caller's CPU, then let both run on the caller's CPUs again (see
    the module docstring)."""
    global _starts
    _starts += 1
    mask = _pinned_to_here() if _starts > 1 else None
    if mask is None:
        thread.start()
        return
    try:
        thread.start()
    finally:
        _set_mask(0, mask)
    native = getattr(thread, "native_id", None)
    if native is not None and thread.is_alive():  # (an id of a thread that ended may be another's by now)
        _set_mask(native, mask)


def _pinned_to_here() -> set[int] | None:
    """Pin the calling thread to the CPU it runs on; its mask before, or None (not pinned)."""
    global _getcpu, _usable
    if not _usable:
        return None
    try:
        if _getcpu is None:
            import ctypes  # here: a process's first start does not pay for it

            getcpu = ctypes.CDLL(None, use_errno=True).sched_getcpu
            getcpu.restype = ctypes.c_int
            getcpu.argtypes = []
            _getcpu = getcpu
        cpu = _getcpu()
        mask = os.sched_getaffinity(0)
        if cpu < 0 or cpu not in mask or len(mask) < 2:
            return None
        os.sched_setaffinity(0, (cpu,))
        return mask
    except (AttributeError, OSError, ValueError, ImportError):
        _usable = False  # no sched_getcpu, or the affinity is not ours to set (a sandbox): plain starts
        return None


def _set_mask(tid: int, mask: set[int]) -> None:
    """Give thread ``tid`` (0: the caller) ``mask`` back; when the system no longer takes it (its
    cpuset changed meanwhile), every CPU the system allows: never left pinned to one."""
    try:
        os.sched_setaffinity(tid, mask)
    except (OSError, ValueError):
        try:
            os.sched_setaffinity(tid, range(os.cpu_count() or 1))  # the kernel keeps the cpuset's part
        except (OSError, ValueError):
            pass


def _reset_after_fork() -> None:
    global _starts
    _starts = 0  # a forked child's first start is a plain one again


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
