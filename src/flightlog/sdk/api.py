"""Module-level entry points: ``flightlog.init``, ``flightlog.log``, ``flightlog.active_run``.

Also the process hooks that give a run its final status when the program ends: an uncaught
exception (failed, traceback kept), Ctrl-C (stopped), SIGTERM (killed), a normal exit
(succeeded). Hooks chain to whatever was installed before; a SIGTERM handler is only
installed where none was.
"""

from __future__ import annotations

import atexit
import os
import signal as _signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from flightlog.config import Settings, rank_from_env
from flightlog.errors import Conflict, FlightlogError, InvalidInput, NotFound, StoreUnavailable
from flightlog.ids import RUN_ID_RE, new_run_id
from flightlog.sdk.run import Run
from flightlog.sdk.shipper import shipper
from flightlog.sdk.writer import NullWriter, RunWriter, warn
from flightlog.timefmt import parse_time

if TYPE_CHECKING:
    from flightlog.store.base import Store

__all__ = ["init", "log", "active_run", "finish"]

_active: list[Run] = []
_active_lock = threading.Lock()
_hooks_installed = False


def init(
    project: str | None = None,
    name: str | None = None,
    params: Any = None,
    tags: Mapping[str, Any] | None = None,
    id: str | None = None,
    resume: bool = False,
    *,
    parent: str | Run | None = None,
    resources: bool = True,
    home: str | os.PathLike[str] | None = None,
    mode: str | None = None,
) -> Run:
    """Start (or attach to, or resume) a run and return it.

    - In a process started by ``flightlog run`` (``FLIGHTLOG_RUN_ID`` set), attaches to that
      run: this process then owns only its own writer, and the runner sets the status.
    - ``id=`` names the run; an existing id needs ``resume=True``, which continues it as a new
      attempt when it had ended.
    """
    overrides: dict[str, Any] = {}
    if home is not None:
        overrides["home"] = home
    if mode is not None:
        overrides["mode"] = mode
    settings = Settings.from_env(**overrides)
    if settings.mode not in ("online", "offline", "disabled"):
        raise InvalidInput(f"mode {settings.mode!r} is not valid: use online, offline or disabled")
    rank = rank_from_env()
    env_run = settings.run_id
    attach = env_run is not None and (id is None or id == env_run)
    run_id = env_run if attach else (id or new_run_id())
    assert run_id is not None
    if not RUN_ID_RE.match(run_id):
        raise InvalidInput(f"run id {run_id!r} is not valid: use letters, digits, '_', '-' and '.' (at most 64)")
    project = project or settings.project
    parent_id = parent.id if isinstance(parent, Run) else parent

    if settings.mode == "disabled":
        return Run(NullWriter(settings, run_id), settings, run_id=run_id, project=project, name=name,
                   owner=False, attempt=settings.attempt)

    attempt = settings.attempt
    existing = None
    unknown = False  # the store could not say whether the run exists: journal now, ship later
    if not attach and id is not None:
        try:
            existing = _existing_run(settings, run_id)
        except StoreUnavailable as exc:
            unknown = True
            warn(f"cannot look run {run_id} up in the store ({exc}); recording it anyway: its records are "
                 "journaled and shipped when the store is back (or by `flightlog sync`)"
                 + ("; its attempt number is kept as the store has it" if resume else ""))
        if existing is not None and not resume:
            raise Conflict(
                f"run {run_id} already exists (status {existing.status}): pass resume=True to continue it, "
                "or leave id unset for a new run"
            )
        if existing is not None:
            attempt = existing.attempt + (1 if existing.is_finished else 0)
            project = existing.project if project == settings.project else project
            name = name or existing.name

    writer = RunWriter(settings, run_id, attempt=attempt, rank=rank)
    run = Run(writer, settings, run_id=run_id, project=project, name=name, owner=not attach,
              attempt=attempt, on_finish=_forget)
    now = time.time()
    writer.add_record("writer", host=socket.gethostname(), pid=os.getpid(), owner=not attach, attempt=attempt)
    if not attach:
        fields: dict[str, Any] = {
            "project": project, "name": name, "status": "running", "started": now, "attempt": attempt,
            "host": socket.gethostname(), "pid": os.getpid(), "owner": writer.writer_id,
            "ended": None, "end_reason": None, "exit_code": None, "signal": None,
        }
        if unknown:
            del fields["attempt"]  # the store's attempt stands: this process cannot know it
        elif existing is None:
            fields["created"] = now
        if parent_id:
            fields["parent_id"] = parent_id
        if settings.queued_at:
            fields["queued"] = _queued_at(settings.queued_at)
        writer.add_record("run", timeline={"process_start": _process_start()}, **fields)
    if params is not None:
        run.log_params(params)
    if tags:
        run.set_tags(tags)
    with _active_lock:
        _active.append(run)
    _install_hooks()
    _notebook(run, parent_id)
    shipper.register(writer)
    if resources:
        _start_sampler(run)
    return run


