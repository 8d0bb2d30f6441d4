"""Configuration, declared once: every environment variable flightlog reads, typed and documented.

``docs/configuration.md`` is checked against ``VARIABLES`` by a test, so the docs cannot drift.
Settings are read when a run starts or a client opens (never cached process-wide), so tests
and tools can point different runs at different homes without resetting global state.
"""

from __future__ import annotations

import os
import re
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from flightlog.errors import InvalidInput
from flightlog.launchenv import RankIdentity, rank_identity

__all__ = [
    "Variable",
    "VARIABLES",
    "Settings",
    "MODES",
    "LOG_POLICIES",
    "rank_from_env",
    "rank_identity",
    "RankIdentity",
    "discover_home",
    "HOME_DIR",
    "EnvironView",
]

MODES = ("online", "offline", "disabled")
LOG_POLICIES = ("block", "drop")
CONSOLE_CHOICES = ("auto", "on", "off")


@dataclass(frozen=True)
class Variable:
    name: str
    default: str
    doc: str


VARIABLES: tuple[Variable, ...] = (
    Variable(
        "FLIGHTLOG_HOME",
        ".flightlog",
        "Embedded store directory (made absolute when read). Unset: the nearest `.flightlog` directory at or above the working directory, else `.flightlog` at the top of the enclosing git work tree, else `./.flightlog` (found the way git finds its repository; docs/configuration.md).",
    ),
    Variable("FLIGHTLOG_URL", "", "Use a remote flightlog server instead of the embedded store."),
    Variable("FLIGHTLOG_TOKEN", "", "API token sent to the server as `Authorization: Bearer`."),
    Variable("FLIGHTLOG_PROJECT", "default", "Default project for new runs and listings."),
    Variable(
        "FLIGHTLOG_RUN_ID",
        "",
        "Attach to this existing run (set by `flightlog run` for its child); set for every rank of a distributed job, the run they all join (docs/distributed.md).",
    ),
    Variable("FLIGHTLOG_MODE", "online", "`online`, `offline` (journal only; `flightlog sync` later) or `disabled`."),
    Variable(
        "FLIGHTLOG_STORE",
        "",
        "Store URI; default `sqlite:///` + `FLIGHTLOG_HOME/flightlog.db`; `postgresql://USER:PASSWORD@HOST:5432/DB` for a shared PostgreSQL.",
    ),
    Variable(
        "FLIGHTLOG_ARTIFACTS",
        "",
        "Where artifact files are kept: `s3://BUCKET/PREFIX` (S3-compatible object storage; `AWS_ENDPOINT_URL` for MinIO and others); default `FLIGHTLOG_HOME/artifacts`.",
    ),
    Variable(
        "FLIGHTLOG_QUERY_TIMEOUT",
        "10",
        "Seconds one search (runs by filter, logs by grep) may run before it is stopped with a clear error; `0`: no limit. The server's `--query-timeout` overrides it.",
    ),
    Variable(
        "FLIGHTLOG_ALLOWED_HOSTS",
        "",
        "Host names `flightlog server` and `flightlog ui` answer for (comma-separated, `*.domain`, `*`); the default protects against DNS rebinding (docs/server.md).",
    ),
    Variable(
        "FLIGHTLOG_QUEUED_AT", "", "Submission time set by a scheduler (ISO-8601 or epoch seconds), for queue wait."
    ),
    Variable("FLIGHTLOG_RESUME_FROM", "", "Set by `flightlog run --resume` for the child: the last checkpoint's path."),
    Variable("FLIGHTLOG_ATTEMPT", "1", "Attempt number of the run this process belongs to (set by `flightlog run`)."),
    Variable(
        "FLIGHTLOG_CAPTURED",
        "",
        "`1` when `flightlog run` captures this process's output (the logging handler then only prints).",
    ),
    Variable(
        "FLIGHTLOG_LOG_METRICS",
        "1",
        "`0` stops `flightlog run` from reading metrics from the workload's progress lines (`step=10 loss=0.5`).",
    ),
    Variable(
        "FLIGHTLOG_FLUSH_INTERVAL",
        "0.5",
        "Seconds between background flushes to the journal and the store (at most 1 s is recommended).",
    ),
    Variable("FLIGHTLOG_BUFFER_LIMIT", "1000000", "Records buffered in memory per run before the log policy applies."),
    Variable(
        "FLIGHTLOG_LOG_POLICY",
        "block",
        "`block` (never lose a record; may slow the caller) or `drop` (never slow it; drops are counted).",
    ),
    Variable(
        "FLIGHTLOG_KEEP_JOURNAL",
        "",
        "`1` keeps journals after they were shipped (default: removed when a writer finished cleanly; `flightlog sync` also removes those of writers that are gone once everything was shipped, unless `--keep`).",
    ),
    Variable("FLIGHTLOG_STEP", "", "Set by a pipeline for each step's process: the step's name (docs/pipelines.md)."),
    Variable("FLIGHTLOG_STEP_PARAMS", "", "Set by a pipeline for each step's process: the step's params as JSON."),
    Variable("FLIGHTLOG_PIPELINE_RUN_ID", "", "Set by a pipeline for each step's process: the id of the pipeline run."),
    Variable(
        "FLIGHTLOG_QUIET",
        "",
        "`1` stops `flightlog.init()` from printing its one line on stderr (the run id, where it went, how to look).",
    ),
    Variable(
        "FLIGHTLOG_CONSOLE",
        "auto",
        "`auto` (default): a run started by `flightlog.init()` also records what the process writes to `sys.stdout`/`sys.stderr` (passed through unchanged); `off` does not. Never under `flightlog run`, which captures at the file-descriptor level.",
    ),
    Variable(
        "FLIGHTLOG_HANG_WATCH",
        "on",
        "`off` turns the hang watch off: the thread in each training process (`flightlog.init()`, or a rank under `flightlog run`) that records its stacks and torch's Flight Recorder when it stops making progress (docs/distributed.md).",
    ),
    Variable(
        "FLIGHTLOG_HANG_FACTOR",
        "10",
        "A process counts as stalled after this many times its usual time between signs of progress (steps, finished stages, heartbeats, collectives), within `FLIGHTLOG_HANG_MIN` and `FLIGHTLOG_HANG_MAX`.",
    ),
    Variable(
        "FLIGHTLOG_HANG_MIN",
        "60",
        "Seconds without progress that count as a stall at the least: the floor that keeps a slow step from reading as a hang. A rank whose torch process group has a shorter timeout is judged at half of that timeout at most, below this floor if need be (docs/distributed.md).",
    ),
    Variable(
        "FLIGHTLOG_HANG_MAX",
        "300",
        "Seconds without progress that count as a stall at the most (and for a rank before its first step): half of NCCL's default 10-minute collective timeout, so a hang is found before the watchdog kills the job; a shorter process-group timeout lowers it to half of that timeout.",
    ),
    Variable(
        "FLIGHTLOG_HANG_REPEAT",
        "300",
        "Seconds between two records of a process's stacks and Flight Recorder while it stays stalled.",
    ),
    Variable("FLIGHTLOG_HANG_DUMPS", "3", "At most this many records of stacks per stall."),
    Variable(
        "FLIGHTLOG_HANG_SIGNAL",
        "SIGRTMIN+7",
        "The signal on which a watched process prints every thread's stack (faulthandler), even while C code holds the GIL; `flightlog run` sends it to a rank whose watch does not answer. A name (`SIGRTMIN+7`, `SIGUSR2`), a number, or `off`. Never SIGUSR1 (Lightning and Slurm use it to requeue).",
    ),
    Variable(
        "FLIGHTLOG_FR_BUFFER",
        "2000",
        "Collectives torch's Flight Recorder keeps per process group, set as `TORCH_FR_BUFFER_SIZE` by `flightlog run` for its workload and by `flightlog.init()` before the process group exists, unless the job set it; `0` leaves the recorder off.",
    ),
    Variable(
        "FLIGHTLOG_COLLECTIVE_SAMPLE",
        "60",
        "Seconds between two samples of when each rank entered its collectives (the same instants on every rank): how stragglers are found. `0`: none.",
    ),
    Variable(
        "FLIGHTLOG_BOOTSTRAP",
        "on",
        "`off` stops `flightlog run` from putting its bootstrap on the workload's `PYTHONPATH` (a `sitecustomize` that starts the hang watch in ranks without the SDK and then imports any `sitecustomize` it hides).",
    ),
    Variable(
        "FLIGHTLOG_HANG_DIR",
        "",
        "Set by `flightlog run` for its workload: the directory in which the ranks' hang watches hand it their evidence.",
    ),
    Variable(
        "FLIGHTLOG_RUNNER_PID",
        "",
        "Set by `flightlog run` for its workload: its own process id (its direct child gets the hang watch even before it is a rank: Lightning's first process).",
    ),
    Variable(
        "FLIGHTLOG_SERVING_SAMPLE",
        "0.01",
        "Share of a serving replica's requests kept as sampled prediction records, at least (`flightlog.serving.attach(sample=...)` overrides it; the share rises while a ten-minute window holds fewer than `min_records` records; docs/models.md).",
    ),
    Variable(
        "FLIGHTLOG_MODEL_CACHE",
        "",
        "Where `flightlog.models.load` keeps downloaded model versions, one folder per digest (default `$XDG_CACHE_HOME/flightlog/models`, else `~/.cache/flightlog/models`; docs/models.md).",
    ),
    Variable(
        "FLIGHTLOG_REGISTRY_NOTIFY",
        "",
        "A YAML file of `notifiers:` (the rules file's `webhook`, `slack` and `command` kinds, each with optional `events:`, `models:` and, for a webhook, `secret: ${ENV}`) that receive every registry event: version created, alias set, moved or removed, deployment changed (docs/models.md).",
    ),
    Variable(
        "FLIGHTLOG_REGISTRY_WEBHOOK",
        "",
        "URL(s), separated by spaces, that receive a signed POST of every registry event (docs/models.md).",
    ),
    Variable(
        "FLIGHTLOG_REGISTRY_WEBHOOK_SECRET",
        "",
        "The secret the `FLIGHTLOG_REGISTRY_WEBHOOK` requests are signed with (`X-Flightlog-Signature`, HMAC-SHA256 over the timestamp and the body).",
    ),
    Variable(
        "FLIGHTLOG_ENV_ALLOW",
        "",
        "Extra environment variable names (comma-separated, `*` globs) recorded in a run's context.",
    ),
)


