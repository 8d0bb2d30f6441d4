"""The hang watch's settings, read from the environment, and the identity of a rank.

The SDK and the runner check these variables strictly before a run starts (``config.py``
declares them, with their documentation; a bad value is a clear error there). Here, inside
a workload the runner's bootstrap may have entered, a value that does not parse falls back to
its default with one notice: the watch must never stop the program it watches.

Why these defaults (docs/distributed.md, "Hangs found while they happen"):

* a rank counts as stalled after ``FACTOR`` × its usual time between signs of progress, at
  least ``MIN`` seconds and at most ``MAX``: NCCL's collective timeout is 10 minutes by
  default and gloo's 30, so 5 minutes at most finds a hang with time to spare before the
  watchdog kills the job, and one minute at least keeps a slow step from reading as a hang;
  a job that sets a shorter timeout on its process group is judged at half of it at most
  (``GROUP_TIMEOUT_SHARE``), or the job would be torn down before its evidence is taken; its own
  slower rhythm may raise that, never past ``TEARDOWN_SHARE`` of the timeout (a loaded machine
  stretches a recovered pause, and a stall judged after the others' timeout has no evidence);
* a stalled rank's evidence is taken again every ``REPEAT`` seconds while it stays stuck, at
  most ``DUMPS`` times: enough to tell a slow read from a dead one, bounded for a job that
  waits all night;
* the Flight Recorder keeps the last ``FR_BUFFER`` collectives of each process group (the
  size PyTorch's tutorial suggests; some hundred kilobytes per rank).
"""

from __future__ import annotations

import os
import sys

try:  # the C module `signal` wraps: its numbers and getsignal, without the enum classes `signal`
    import _signal as signal  # builds at import (with `enum`, a few ms of every workload's start-up)
except ImportError:  # another Python than CPython
    import signal

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing into a workload at start-up
if TYPE_CHECKING:
    from collections.abc import Mapping  # (collections.abc imports the collections package: start-up cost)
    from typing import Any

__all__ = [
    "HangSettings",
    "DEFAULTS",
    "VARIABLES",
    "parse_signal",
    "chains",
    "rank_env",
    "say",
    "hostname",
    "HANG_DIR_VAR",
    "GROUP_TIMEOUT_SHARE",
    "TEARDOWN_SHARE",
]

#: at most this share of the process group's timeout passes before a stall is judged (see `threshold`)
GROUP_TIMEOUT_SHARE = 0.5
#: ... and never later than this share of it, whatever the process's own rhythm: past the group's
#: timeout the waiting ranks fail and the launcher stops the stuck one before its stacks are taken
TEARDOWN_SHARE = 0.8
HANG_DIR_VAR = "FLIGHTLOG_HANG_DIR"  # set by `flightlog run` for its children: where the ranks' agents meet it

#: variable → (field, default as text, kind)
VARIABLES: dict[str, tuple[str, str, str]] = {
    "FLIGHTLOG_HANG_WATCH": ("enabled", "on", "switch"),
    "FLIGHTLOG_HANG_FACTOR": ("factor", "10", "number"),
    "FLIGHTLOG_HANG_MIN": ("floor", "60", "seconds"),
    "FLIGHTLOG_HANG_MAX": ("ceiling", "300", "seconds"),
    "FLIGHTLOG_HANG_REPEAT": ("repeat", "300", "seconds"),
    "FLIGHTLOG_HANG_DUMPS": ("dumps", "3", "count"),
    "FLIGHTLOG_HANG_SIGNAL": ("signal", "SIGRTMIN+7", "signal"),
    "FLIGHTLOG_FR_BUFFER": ("fr_buffer", "2000", "count0"),
    "FLIGHTLOG_COLLECTIVE_SAMPLE": ("sample_every", "60", "seconds0"),
}