def _notebook(run: Run, parent_id: str | None) -> None:
    if "IPython" not in sys.modules:
        return  # not in a notebook: nothing to import
    from flightlog.sdk.notebook import on_init

    try:
        on_init(run, parent_id)
    except Exception as exc:
        warn(f"notebook support is off for this run: {exc}")


def _existing_run(settings: Settings, run_id: str) -> Any:
    if settings.mode != "online":
        return None
    from flightlog.client import Client
    from flightlog.sdk.sink import open_sink

    try:
        # read through the connection the run's records ship through next (opened once, here), not
        # a second one opened and closed for one lookup; a server is asked through a Client's own
        shipping = None if settings.url else cast("Store", open_sink(settings))
        client = Client.for_lookups(settings, shipping)
    except StoreUnavailable:
        raise
    except FlightlogError:
        return None
    try:
        return client.run(run_id, exact=True)
    except NotFound:
        return None
    finally:
        client.close()


def _start_sampler(run: Run) -> None:
    try:
        from flightlog.sdk.sampling import start_run_sampler
    except ImportError:
        return
    try:
        run._sampler = start_run_sampler(run)
    except Exception as exc:  # resource evidence is optional, the run is not
        warn(f"resource sampling is off for this run: {exc}")


def _queued_at(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return parse_time(text, what="FLIGHTLOG_QUEUED_AT")
    except FlightlogError as exc:
        warn(str(exc))
        return None


_started: tuple[int, float] | None = None  # (pid, start time): one lookup per process, not per run


def _process_start() -> float:
    global _started
    pid = os.getpid()
    if _started is None or _started[0] != pid:
        try:
            _started = (pid, _start_time())
        except Exception:
            return time.time()
    return _started[1]


def _start_time() -> float:
    """When this process started, on the clock of the run's own stamps (``time.time()``): now
    minus its age, both read from the kernel's boot-relative clock. psutil's ``create_time``
    adds the boot time instead, which /proc/stat gives in whole seconds and which drifts from
    the wall clock as NTP corrects it: start-up measured with it was off by up to seconds."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime, in clock ticks
        return time.time() - max(0.0, age)
    except (OSError, ValueError, IndexError):  # not Linux
        import psutil

        return float(psutil.Process().create_time())


def _forget(run: Run) -> None:
    with _active_lock:
        if run in _active:
            _active.remove(run)
    shipper.unregister(run._w)


def active_run() -> Run | None:
    """The most recently started run of this process that has not finished, or None."""
    with _active_lock:
        return _active[-1] if _active else None


def log(data: Mapping[str, Any], step: int | None = None) -> None:
    """``flightlog.log({...})`` on the active run."""
    run = active_run()
    if run is None:
        raise FlightlogError("flightlog.log() needs a run: call flightlog.init() first")
    run.log(data, step=step)


def finish(status: str | None = None) -> None:
    run = active_run()
    if run is not None:
        run.finish(status)


# ── process hooks ───────────────────────────────────────────────────────────
def _install_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    previous = sys.excepthook

    def excepthook(exc_type: Any, exc: BaseException, tb: Any) -> None:
        try:
            previous(exc_type, exc, tb)
        finally:
            for run in _snapshot():
                run.fail(exc)

    sys.excepthook = excepthook
    atexit.register(_at_exit)
    if threading.current_thread() is threading.main_thread():
        try:
            if _signal.getsignal(_signal.SIGTERM) in (_signal.SIG_DFL, None):
                _signal.signal(_signal.SIGTERM, _on_sigterm)
        except (ValueError, OSError):
            pass


def _snapshot() -> list[Run]:
    with _active_lock:
        return list(reversed(_active))


def _at_exit() -> None:
    """Finish what is still active (shipping its last records), then close the transports."""
    for run in _snapshot():
        try:
            run.finish()
        except Exception as exc:
            warn(f"could not finish run {run.id[:12]} at exit: {exc}")
    from flightlog.sdk.sink import close_sinks

    close_sinks()


def _on_sigterm(signum: int, frame: Any) -> None:
    for run in _snapshot():
        try:
            run.finish("killed", end_reason="signal", signal=signum)
        except Exception:
            pass
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    os.kill(os.getpid(), _signal.SIGTERM)


def _after_fork_in_child() -> None:
    """A forked child (a data-loader worker, a plain ``os.fork()``) only *attaches* to the
    runs of its parent: what it logs lands on them through its own writer, its ``finish()`` (or
    its exit) flushes that writer, and the parent alone sets their status."""
    global _active_lock
    _active_lock = threading.Lock()
    for run in _active:
        run.owner = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