def _env(environ: Mapping[str, str], name: str) -> str:
    return environ.get(name, "").strip()


@dataclass(frozen=True)
class Settings:
    home: Path
    url: str | None
    token: str | None
    project: str
    run_id: str | None
    mode: str
    store_uri: str
    queued_at: str | None
    resume_from: str | None
    attempt: int
    captured: bool
    flush_interval: float
    buffer_limit: int
    log_policy: str
    keep_journal: bool
    env_allow: tuple[str, ...]
    artifacts: str | None = None
    log_metrics: bool = True
    quiet: bool = False
    console: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """The settings of ``environ`` (``os.environ``) and ``overrides``. The same object again
        while every ``FLIGHTLOG_*`` variable and the overrides are unchanged and the home is an
        absolute path (nothing else is read then): a sweep's thousand ``init()`` calls build it
        once (~40 µs a call, of ~1.2 ms a run)."""
        global _last_settings
        env = os.environ if environ is None else environ
        key = _settings_key(env, overrides)
        last = _last_settings
        if key is not None and last is not None and last[0] == key and type(last[1]) is cls:
            return last[1]
        settings = cls._read(env, overrides)
        if key is not None:
            _last_settings = (key, settings)
        return settings

    @classmethod
    def _read(cls, env: Mapping[str, str], overrides: dict[str, object]) -> Settings:
        given = overrides.pop("home", None) or _env(env, "FLIGHTLOG_HOME")
        home = Path(os.path.abspath(str(given))) if given else discover_home(environ=env)
        mode = _env(env, "FLIGHTLOG_MODE").lower() or "online"
        if mode not in MODES:
            raise InvalidInput(f"FLIGHTLOG_MODE={mode!r} is not valid: use one of {', '.join(MODES)}")
        policy = _env(env, "FLIGHTLOG_LOG_POLICY").lower() or "block"
        if policy not in LOG_POLICIES:
            raise InvalidInput(f"FLIGHTLOG_LOG_POLICY={policy!r} is not valid: use one of {', '.join(LOG_POLICIES)}")
        console = _env(env, "FLIGHTLOG_CONSOLE").lower() or "auto"
        if console not in CONSOLE_CHOICES:
            raise InvalidInput(f"FLIGHTLOG_CONSOLE={console!r} is not valid: use one of {', '.join(CONSOLE_CHOICES)}")
        url = _env(env, "FLIGHTLOG_URL").rstrip("/") or None
        values: dict[str, object] = dict(
            home=home,
            url=url,
            token=_env(env, "FLIGHTLOG_TOKEN") or None,
            project=_env(env, "FLIGHTLOG_PROJECT") or "default",
            run_id=_env(env, "FLIGHTLOG_RUN_ID") or None,
            mode=mode,
            # with a server URL, readers go through the API (the http(s) store) unless told otherwise
            store_uri=_env(env, "FLIGHTLOG_STORE") or url or f"sqlite:///{home / 'flightlog.db'}",
            queued_at=_env(env, "FLIGHTLOG_QUEUED_AT") or None,
            resume_from=_env(env, "FLIGHTLOG_RESUME_FROM") or None,
            attempt=_int(env, "FLIGHTLOG_ATTEMPT", 1),
            captured=_env(env, "FLIGHTLOG_CAPTURED") == "1",
            flush_interval=_float(env, "FLIGHTLOG_FLUSH_INTERVAL", 0.5),
            buffer_limit=_int(env, "FLIGHTLOG_BUFFER_LIMIT", 1_000_000),
            log_policy=policy,
            keep_journal=_env(env, "FLIGHTLOG_KEEP_JOURNAL") == "1",
            artifacts=_env(env, "FLIGHTLOG_ARTIFACTS") or None,
            log_metrics=_env(env, "FLIGHTLOG_LOG_METRICS").lower() not in ("0", "false", "no", "off"),
            quiet=_env(env, "FLIGHTLOG_QUIET").lower() in ("1", "true", "yes", "on"),
            console=console in ("auto", "on"),
            env_allow=tuple(n.strip() for n in _env(env, "FLIGHTLOG_ENV_ALLOW").split(",") if n.strip()),
        )
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


