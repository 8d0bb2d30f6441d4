"""The hang watch of a process that called ``flightlog.init()`` (docs/distributed.md).

One watch per process (`flightlog.resources.agent.RankWatch`), whatever the number of runs in
it; each run adds its signs of progress (its step counter, its finished stages, its
heartbeats), read by the watch's own thread, so ``run.log`` pays nothing for it. What the watch
records goes on the run as evidence (``stall``, ``stacks``, ``flight_recorder``,
``collectives``), with a warning event and one line on stderr when the process stalls.

Inside a ``flightlog run`` workload the runner's bootstrap may already run a watch in this
process: the run then only adds its progress to that one, whose evidence reaches the run
through the runner (one watch, one record of each stall).

Turned on where ``init()`` samples the process's resources (the process that trains; not
``flightlog run``, a pipeline's controller or a sweep's driver, which pass ``resources=False``),
except in a notebook's kernel (progress stops there whenever the person does); ``FLIGHTLOG_HANG_WATCH=off`` turns it off. For
torch jobs it also turns the Flight Recorder on (``TORCH_FR_BUFFER_SIZE``) when the process
group does not exist yet and the variable is not set.
"""

from __future__ import annotations

import faulthandler
import os
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flightlog.errors import InvalidInput
from flightlog.notices import notice
from flightlog.resources.agent.channel import FileChannel
from flightlog.resources.agent.settings import HANG_DIR_VAR, VARIABLES, HangSettings, chains
from flightlog.resources.agent.watch import RankWatch, stalled_text

if TYPE_CHECKING:
    from flightlog.sdk.run import Run

__all__ = ["hang_settings", "watch_run", "unwatch_run", "join_stopped"]

_lock = threading.Lock()
_own: RankWatch | None = None  # the watch this module started (not the bootstrap's)
_runs: dict[str, Run] = {}
_stopping: list[RankWatch] = []  # stopped by unwatch_run, their threads not joined yet
_fh_file: Any = None  # faulthandler's file, open for the life of the process


def hang_settings(environ: Mapping[str, str] | None = None) -> HangSettings:
    """The hang watch's settings from the environment (``environ``: a view of it,
    ``config.EnvironView``); a bad value is the caller's to fix. Read again only when one of its
    variables changed (a sweep's thousand ``init()`` calls parse them once)."""
    global _settings
    env = os.environ if environ is None else environ
    key = tuple(env.get(name) for name in VARIABLES)
    if _settings is not None and _settings[0] == key:
        return _settings[1]
    try:
        settings = HangSettings.from_env(env, strict=True)
    except ValueError as exc:
        raise InvalidInput(f"{exc} (docs/configuration.md lists the hang watch's settings)") from None
    _settings = (key, settings)
    return settings


_settings: tuple[tuple[str | None, ...], HangSettings] | None = None


def _bootstrap_watch() -> Any:
    """The watch the runner's bootstrap started in this process, if any (loaded under its own name)."""
    module = sys.modules.get("_flightlog_agent.watch")
    current = getattr(module, "current_watch", None)
    try:
        return current() if current is not None else None
    except Exception:
        return None


def _in_notebook() -> bool:
    if "IPython" not in sys.modules:
        return False
    try:
        from flightlog.sdk.notebook import kernel_shell  # only where IPython is loaded (it imports IPython's)

        return kernel_shell() is not None
    except Exception:
        return False


def watch_run(run: Run, settings: HangSettings) -> None:
    """Watch ``run``'s progress from this process (see the module docstring); never raises."""
    if not settings.enabled or _in_notebook():
        return
    try:
        _turn_flight_recorder_on(settings)
        progress = _progress_of(run)
        boot = _bootstrap_watch()
        if boot is not None:
            boot.add_source(f"run:{run.id}", progress)
            boot.set_stages(lambda: _stages_of(run))
            return
        global _own
        with _lock:
            _runs[run.id] = run
            if _own is None or not _own.alive:
                _own = _start(settings)
            _own.add_source(f"run:{run.id}", progress)
            _own.set_stages(lambda: _stages_of(run))
    except Exception as exc:  # the run goes on without it
        notice(f"the hang watch is off for this run: {type(exc).__name__}: {exc}")


def unwatch_run(run: Run) -> None:
    """``run`` finished: its progress no longer counts; the watch stops with the last run (told
    here, its thread joined by :func:`join_stopped` once the run's last records are stored)."""
    global _own
    try:
        boot = _bootstrap_watch()
        if boot is not None:
            getattr(boot, "settle", lambda: None)()
            boot.remove_source(f"run:{run.id}")
        watch = _own
        if watch is not None:
            watch.settle()  # a stall the run's last steps ended is recorded as resumed
        with _lock:
            _runs.pop(run.id, None)
            watch = _own
            if watch is None:
                return
            watch.remove_source(f"run:{run.id}")
            if not _runs:
                _own = None
        if not _runs:
            watch.stop(wait=False)
            _stopping.append(watch)
    except Exception:
        pass


