"""What the runner's bootstrap does inside a rank that has no flightlog SDK of its own.

``flightlog run`` puts ``agent/_boot`` first on ``PYTHONPATH`` for its workload: Python imports
its ``sitecustomize`` at start-up, which (for the runner's own child and for processes a
launcher made ranks, nothing else: it decides from the environment before loading anything)
loads this package under a private name and calls `start`.
Then the rank has what ``flightlog.init()`` would have given it for hangs:

* the hang watch (`RankWatch`), its records handed to the runner through files (`FileChannel`);
* faulthandler registered on the hang signal (``FLIGHTLOG_HANG_SIGNAL``), chained to any
  handler already there, writing into the channel's directory: the runner's fallback when the
  watch's thread cannot run (C code holding the GIL);
* the uncaught exception of the rank, handed over with its rank (``rank_error``), then passed
  to the hook that was there before: the runner cannot tell which rank printed a traceback when
  the launcher does not prefix lines (Lightning's ranks share one stderr).

Why it is safe: standard library only, nothing imported that the workload would not import,
one daemon thread that sleeps between looks at a few counters, every step guarded, and any
failure leaves the process exactly as Python would have started it.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import time

from .channel import FileChannel
from .settings import HangSettings, chains
from .watch import RankWatch, process_identity

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing into a workload at start-up
if TYPE_CHECKING:
    from typing import Any

__all__ = ["start", "RUNNER_PID_VAR"]

RUNNER_PID_VAR = "FLIGHTLOG_RUNNER_PID"
_kept: list[Any] = []  # the faulthandler file: open for the life of the process


def start(directory: str) -> RankWatch | None:
    """Start the watch of this process (see the module docstring); None when the settings turn it off."""
    if not os.path.isdir(directory):
        return None
    settings = HangSettings.from_env()
    if not settings.enabled:
        return None
    channel = FileChannel(directory)
    extra: dict[str, Any] = {"source": "bootstrap", "python": sys.version.split()[0], "started": time.time()}
    if settings.signal is not None:
        try:
            fh = open(channel.faulthandler_file, "a", encoding="utf-8")  # noqa: SIM115 - open for the life of the process
            faulthandler.register(settings.signal, file=fh, all_threads=True, chain=chains(settings.signal))
            _kept.append(fh)
            extra.update(signal=settings.signal, faulthandler_file=channel.faulthandler_file)
        except (OSError, RuntimeError, ValueError):
            pass

    def announce(identity: dict[str, Any]) -> None:
        try:
            channel.announce(identity, **extra)
        except OSError:
            pass

    watch = RankWatch(
        settings,
        channel.deliver,
        source="bootstrap",
        request_file=channel.request_file,
        on_identity=announce,
    )
    announce(process_identity())
    _hook_exceptions(channel)
    return watch.start()


def _hook_exceptions(channel: FileChannel) -> None:
    previous = sys.excepthook

    def excepthook(exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            ident = process_identity()
            # a rank's own error; a process that is no rank (a launcher: torchrun's
            # ChildFailedError) says nothing about a rank, and the runner captures it anyway
            if ident.get("rank") is not None and not issubclass(exc_type, (KeyboardInterrupt, SystemExit)):
                import traceback  # here: most ranks never need it, and the bootstrap runs at every start-up

                text = "".join(traceback.format_exception(exc_type, exc, tb))[-20_000:]
                data = {
                    **ident,
                    "time": time.time(),
                    "type": getattr(exc_type, "__name__", str(exc_type)),
                    "message": str(exc)[:2000],
                    "traceback": text,
                }
                channel.deliver("rank_error", f"rank{ident.get('rank')}-{int(data['time'] * 1000)}", data)
        except Exception:
            pass
        previous(exc_type, exc, tb)

    sys.excepthook = excepthook