_last_settings: tuple[Hashable, Settings] | None = None  # (its key, the settings): `Settings.from_env`


def _settings_key(env: Mapping[str, str], overrides: Mapping[str, object]) -> Hashable | None:
    """What ``Settings.from_env`` reads, when that is only ``FLIGHTLOG_*`` variables and the
    overrides: every such variable set, and the overrides; None when it reads more (a home found
    from the working directory, a relative one) or an override cannot be a key."""
    given = overrides.get("home") or _env(env, "FLIGHTLOG_HOME")
    if not given or not os.path.isabs(str(given)):
        return None
    key = (tuple(sorted((n, env[n]) for n in env if n.startswith("FLIGHTLOG_"))), tuple(sorted(overrides.items())))
    try:
        hash(key)
    except TypeError:
        return None
    return key


class EnvironView(Mapping[str, str]):
    """``os.environ`` for one call that reads many names (``flightlog.init`` reads ~40 of them,
    nearly all unset): the names it holds are taken in one pass, so a name it lacks is answered
    by a set lookup instead of ``os.environ``'s encode-and-``KeyError`` (~1 µs each, a sweep's
    thousand ``init()`` calls paying them a thousand times). Values are read from ``os.environ``
    when asked. A view is for one call's reads, made at its start: it does not see a name set
    later."""

    def __init__(self) -> None:
        self._names = frozenset(os.environ)

    def __getitem__(self, name: str) -> str:
        if name not in self._names:
            raise KeyError(name)
        return os.environ[name]

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        return os.environ.get(name, default) if name in self._names else default

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