def join_stopped() -> None:
    """Wait for the threads of the watches :func:`unwatch_run` stopped: once ``finish()``
    returns, no watch thread of a finished process's runs is left. Never raises."""
    try:
        while _stopping:
            _stopping.pop().join()
    except Exception:
        pass


def _start(settings: HangSettings) -> RankWatch:
    directory = os.environ.get(HANG_DIR_VAR)
    channel = FileChannel(directory) if directory and os.path.isdir(directory) else None
    _register_faulthandler(settings, channel)
    watch = RankWatch(
        settings,
        _deliver,
        source="sdk",
        request_file=channel.request_file if channel is not None else None,
        on_identity=(lambda ident: _announce(channel, ident, settings)) if channel is not None else None,
    )
    return watch.start()


def _announce(channel: FileChannel, identity: dict[str, Any], settings: HangSettings) -> None:
    try:
        extra: dict[str, Any] = {"source": "sdk"}
        if settings.signal is not None and _fh_file is not None:
            extra.update(signal=settings.signal, faulthandler_file=channel.faulthandler_file)
        channel.announce(identity, **extra)
    except OSError:
        pass


def _register_faulthandler(settings: HangSettings, channel: FileChannel | None) -> None:
    """``kill -s SIGRTMIN+7 PID`` prints every thread's stack (to the runner's file under
    ``flightlog run``, else to stderr), even while C code holds the GIL."""
    global _fh_file
    if settings.signal is None or _fh_file is not None:
        return
    try:
        if channel is not None:
            _fh_file = open(channel.faulthandler_file, "a", encoding="utf-8")  # noqa: SIM115 - open for the life of the process
            target = _fh_file
        else:
            target = sys.__stderr__
            _fh_file = target
        if target is None:
            return
        faulthandler.register(settings.signal, file=target, all_threads=True, chain=chains(settings.signal))
    except (OSError, RuntimeError, ValueError, AttributeError):
        _fh_file = None


def _turn_flight_recorder_on(settings: HangSettings) -> None:
    if not settings.fr_buffer or "TORCH_FR_BUFFER_SIZE" in os.environ or "TORCH_NCCL_TRACE_BUFFER_SIZE" in os.environ:
        return
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return  # too late for the group that exists; its ranks' next job will have it
    except Exception:
        return
    os.environ["TORCH_FR_BUFFER_SIZE"] = str(settings.fr_buffer)


def _progress_of(run: Run) -> Any:
    stages = run._w.stages

    def progress() -> tuple[int, int, int]:
        return (run._step, stages.recorded, run._beats)

    return progress


def _stages_of(run: Run) -> dict[str, Any]:
    return run._w.stages.totals()


def _deliver(kind: str, name: str, data: dict[str, Any], raw: str | None) -> None:
    """The watch's records onto every run this process watches (one per process, nearly always)."""
    with _lock:
        runs = list(_runs.values())
    for run in runs:
        _record(run, kind, name, data, raw)


def _record(run: Run, kind: str, name: str, data: dict[str, Any], raw: str | None) -> None:
    if raw is not None:
        data = {**data, "artifact": _keep_raw(run, name, raw)}
    run.log_evidence(kind, name, data)
    if kind == "stall":
        _tell(run, data)
    elif kind == "flight_recorder" and data.get("problem"):
        run.log_event(f"the Flight Recorder dump: {data['problem']}", level="warning", component="flightlog")


def _keep_raw(run: Run, name: str, raw: str) -> str | None:
    """The whole Flight Recorder dump as an artifact of the run (the evidence keeps the newest entries)."""
    try:
        with tempfile.TemporaryDirectory(prefix="flightlog-fr-") as tmp:
            path = Path(tmp) / f"{name}.json"
            path.write_text(raw, encoding="utf-8")
            kept = run.log_artifact(path, kind="flight_recorder", name=f"hangs/{name}.json")
        return str(kept.get("path"))
    except Exception as exc:
        notice(f"the Flight Recorder dump {name} was not kept: {exc}")
        return None


def _tell(run: Run, data: dict[str, Any]) -> None:
    rank = data.get("rank")
    who = f"rank {rank}" if rank is not None else "this process"
    if data.get("state") == "stalled":
        message = f"{who}: {stalled_text(data)}; its stacks are recorded: flightlog diagnose {run.id[:12]}"
        level = "warning"
    else:
        since = float(data.get("time", 0)) - float(data.get("since") or data.get("time", 0))
        message = f"{who}: progress resumed after {since:.0f} s"
        level = "info"
    run.log_event(message, level=level, component="flightlog", fields={"hang": data.get("state")})
    if level == "warning":
        notice(message)


def _reset_after_fork() -> None:
    global _own, _lock
    _own = None
    _lock = threading.Lock()
    _runs.clear()
    _stopping.clear()  # the parent's threads: none of them is in the child


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
