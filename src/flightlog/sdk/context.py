"""Runtime context of a run: code revision, interpreter, packages, host, command, allow-listed env.

Computed once per process and cached (packages and git are the slow parts, ~50–150 ms), on the
background thread, so ``flightlog.init()`` stays fast and creating many runs stays cheap. The
package list is also cached on disk under FLIGHTLOG_HOME, keyed by the interpreter and the
modification times of its import path's directories (installing or removing a package changes
them), because every short process — each step of a pipeline is a ``flightlog run`` — would
otherwise spend ~0.1 s reading hundreds of package metadata files before its run can end.
The environment is never recorded whole: only names on an allow-list (plus
FLIGHTLOG_ENV_ALLOW), and values whose names look secret are left out even then.
"""

from __future__ import annotations

import fnmatch
import getpass
import hashlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from flightlog.filemodes import PRIVATE_FILE, private_dirs

__all__ = ["process_context", "git_info", "installed_packages", "allowed_env", "ENV_ALLOW", "looks_secret"]

ENV_ALLOW = (
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "PYTHONHASHSEED",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_PORT",
    "NODE_RANK",
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_NTASKS",
    "SLURM_NODELIST",
    "KUBERNETES_SERVICE_HOST",
    "HOSTNAME",
    "CONDA_DEFAULT_ENV",
    "VIRTUAL_ENV",
    "TZ",
    "LANG",
    "FLIGHTLOG_PROJECT",
    "FLIGHTLOG_MODE",
    "FLIGHTLOG_ATTEMPT",
    "FLIGHTLOG_QUEUED_AT",
    "FLIGHTLOG_RESUME_FROM",
)

_lock = threading.Lock()
_cached: dict[str, Any] | None = None
_UNSET: Any = object()
_git_state: Any = (
    _UNSET  # the working directory's git state, once per process (a warm runner leaves it to each step's runner)
)


def looks_secret(name: str) -> bool:
    """The project's one policy for secret names (``flightlog.redaction.names``; imported when
    first needed, so ``import flightlog`` stays light)."""
    from flightlog.redaction.names import is_secret_name

    return is_secret_name(name)


@lru_cache(maxsize=8)
def _allow_pattern(extra: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(fnmatch.translate(p) for p in (*ENV_ALLOW, *extra)))


def allowed_env(environ: Mapping[str, str], extra: Sequence[str] = ()) -> dict[str, str]:
    """The allow-listed variables of ``environ``; secret-looking names never, even if listed.

    Read at every run's end (``process_context``): each name is judged once a process (the
    pattern and the secret-name policy depend on the name alone), then looked up; the few
    allowed names are sorted, not the whole environment. A sweep's run: ~12 µs instead of ~35."""
    extra = tuple(extra)
    verdicts = _verdicts(extra)
    names = []
    for name in environ:
        allowed = verdicts.get(name)
        if allowed is None:
            allowed = bool(_allow_pattern(extra).match(name)) and not looks_secret(name)
            if len(verdicts) < _MAX_VERDICTS:  # a process that invents names endlessly judges the rest each time
                verdicts[name] = allowed
        if allowed:
            names.append(name)
    names.sort()
    return {name: environ[name] for name in names}


_MAX_VERDICTS = 4096


@lru_cache(maxsize=8)
def _verdicts(extra: tuple[str, ...]) -> dict[str, bool]:
    """Variable name → allowed, for the allow-list extended by ``extra``."""
    return {}


def _git(args: list[str], cwd: str, *, strip: bool = True) -> str | None:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            timeout=5,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    text = proc.stdout.decode("utf-8", "replace")
    return text.strip() if strip else text.rstrip("\n")


def git_info(cwd: str) -> dict[str, Any] | None:
    """The commit, branch, work tree and dirty state of the repository ``cwd`` is in: two git
    processes (three when dirty), none where no ``.git`` is anywhere above ``cwd`` (and git is
    not pointed elsewhere by ``GIT_DIR``): a pipeline step's runner asks this for every step."""
    if not _may_be_in_git(cwd):
        return None
    head = _git(["rev-parse", "HEAD", "--abbrev-ref", "HEAD", "--show-toplevel"], cwd)
    lines = head.splitlines() if head is not None else []
    if len(lines) != 3:
        return None
    commit, branch, root = lines
    # unstripped: each line is two status letters and a space before the path (" M src/x.py")
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd, strip=False) or ""
    info: dict[str, Any] = {"commit": commit, "dirty": bool(status), "branch": branch, "root": root}
    if status:
        diff = _git(["diff", "HEAD"], cwd) or ""
        info["diff_sha256"] = hashlib.sha256(diff.encode()).hexdigest()
        info["changed_files"] = [line[3:] for line in status.splitlines()][:200]
    return info