HOME_DIR = ".flightlog"


def discover_home(cwd: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None) -> Path:
    """The embedded store of the project the working directory belongs to, found the way git
    finds its repository, so that every command of one project meets the same store wherever
    it is started from (a pipeline step in ``src/``, the CLI at the top):

    1. the nearest ``.flightlog`` directory at or above ``cwd``;
    2. else ``.flightlog`` at the top of the enclosing git work tree (the nearest directory
       holding ``.git``), where the first run of a project creates it;
    3. else ``cwd/.flightlog``.

    The walk stops, as git's does, where the file system changes (a mount point) and, inside
    ``$HOME``, at ``$HOME`` itself (its parent is never searched). ``FLIGHTLOG_HOME`` (read by
    the callers) wins over all of this.
    """
    env = os.environ if environ is None else environ
    start = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    store: Path | None = None
    work_tree: Path | None = None
    for directory in _upwards(start, env.get("HOME", "")):
        if store is None and (directory / HOME_DIR).is_dir():
            store = directory / HOME_DIR
            break
        if work_tree is None and (directory / ".git").exists():
            work_tree = directory
    if store is not None:
        return store
    return (work_tree or start) / HOME_DIR


def _upwards(start: Path, home: str) -> list[Path]:
    """``start`` and its parents, up to a file-system boundary or ``$HOME``."""
    ceiling = Path(os.path.abspath(home)) if home else None
    if ceiling is not None and not start.is_relative_to(ceiling):
        ceiling = None
    out: list[Path] = []
    try:
        device = start.stat().st_dev
    except OSError:
        return [start]
    for directory in (start, *start.parents):
        try:
            if directory.stat().st_dev != device:
                break
        except OSError:
            break
        out.append(directory)
        if directory == ceiling:
            break
    return out


