"""Module-level entry points: ``flightlog.init``, ``flightlog.log``, ``flightlog.active_run``.

Also the process hooks that give a run its final status when the program ends: an uncaught
exception (failed, traceback kept as a stderr event), Ctrl-C (stopped), SIGTERM (killed), a
normal exit (succeeded). Hooks chain to whatever was installed before (``sys.excepthook``,
``threading.excepthook``); a SIGTERM handler is only installed where none was. Should a later
``sys.excepthook`` of the user's replace ours, the exit hook still finds the uncaught
exception (``sys.last_value``) and fails the run with it rather than calling it a success.

``init()`` says where the run went in one line on stderr (``FLIGHTLOG_QUIET=1`` silences it;
under ``flightlog run`` the runner says it instead) and, unless told otherwise, records the
process's console output on the run (``sdk/console.py``).
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
from typing import TYPE_CHECKING, Any, NoReturn, cast

from flightlog.config import EnvironView, RankIdentity, Settings, rank_from_env, rank_identity
from flightlog.errors import Conflict, FlightlogError, InvalidInput, NotFound, StoreUnavailable
from flightlog.ids import RUN_ID_RE, new_run_id
from flightlog.journal.liveness import process_identity
from flightlog.sdk.attempts import resume_attempt
from flightlog.sdk.console import paused
from flightlog.sdk.hangs import hang_settings, watch_run
from flightlog.sdk.ranks import Join, derived_run_id, join_job, launching_run, named_run_taken, notice_records
from flightlog.sdk.run import Run
from flightlog.sdk.runhooks import run_started
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
    console: bool | None = None,
    quiet: bool | None = None,
    config: Any = None,
) -> Run:
    """Start (or attach to, or resume) a run and return it.

    - In a process started by ``flightlog run`` (``FLIGHTLOG_RUN_ID`` set), attaches to that
      run: this process then owns only its own writer, and the runner sets the status.
    - In a rank of a distributed job (``torchrun``, ``srun``, ``mpirun``, DeepSpeed, Accelerate:
      ``flightlog.config.rank_identity``), every rank joins one run: the one ``FLIGHTLOG_RUN_ID``
      or ``id=`` names, else the one its launcher's job key names (docs/distributed.md). The
      ranks are peers: each records its own end, and the run ends when its ranks have.
    - ``id=`` names the run; an existing id needs ``resume=True``, which continues it as a new
      attempt when it had ended.
    - ``console``: record what the process prints (``sys.stdout``/``sys.stderr``) as the run's
      log events; default on (``FLIGHTLOG_CONSOLE=off`` turns it off), never when attached to
      a ``flightlog run`` run, which captures the output itself.
    - ``resources``: sample this process's CPU, memory and GPUs, and watch it for hangs (no
      progress for a while: its stacks and torch's Flight Recorder are recorded, see
      docs/distributed.md); ``False`` for a process that only hosts a run (a controller).

    - ``config``: the other name of ``params`` (W&B's, and the word most training scripts
      use), so the first line a newcomer types works; give one of the two.

    Prints one line on stderr saying where the run went and how to look at it, unless
    ``quiet=True`` (or ``FLIGHTLOG_QUIET=1``), attached to a runner's run, or a child of a run
    this process has open (a sweep's trials).
    """
    if config is not None:
        if params is not None:
            raise InvalidInput(
                "init() got both params= and config=: they are one argument under two names; pass one of them"
            )
        params = config
    overrides: dict[str, Any] = {}
    if home is not None:
        overrides["home"] = home
    if mode is not None:
        overrides["mode"] = mode
    environ = EnvironView()  # ~40 names read below, nearly all unset: each a set lookup
    settings = Settings.from_env(environ, **overrides)
    if settings.mode not in ("online", "offline", "disabled"):
        raise InvalidInput(f"mode {settings.mode!r} is not valid: use online, offline or disabled")
    hangs = hang_settings(environ)  # FLIGHTLOG_HANG_*: a bad value is said here, before anything is recorded
    rank = rank_from_env(environ)
    identity = rank_identity(environ) if settings.mode != "disabled" else None
    ranked = identity is not None and identity.distributed and not resume
    env_run = settings.run_id
    # FLIGHTLOG_RUN_ID set for the ranks by hand (no runner around them): they meet there as peers
    peer_env = ranked and env_run is not None and not settings.captured and (id is None or id == env_run)
    attach = env_run is not None and (id is None or id == env_run) and not peer_env
    launched = False  # attached to the run of the process that started this one (Lightning's rank 0)
    if ranked and identity is not None and identity.launcher == "lightning" and not (attach or peer_env or id):
        env_run = _launching_run(settings)  # Lightning's rank 0 started its run, then this process
        attach = launched = env_run is not None
    peer = ranked and not attach and (id is not None or peer_env or identity.job_key is not None)  # type: ignore[union-attr]
    run_id = env_run if (attach or peer_env) else (id or new_run_id())
    assert run_id is not None
    if not RUN_ID_RE.match(run_id):
        raise InvalidInput(f"run id {run_id!r} is not valid: use letters, digits, '_', '-' and '.' (at most 64)")
    moved_to: str | None = None  # the runner's run, moved to the project this call names
    if attach and settings.captured:
        project, moved_to = _runner_s_project(settings, environ, project)
    project = project or settings.project
    parent_id = parent.id if isinstance(parent, Run) else parent

    if settings.mode == "disabled":
        return Run(
            NullWriter(settings, run_id),
            settings,
            run_id=run_id,
            project=project,
            name=name,
            owner=False,
            attempt=settings.attempt,
        )

    attempt = settings.attempt
    existing = None
    resumed: int | None = None  # the attempt claimed in the store (sdk/attempts.py)
    unknown = False  # the store could not say whether the run exists: journal now, ship later
    # a token that cannot write the project raises here, before anything is recorded (docs/server.md)
    journal_only = _check_server(settings, project) if not attach else None  # the warning, if so
    join: Join | None = None
    if peer:
        assert identity is not None
        attempt = identity.restart_count + 1
        if id is None and not peer_env:  # the job key names the run
            join = _join(settings, identity, project, unreachable=journal_only)
            run_id, attempt = join.run_id, join.attempt
        elif journal_only is None and (taken := _named_run_taken(settings, identity, run_id)) is not None:
            warn(
                f"rank {identity.rank} joins run {run_id[:12]} as asked, but that run looks like another job's: "
                f"{taken}. The store keeps both and says so on the run; give each job its own id."
            )
        if journal_only is not None:
            warn(journal_only)
    elif not attach and id is not None and journal_only is not None:
        unknown = True
        warn(
            f"cannot look run {run_id} up in the store; recording it anyway"
            + (", its attempt number kept as the store has it" if resume else "")
            + f": {journal_only}"
        )
    elif not attach and id is not None:
        try:
            existing, resumed = _existing_run(settings, run_id, resume=resume)
        except StoreUnavailable as exc:
            unknown = True
            warn(
                f"cannot look run {run_id} up in the store ({exc}); recording it anyway: its records are "
                "journaled and shipped when the store is back (or by `flightlog sync`)"
                + ("; its attempt number is kept as the store has it" if resume else "")
            )
        if existing is not None and not resume:
            raise Conflict(
                f"run {run_id} already exists (status {existing.status}): pass resume=True to continue it, "
                "or leave id unset for a new run"
            )
        if existing is not None:
            attempt = resumed if resumed is not None else existing.attempt + (1 if existing.is_finished else 0)
            project = existing.project if project == settings.project else project
            name = name or existing.name
    elif journal_only is not None:
        warn(journal_only)

    writer = RunWriter(settings, run_id, attempt=attempt, rank=identity.rank if identity is not None else rank)
    writer.rank_fields = _rank_fields(identity, peer)
    run = Run(
        writer,
        settings,
        run_id=run_id,
        project=project,
        name=name,
        owner=not (attach or peer),
        attempt=attempt,
        on_finish=_forget,
        peer=peer,
    )
    now = time.time()
    process = process_identity()  # to be recognised across clock steps (journal/liveness.py)
    writer.add_record(
        "writer",
        host=socket.gethostname(),
        pid=os.getpid(),
        owner=not (attach or peer),
        attempt=attempt,
        **({"pstart": process["process_start"], "boot": process["boot"]} if process else {}),
        **writer.rank_fields,
    )
    if moved_to is not None:
        writer.add_record("run", project=moved_to)
    if peer:
        _join_record(
            writer, project=project, name=name, attempt=attempt, now=now, parent_id=parent_id, settings=settings
        )
    elif not attach:
        fields: dict[str, Any] = {
            "project": project,
            "name": name,
            "status": "running",
            "started": now,
            "attempt": attempt,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "owner": writer.writer_id,
            "ended": None,
            "end_reason": None,
            "exit_code": None,
            "signal": None,
        }
        if unknown:
            del fields["attempt"]  # the store's attempt stands: this process cannot know it
        elif existing is None:
            fields["created"] = now
        if parent_id:
            fields["parent_id"] = parent_id
        if settings.queued_at:
            fields["queued"] = _queued_at(settings.queued_at)
        timeline = {"process_start": _process_start()}
        if process:
            timeline.update(owner_process_start=process["process_start"], host_boot=process["boot"])
        writer.add_record("run", timeline=timeline, **fields)
    if params is not None:
        run.log_params(params)
    if ranked and identity is not None:  # readers know a distributed run by it (docs/distributed.md)
        tags = {"distributed": identity.launcher or "ranks", **(tags or {})}
    if tags:
        run.set_tags(tags)
    with _active_lock:
        nested = any(r.id == parent_id for r in _active)
        _active.append(run)
    _install_hooks()
    _notebook(run, parent_id)
    lead = not peer or (identity is not None and identity.rank == 0)  # of peers, rank 0 speaks for the run
    if not attach and lead:
        run_started(run)  # the features' run-start hooks (sdk/runhooks.py): never raise
    shipper.register(writer, at_once=bool(writer.rank_fields))  # a rank is looked for by its peers
    if join is not None and join.passed:
        _say_passed(run, join, identity)
    if not (attach or nested or (settings.quiet if quiet is None else quiet)) and lead:
        say_where(run, journal_only=journal_only is not None)
    if _console_wanted(console, settings, attach and not launched):
        _start_console(run)
    if resources:
        _start_sampler(run)
        watch_run(run, hangs)  # where the training happens (docs/distributed.md): never raises
    return run


def _runner_s_project(settings: Settings, environ: Mapping[str, str], asked: str | None) -> tuple[str, str | None]:
    """The project of the run a ``flightlog run`` started for this process, and the project to
    move it to (None: stay). ``flightlog run`` passes ``FLIGHTLOG_PROJECT`` only when its project
    was chosen (``--project``, the variable, a resumed run's); otherwise its run waits in
    ``default`` and ``init(project=...)`` names where it belongs, as it would without the runner.
    A chosen project stands, and a different one asked here is said, not silently dropped."""
    if asked is None or asked == settings.project:
        return settings.project, None
    if "FLIGHTLOG_PROJECT" in environ:
        warn(
            f"init(project={asked!r}) is not used: this process records into the run `flightlog run` started in "
            f"project {settings.project!r} (its --project or FLIGHTLOG_PROJECT); pass --project {asked} to "
            "flightlog run to record it there"
        )
        return settings.project, None
    try:
        refused = _check_server(settings, asked)  # a token limited to another project cannot move it
    except FlightlogError as exc:
        refused = str(exc)
    if refused is not None:
        warn(f"the run stays in project {settings.project!r}, not {asked!r} as init() asks: {refused}")
        return settings.project, None
    return asked, asked


def _launching_run(settings: Settings) -> str | None:
    try:
        return launching_run(settings)
    except Exception:  # noqa: BLE001 - the job's own run then (by its key)
        return None


def _join(settings: Settings, identity: RankIdentity, project: str, *, unreachable: str | None) -> Join:
    """The job's run (sdk/ranks.py); an internal error there costs the check, never the run. A
    server that did not answer is not asked again (``unreachable``: why): the key's first run."""
    assert identity.job_key is not None
    if unreachable is not None:
        return Join(derived_run_id(project, identity.job_key), identity.restart_count + 1, unknown=unreachable)
    try:
        return join_job(settings, identity, project, started=_process_start())
    except Exception as exc:  # noqa: BLE001 - the first run of the key, unchecked, as when offline
        warn(f"could not check the job's run in the store ({type(exc).__name__}: {exc}); joining it unchecked")
        return Join(derived_run_id(project, identity.job_key), identity.restart_count + 1, unknown=str(exc))


def _named_run_taken(settings: Settings, identity: RankIdentity, run_id: str) -> str | None:
    try:
        return named_run_taken(settings, identity, run_id, started=_process_start())
    except Exception:  # noqa: BLE001 - a warning not given, never a run not started
        return None


def _rank_fields(identity: RankIdentity | None, peer: bool) -> dict[str, Any]:
    """A rank's identity as its `writer` record carries it (empty for a process that is not one)."""
    if identity is None:
        return {}
    fields: dict[str, Any] = {
        "rank": identity.rank,
        "local_rank": identity.local_rank,
        "world_size": identity.world_size,
        "node_rank": identity.node_rank,
        "local_world_size": identity.local_world_size,
        "restart": identity.restart_count,
        "launcher": identity.launcher,
        "job": identity.job_key[:1000] if identity.job_key else None,
    }
    if peer:
        fields["peer"] = True
    return fields


def _join_record(
    writer: RunWriter,
    *,
    project: str,
    name: str | None,
    attempt: int,
    now: float,
    parent_id: str | None,
    settings: Settings,
) -> None:
    """A peer rank's `run` record: it joins the run (the store keeps the earliest start and the
    newest attempt, store/sql/ranks.py), and sets neither an owner nor an end."""
    fields: dict[str, Any] = {
        "project": project,
        "name": name,
        "status": "running",
        "started": now,
        "created": now,
        "attempt": attempt,
        "peer": True,
    }
    if parent_id:
        fields["parent_id"] = parent_id
    if settings.queued_at:
        fields["queued"] = _queued_at(settings.queued_at)
    writer.add_record("run", timeline={"process_start": _process_start()}, **fields)


def _say_passed(run: Run, join: Join, identity: RankIdentity | None) -> None:
    """This job's run is not the one its key named first (another job's): say so on stderr, and
    as a notice event on both runs (one event per run, however many ranks say it)."""
    assert identity is not None
    passed = "; ".join(f"run {rid[:12]} {why}" for rid, why in join.passed)
    warn(
        f"rank {identity.rank} records into run {run.id[:12]}, not into the run its job key names "
        f"({identity.job_key}), which belongs to another job: {passed}"
    )
    if run.settings.mode != "online":
        return
    try:
        from flightlog.sdk.sink import open_sink  # the shipping connection, opened with the run's writer's

        open_sink(run.settings).ingest(notice_records(run.id, join.passed, identity, t=time.time()))
    except Exception as exc:  # the stderr line above is said; the events are evidence
        warn(f"could not leave the notice on the runs: {exc}")


def say_where(run: Run, *, journal_only: bool = False) -> None:
    """One line on stderr: the run, where its records go, and how to look at them (with
    ``journal_only``, a server that refused or could not be reached: the journal, for now)."""
    settings = run.settings
    short = run.id[:12]
    if settings.url:
        where, look = (
            _without_credentials(settings.url),
            f"open {_without_credentials(settings.url)}, or flightlog runs show {run.id[:8]}",
        )
    else:
        store = settings.store_uri
        where = (
            str(settings.home)
            if store.startswith("sqlite:")
            else f"the {store.split(':', 1)[0]} store of FLIGHTLOG_STORE (journal in {settings.home})"
        )
        look = f"flightlog ui, or flightlog runs show {run.id[:8]}"
    if settings.mode == "offline":
        where, look = (
            f"the journal in {settings.home} (offline)",
            "flightlog sync, then flightlog runs show " + run.id[:8],
        )
    elif journal_only:  # the warning just printed says how it ships
        where, look = (
            f"the journal in {settings.home} (until the server answers)",
            f"flightlog runs show {run.id[:8]} once it ships",
        )
    warn(f"run {short} in project {run.project} → {where} (look: {look})")


def _without_credentials(url: str) -> str:
    """A server URL as it may be printed: any ``user:password@`` taken out."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _console_wanted(console: bool | None, settings: Settings, attach: bool) -> bool:
    if attach or settings.captured:
        return False  # the runner captures at the file-descriptor level
    if console is None:
        console = settings.console
    return bool(console)  # in a notebook kernel too: a cell's output goes to the run (sdk/notebook.py)


def _start_console(run: Run) -> None:
    from flightlog.sdk import console

    try:
        console.attach(run)
        run._console = True
    except Exception as exc:  # evidence is optional, the run is not
        warn(f"console capture is off for this run: {type(exc).__name__}: {exc}")


def _notebook(run: Run, parent_id: str | None) -> None:
    if "IPython" not in sys.modules:
        return  # not in a notebook: nothing to import
    from flightlog.sdk.notebook import on_init

    try:
        on_init(run, parent_id)
    except Exception as exc:
        warn(f"notebook support is off for this run: {exc}")


def _check_server(settings: Settings, project: str) -> str | None:
    """Ask a server, once, whether this token may write ``project``: a known token that may not
    raises ``Forbidden`` (the user's configuration, to fix before the job, as ``wandb.init``
    raises on an auth error); no answer at all, or a token the server does not know, makes the
    run journal-only at once and returns the one warning to print (the job keeps its records)."""
    if settings.mode != "online" or not settings.url:
        return None
    from flightlog.sdk.sink import check_server

    return check_server(settings, project)


def _existing_run(settings: Settings, run_id: str, *, resume: bool = False) -> tuple[Any, int | None]:
    """The run as the store has it (None: not there), and with ``resume`` the attempt claimed."""
    if settings.mode != "online":
        return None, None
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
        return None, None
    try:
        try:
            info = client.run(run_id, exact=True)
        except NotFound:
            return None, None
        return info, (resume_attempt(client.store, info) if resume else None)
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
    if _deferred_signal and not any(r._ending for r in _snapshot()):
        # a SIGTERM waited for this end (_on_sigterm): it ends the process now, through the
        # handler again (on the main thread, whichever thread finished the run)
        os.kill(os.getpid(), _deferred_signal.pop())


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
    previous_thread_hook = threading.excepthook

    def excepthook(exc_type: Any, exc: BaseException, tb: Any) -> None:
        runs = _snapshot()
        try:
            with paused():  # the run records this traceback itself, once
                previous(exc_type, exc, tb)
        finally:
            for run in runs:
                run.fail(exc)

    def thread_excepthook(args: Any) -> None:
        """An exception that ended a thread (not the process): an error event on the run."""
        try:
            with paused():
                previous_thread_hook(args)
        finally:
            runs = _snapshot()
            if runs and args.exc_value is not None and not issubclass(args.exc_type, SystemExit):
                _log_thread_exception(runs[0], args)

    sys.excepthook = excepthook
    threading.excepthook = thread_excepthook
    _wrap_sys_exit()
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


def _log_thread_exception(run: Run, args: Any) -> None:
    import traceback

    name = getattr(args.thread, "name", None) or "?"
    text = "".join(traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback))
    try:
        run._log_traceback(f"Exception in thread {name}:\n{text}", component=f"thread {name}")
    except Exception as exc:
        warn(f"could not record the exception of thread {name}: {exc}")


def _uncaught() -> BaseException | None:
    """The exception that is ending the interpreter, when a hook other than ours handled it
    (a script's own ``sys.excepthook`` set after ``init()``). Python keeps it in
    ``sys.last_value``; a notebook kernel keeps every cell's error there, so not in one."""
    exc = getattr(sys, "last_value", None)
    if not isinstance(exc, BaseException) or isinstance(exc, SystemExit):
        return None
    if "IPython" in sys.modules:
        from flightlog.sdk.notebook import kernel_shell

        if kernel_shell() is not None:
            return None
    return exc


#: the status the main thread asked ``sys.exit`` for (None: it did not), read by the exit hook
_exit_request: list[Any] = []


def _wrap_sys_exit() -> None:
    """``sys.exit(2)`` (argparse's usage error, click, ``sys.exit(main())``) ends the process
    without an exception hook, and an exit hook cannot see the status: without this, a script
    that exited 2 was recorded as succeeded. The wrapper notes the status the main thread asked
    for, then exits exactly as before. A ``raise SystemExit(n)`` written by hand (or the
    ``exit()`` builtin) does not go through ``sys.exit`` and is not seen: ``flightlog run``
    sees every exit status. A program that catches the ``SystemExit`` of its own ``sys.exit(n)``
    and goes on is still recorded with that status."""
    original = sys.exit
    if getattr(original, "__flightlog_wrapped__", False):
        return

    def exit(status: Any = None) -> NoReturn:  # noqa: A001 - it is sys.exit
        if threading.current_thread() is threading.main_thread():
            _exit_request[:] = [status]
        original(status)
        raise SystemExit(status)  # pragma: no cover - the original always raises

    exit.__flightlog_wrapped__ = True  # type: ignore[attr-defined]
    exit.__doc__ = original.__doc__
    exit.__wrapped__ = original  # type: ignore[attr-defined]
    sys.exit = exit


def _requested_exit() -> tuple[int, dict[str, Any] | None] | None:
    """``(exit code, failure)`` of a ``sys.exit`` with a failing status, else None."""
    if not _exit_request:
        return None
    status = _exit_request[0]
    if status is None or status == 0 or status is False:
        return None
    if isinstance(status, int) and not isinstance(status, bool):
        code = status & 0xFF  # what the operating system keeps of it: sys.exit(256) exits 0
        return (code, None) if code else None
    # any other object: Python prints it to stderr and exits 1
    return 1, {"exception": "SystemExit", "message": str(status)[:4000]}


_exiting = False  # the interpreter is ending: the exit hook is finishing the runs


def _at_exit() -> None:
    """Finish what is still active (shipping its last records), then close the transports."""
    global _exiting
    _exiting = True
    uncaught = _uncaught()
    requested = _requested_exit() if uncaught is None else None
    for run in _snapshot():
        try:
            if uncaught is not None:
                run.fail(uncaught)
            elif requested is not None:
                code, failure = requested
                run.finish("failed", end_reason="exit", exit_code=code, failure=failure)
            else:
                run.finish()
        except Exception as exc:
            warn(f"could not finish run {run.id[:12]} at exit: {exc}")
    from flightlog.sdk.sink import close_sinks

    close_sinks()


#: a SIGTERM that came while a run's end was being recorded: delivered again once it is
_deferred_signal: list[int] = []


def _on_sigterm(signum: int, frame: Any) -> None:
    if _exiting:
        # the process is already ending and its runs are being finished (a launcher stopping the
        # other ranks of a job often sends SIGTERM just then): let that finish record the end,
        # rather than die halfway with the last records unsent
        return
    if any(run._ending for run in _snapshot()):
        # this handler interrupted a finish() on this thread, or one runs on another: an uncaught
        # exception's (torchrun stops a job's other ranks as soon as one fails, often while the
        # first to see the failure records it), or the script's own. Killing the process now
        # would leave that end unrecorded, and a lost peer rank it was settling unsettled: the
        # run of a job's ranks would read running for ever. The end is recorded first; then the
        # signal is delivered again and ends the process as it asked (_forget).
        _deferred_signal[:] = [signum]
        return
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
