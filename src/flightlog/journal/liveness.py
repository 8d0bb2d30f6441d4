"""Is the process that writes a journal, or owns a run, still running?

One answer for every reader (``flightlog sync``, the Client's reconciliation behind
``flightlog runs ls``), so they agree on when a run whose process vanished is ``crashed``.

A number alone does not name a process: pids are reused. A process is the one recorded when
it started no later than the record says. Wall-clock times are not enough for that: psutil's
``create_time`` is the boot time plus the process's age since boot, and the boot time moves
with the clock, so after an NTP step or a VM resume of +5 s every live process seems to have
started 5 s after it did. So a writer also records its own ``create_time`` and the boot time
as psutil reported them then (:func:`process_identity`); a reader compares like with like,
the recorded start moved by however much the boot time moved since. A reused pid started
later than the recorded process did: it differs by that much whatever the clock did.
"""

from __future__ import annotations

import os
import socket

__all__ = ["process_alive", "process_identity", "SLACK_S"]

SLACK_S = 1.0  # create_time comes from clock ticks and a boot time in whole seconds

_identity: tuple[int, dict[str, float]] | None = None


def process_identity() -> dict[str, float]:
    """This process's start and the host's boot time as psutil reports them now (empty when it
    cannot tell): what a later reader needs to recognise this process across clock steps."""
    global _identity
    pid = os.getpid()
    if _identity is None or _identity[0] != pid:
        found = _proc_identity(pid)
        if found is None:
            try:
                import psutil

                found = {"process_start": float(psutil.Process(pid).create_time()), "boot": float(psutil.boot_time())}
            except Exception:  # noqa: BLE001 - liveness then falls back to the recorded wall-clock start
                return {}
        _identity = (pid, found)
    return dict(_identity[1])


def _proc_identity(pid: int) -> dict[str, float] | None:
    """:func:`process_identity` read from Linux's /proc as psutil reads it (the same numbers, the
    same arithmetic), so that an SDK run's process needs no psutil (~30 ms of CPU to import) to
    say who it is: under ``flightlog run`` the runner samples the workload, and nothing else in
    the workload's process uses psutil. None where /proc does not answer (then psutil does)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            start_ticks = float(f.read().rsplit(b")", 1)[1].split()[19])
        with open("/proc/stat", "rb") as f:
            boot = next(float(line.split()[1]) for line in f if line.startswith(b"btime"))
        return {"process_start": start_ticks / os.sysconf("SC_CLK_TCK") + boot, "boot": boot}
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def process_alive(
    pid: object,
    started: float | None,
    host: str | None = None,
    *,
    process_start: float | None = None,
    boot: float | None = None,
) -> bool:
    """False when ``pid`` on this host has ended, is a zombie or being torn down (:func:`_dying`),
    or is a newer process that reused the number. With ``process_start`` and ``boot`` (from
    :func:`process_identity` in the writer), the process must be that one, whatever the clock
    did since; else, and also, one that started no later than a second after ``started``
    counts. A process on another host cannot be checked from here and counts as alive."""
    if host is not None and host != socket.gethostname():
        return True
    import psutil

    try:
        proc = psutil.Process(int(pid))  # type: ignore[call-overload]
        created = proc.create_time()
        same = started is None or created <= float(started) + SLACK_S
        if not same and process_start is not None and boot is not None:
            expected = float(process_start) + (psutil.boot_time() - float(boot))  # the clock's step since
            same = abs(created - expected) <= SLACK_S
        if not same:
            return False
        return bool(proc.status() != psutil.STATUS_ZOMBIE) and not _dying(proc.pid)
    except (psutil.NoSuchProcess, psutil.AccessDenied, TypeError, ValueError):
        return False


#: the kernel's flag on a task that has begun to exit (include/linux/sched.h)
_PF_EXITING = 0x4
_SIGKILL_BIT = 1 << 8  # signal 9 in /proc's pending-signal masks


def _dying(pid: int) -> bool:
    """A process that SIGKILL (or its own exit) has doomed but that is not a zombie yet: the
    kernel is still tearing it down — freeing its memory takes tens of milliseconds per 100 MB —
    while /proc says it runs. Its sockets are closed already, so a peer rank sees it gone and
    settles it as it ends (``journal/sync.py``): read as alive, it was never settled and the
    job's run stayed ``running``. Such a process never runs another line of its own: its exit
    has begun (``PF_EXITING`` in its flags) or a SIGKILL waits for it. False where /proc does
    not say (not Linux): then its status alone decides, as before."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            pending = [line.split()[1] for line in f if line.startswith((b"SigPnd:", b"ShdPnd:"))]
        with open(f"/proc/{pid}/stat", "rb") as f:
            flags = int(f.read().rsplit(b")", 1)[1].split()[6])
    except (OSError, ValueError, IndexError):
        return False
    return bool(flags & _PF_EXITING) or any(int(mask, 16) & _SIGKILL_BIT for mask in pending)