def rank_from_env(environ: Mapping[str, str] | None = None) -> int | None:
    """The distributed rank a launcher gave this process (``RANK``, else ``LOCAL_RANK``), if any.

    The whole identity (world size, node, restart, job) is :func:`rank_identity`'s
    (``flightlog.launchenv``); this stays the one number the capture pipeline stamps on events.

    Only ASCII integers count: ``str.isdigit`` also accepts digits such as ``'\u00b9'`` that
    ``int`` rejects, and a malformed variable must never stop a run from starting.
    """
    env = os.environ if environ is None else environ
    for name in ("RANK", "LOCAL_RANK"):
        value = env.get(name, "").strip()
        if re.fullmatch(r"-?[0-9]+", value):
            return int(value)
    return None


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = _env(env, name)
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise InvalidInput(f"{name}={raw!r} is not an integer") from None


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = _env(env, name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"{name}={raw!r} is not a number of seconds") from None
    if value <= 0:
        raise InvalidInput(f"{name}={raw!r} must be greater than 0")
    return value


def home_from_env(environ: Mapping[str, str] | None = None) -> Path:
    """``FLIGHTLOG_HOME`` (made absolute) if set, else the home ``discover_home`` finds: the
    home whose ``redact.txt`` a process without settings of its own redacts with."""
    env = os.environ if environ is None else environ
    given = env.get("FLIGHTLOG_HOME", "").strip()
    return Path(os.path.abspath(given)) if given else discover_home(environ=env)