class HangSettings:
    """Immutable, compared and hashed by value, like a frozen dataclass; written out because
    ``dataclasses`` (with ``inspect``, ``ast``, ``dis``, ``tokenize``) would cost a workload
    that the bootstrap enters several milliseconds of start-up for one class."""

    __slots__ = ("enabled", "factor", "floor", "ceiling", "repeat", "dumps", "signal", "fr_buffer", "sample_every")
    enabled: bool
    factor: float
    floor: float
    ceiling: float
    repeat: float
    dumps: int
    signal: int | None  # None: no signal registered
    fr_buffer: int
    sample_every: float  # 0: no samples of the collectives' timing

    def __init__(
        self,
        enabled: bool = True,
        factor: float = 10.0,
        floor: float = 60.0,
        ceiling: float = 300.0,
        repeat: float = 300.0,
        dumps: int = 3,
        signal: int | None = None,
        fr_buffer: int = 2000,
        sample_every: float = 60.0,
    ) -> None:
        values = (enabled, factor, floor, ceiling, repeat, dumps, signal, fr_buffer, sample_every)
        for name, value in zip(self.__slots__, values):  # noqa: B905 - the agent runs on Python 3.8 too
            object.__setattr__(self, name, value)

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: HangSettings is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: HangSettings is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HangSettings) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "HangSettings(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")"

    @property
    def poll(self) -> float:
        """Seconds between two looks at the progress counters: a small share of the floor."""
        return max(0.05, min(1.0, self.floor / 8))

    def threshold(
        self, usual: float | None, longest: float, ranked: bool, group_timeout: float | None = None
    ) -> float | None:
        """Seconds without progress that count as stalled, given the usual time between signs of
        progress and the longest pause the process recovered from; None: not judged yet (a
        single process before its first step: a long start is no hang).

        ``group_timeout`` is the shortest timeout of the process's torch process groups
        (`groups.group_timeout`): a collective that waits that long fails and the launcher
        tears the job down, so a stall is judged at most at ``GROUP_TIMEOUT_SHARE`` of it —
        below the floor if need be — unless the process's own rhythm says that is normal for
        it (twice its usual gap, 1.5 × the longest pause it recovered from) — and even then at most
        ``TEARDOWN_SHARE`` of it: a pause stretched by a loaded machine (a first collective that
        took 4.5 s under a 6 s timeout) must not move the judgement past the teardown, where the
        stuck rank is stopped before anything says where it was."""
        if usual is None:
            judged: float | None = self.ceiling if ranked else None
        else:
            judged = max(self.floor, min(self.ceiling, max(self.factor * usual, 1.5 * longest)))
        if judged is None or group_timeout is None or group_timeout <= 0:
            return judged
        own = max(2.0 * usual, 1.5 * longest) if usual is not None else 0.0
        own = min(own, TEARDOWN_SHARE * group_timeout)
        return min(judged, max(GROUP_TIMEOUT_SHARE * group_timeout, own))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, strict: bool = False) -> HangSettings:
        """The settings in ``environ``; ``strict`` raises ValueError naming the variable for a
        bad value (the SDK and the runner), else the default stands and the problem is said once
        on stderr (the bootstrap inside a workload)."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, (field_name, default, kind) in VARIABLES.items():
            raw = env.get(name, "").strip()
            try:
                values[field_name] = _parse(kind, raw or default)
            except ValueError as exc:
                if strict:
                    raise ValueError(f"{name}={raw!r}: {exc}") from None
                say(f"{name}={raw!r} ignored ({exc}); using {default}")
                values[field_name] = _parse(kind, default)
        settings = cls(**values)
        if settings.floor > settings.ceiling:
            problem = f"FLIGHTLOG_HANG_MIN ({settings.floor:g} s) is above FLIGHTLOG_HANG_MAX ({settings.ceiling:g} s)"
            if strict:
                raise ValueError(problem + ": make the floor the smaller one")
            say(problem + f"; using {settings.floor:g} s for both")
            settings = cls(**{**values, "ceiling": settings.floor})
        return settings


DEFAULTS = HangSettings(signal=None)


def _parse(kind: str, text: str) -> Any:
    if kind == "switch":
        low = text.lower()
        if low in ("on", "1", "true", "yes"):
            return True
        if low in ("off", "0", "false", "no"):
            return False
        raise ValueError("use on or off")
    if kind == "signal":
        return parse_signal(text)
    if kind in ("count", "count0"):
        if not _digits(text):
            raise ValueError("not a whole number")
        value = int(text)
        if kind == "count" and value < 1:
            raise ValueError("must be at least 1")
        return value
    try:
        number = float(text)
    except ValueError:
        raise ValueError("not a number" + (" of seconds" if kind.startswith("seconds") else "")) from None
    if number != number or number in (float("inf"), float("-inf")):
        raise ValueError("not a finite number")
    if number < 0 or (number == 0 and kind != "seconds0"):
        raise ValueError("must be greater than 0")
    if kind == "number" and number < 1:
        raise ValueError("must be at least 1")
    return number


def parse_signal(text: str) -> int | None:
    """``SIGRTMIN+7``, ``RTMIN+7``, ``SIGUSR2``, ``44`` → a signal number; ``off`` → None.

    Refuses the signals whose default action matters to training jobs (SIGTERM, SIGINT,
    SIGKILL, SIGSTOP, SIGCONT, SIGCHLD) and SIGUSR1, which Lightning and Slurm use to requeue."""
    value = text.strip().upper()
    if value in ("OFF", "NONE", "0", ""):
        return None
    name = value if value.startswith("SIG") or value.isdigit() else "SIG" + value
    realtime = _realtime(name)
    rtmin, rtmax = getattr(signal, "SIGRTMIN", None), getattr(signal, "SIGRTMAX", None)
    if realtime is not None:
        if rtmin is None or rtmax is None:
            raise ValueError("real-time signals do not exist on this platform")
        end, offset = realtime
        number = int(rtmin if end == "MIN" else rtmax) + offset
        if not int(rtmin) <= number <= int(rtmax):
            raise ValueError(f"outside SIGRTMIN..SIGRTMAX ({int(rtmin)}..{int(rtmax)})")
    elif name.isdigit():
        number = int(name)
    else:
        found = getattr(signal, name, None)
        if not isinstance(found, int):
            raise ValueError("not a signal name (e.g. SIGRTMIN+7, SIGUSR2) or number")
        number = int(found)
    forbidden = {
        int(getattr(signal, n))
        for n in ("SIGTERM", "SIGINT", "SIGKILL", "SIGSTOP", "SIGCONT", "SIGCHLD", "SIGUSR1", "SIGSEGV", "SIGABRT")
        if hasattr(signal, n)
    }
    if number in forbidden:
        raise ValueError("that signal has another job in training processes (Lightning and Slurm use SIGUSR1)")
    if not 1 <= number < getattr(signal, "NSIG", 65):
        raise ValueError("not a valid signal number")
    return number


def _digits(text: str) -> bool:
    """``[0-9]+`` without ``re`` (which a workload's start-up would pay for, with ``enum``)."""
    return text.isascii() and text.isdigit()


def _realtime(name: str) -> tuple[str, int] | None:
    """``SIGRTMIN``, ``SIGRTMAX-2``, ``SIGRTMIN+7`` → (``MIN`` or ``MAX``, offset); None for any other name."""
    if not name.startswith(("SIGRTMIN", "SIGRTMAX")):
        return None
    rest = name[len("SIGRTMIN") :]
    if not rest:
        return name[5:8], 0
    if rest[0] in "+-" and _digits(rest[1:]):
        return name[5:8], int(rest)
    return None


def chains(signum: int) -> bool:
    """Whether faulthandler should pass ``signum`` on to the handler already there after its dump:
    only a real handler. Chaining to the default action of a real-time signal would end the
    process (faulthandler re-raises the signal with the previous disposition)."""
    try:
        previous = signal.getsignal(signum)
    except (ValueError, OSError):
        return False
    return callable(previous)


def rank_env(environ: Mapping[str, str] | None = None) -> dict[str, int | None]:
    """The rank a launcher gave this process in its environment: ``rank``, ``local_rank``,
    ``world_size``, ``node_rank`` (torchrun, Lightning, Accelerate, DeepSpeed, Slurm, Open MPI,
    PMI); None for what is not there."""
    env = os.environ if environ is None else environ

    def first(*names: str) -> int | None:
        for name in names:
            value = env.get(name, "").strip()
            if _digits(value[1:] if value.startswith("-") else value):
                return int(value)
        return None

    return {
        "rank": first("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"),
        "local_rank": first("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"),
        "world_size": first("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"),
        "node_rank": first("GROUP_RANK", "NODE_RANK", "SLURM_NODEID"),
    }


def hostname() -> str | None:
    """This host's name, as ``socket.gethostname()`` gives it (on POSIX, ``uname``'s node name:
    the same system call) without importing ``socket`` into a workload at start-up; None if unknown."""
    try:
        if hasattr(os, "uname"):
            return os.uname().nodename
        import socket

        return socket.gethostname()
    except Exception:
        return None


def say(message: str) -> None:
    """The agent's one line on stderr, ``flightlog:`` first like every notice of flightlog's; its
    own because this package runs where flightlog may not be importable (``notices.py`` is the
    rest of flightlog's). Never raises."""
    try:
        sys.stderr.write(f"flightlog: {message}\n")
        sys.stderr.flush()
    except Exception:
        pass