def _may_be_in_git(cwd: str) -> bool:
    """False only when git could not find a repository from ``cwd``: no ``.git`` (directory or
    file) in it or any directory above, and no ``GIT_DIR`` saying where one is."""
    if os.environ.get("GIT_DIR"):
        return True
    path = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(path, ".git")):
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def installed_packages(cache_dir: Path | None = None) -> dict[str, str]:
    """Installed distributions, name → version; read through a cache file in ``cache_dir`` when
    given (see the module docstring). The cache is only a shortcut: any problem with it falls
    back to reading the metadata, and a cache that cannot be written is silently skipped."""
    if cache_dir is None:
        return _read_packages()
    path = cache_dir / f"packages-{_packages_key()}.json"
    try:
        cached = json.loads(path.read_text("utf-8"))
        if isinstance(cached, dict) and all(isinstance(v, str) for v in cached.values()):
            return cached
    except (OSError, ValueError):
        pass
    packages = _read_packages()
    try:
        private_dirs(cache_dir)  # FLIGHTLOG_HOME is owner-only (filemodes.py)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE), "w", encoding="utf-8") as out:
            out.write(json.dumps(packages))
        os.replace(tmp, path)
    except OSError:
        pass
    return packages


def _packages_key() -> str:
    """Changes when a package is installed, upgraded or removed anywhere on the import path:
    each of those adds or removes a ``*.dist-info`` entry, which changes its directory's mtime.
    ``sys.path[0]`` (the script's directory, or the working directory) and any other entry
    naming the working directory (an empty entry, as a trailing ``:`` in PYTHONPATH gives) are
    left out: a workload writes its outputs there, and it holds no installed packages."""
    parts = [sys.executable, sys.version]
    cwd = os.getcwd()
    for entry in sys.path[1:]:
        if not entry or os.path.abspath(entry) == cwd:
            continue
        try:
            parts.append(f"{entry}:{os.stat(entry or '.').st_mtime_ns}")
        except OSError:
            parts.append(f"{entry}:-")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def _read_packages() -> dict[str, str]:
    from importlib import metadata

    packages: dict[str, str] = {}
    for dist in metadata.distributions():
        name, version = _name_and_version(dist)
        if name:
            packages[name.lower()] = version
    return dict(sorted(packages.items()))


def _name_and_version(dist: Any) -> tuple[str | None, str]:
    """A distribution's Name and Version, read from its metadata's header lines: ``dist.metadata``
    runs the email parser over the whole file (the long description too), which across a few
    hundred packages is most of a first run's cost in a new home. Anything unusual (no such
    lines before the blank line that ends the header) is read the parser's way."""
    try:
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO")
    except (OSError, UnicodeDecodeError):
        text = None
    if text:
        name = version = None
        for line in text.splitlines():
            if not line:
                break
            if name is None and line.startswith("Name:"):
                name = line[5:].strip()
            elif version is None and line.startswith("Version:"):
                version = line[8:].strip()
            if name and version:
                return name, version
    return dist.metadata["Name"], dist.version


def _container() -> dict[str, Any] | None:
    info: dict[str, Any] = {}
    if os.path.exists("/.dockerenv"):
        info["runtime"] = "docker"
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        info["runtime"] = "kubernetes"
        info["pod"] = os.environ.get("HOSTNAME")
    for name in ("FLIGHTLOG_IMAGE", "CONTAINER_IMAGE", "IMAGE"):
        if os.environ.get(name):
            info["image"] = os.environ[name]
            break
    return info or None


def process_context(extra_env: Sequence[str] = (), *, home: Path | None = None) -> dict[str, Any]:
    """The context of this process (cached after the first call; argv, cwd, pid and the
    allowed environment read each time).

    While none of those changed, the same dict is returned again, so what is derived from it
    is derived once a process, not once a run (a sweep's thousand runs: its redacted form,
    ``redaction/userstrings.py``; its JSON in the store, ``store/sql/ingest.py``). It is
    shared: callers read it and never change it. ``home``: FLIGHTLOG_HOME, where the package
    list is cached between processes."""
    global _git_state, _last
    with _lock:
        interpreter = _interpreter_context(home)
        if _git_state is _UNSET:
            _git_state = git_info(os.getcwd())
        git = _git_state
        command, cwd, pid = list(sys.argv), os.getcwd(), os.getpid()
        env = allowed_env(os.environ, extra_env)
        if _last is not None:
            made_from, last = _last
            if (
                made_from is interpreter
                and last["git"] is git
                and last["pid"] == pid
                and last["cwd"] == cwd
                and last["command"] == command
                and last["env"] == env
            ):
                return last
        context = dict(interpreter)
        context["git"] = git
        context["command"] = command
        context["cwd"] = cwd
        context["pid"] = pid
        context["env"] = env
        _last = (interpreter, context)
        return context


#: (the interpreter context it was made from, the context last returned by `process_context`)
_last: tuple[dict[str, Any], dict[str, Any]] | None = None


def _interpreter_context(home: Path | None) -> dict[str, Any]:
    """What every process of this interpreter on this host shares: computed once, and inherited by
    a fork (a warm runner computes it before forking each pipeline step's runner)."""
    global _cached
    if _cached is None:
        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = str(os.getuid())
        _cached = {
            "python": sys.version.split()[0],
            "python_executable": sys.executable,
            "platform": platform.platform(),
            "host": socket.gethostname(),
            "user": user,
            "cpu_count": os.cpu_count(),
            "packages": installed_packages(home / "cache" if home is not None else None),
            "container": _container(),
        }
    return _cached


def warm_interpreter_context(home: Path | None) -> None:
    with _lock:
        _interpreter_context(home)
