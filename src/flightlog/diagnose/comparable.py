"""What makes an earlier run a fair reference for another: it did the same work, it shares
params with it, and nothing about it is flagged.

**The same work** is the same script — by its path in the repository (relative to the git
root the run's context recorded, ``vision/train.py``), never by its file name alone
(``vision/train.py`` and ``speech/train.py`` are two programs) — or, for a pipeline step, the
same step of another run of the pipeline. Without a repository the script's absolute path
stands in for it; a module run with ``-m`` is its module.

**Params in common**: a run that shares no param name with the candidate was configured for
something else. A run that recorded no params at all is not told apart by them (a job that
gained its first ``--param`` is still the same job).

**Flagged** runs are no reference, whatever their status says: a run that failed (or crashed,
was killed, was stopped), one whose loss became NaN or infinite, one whose loss diverged.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flightlog.diagnose.behaviour import loss_divergence, nonfinite_losses
from flightlog.diagnose.evidence import RunEvidence, Thresholds
from flightlog.models import RunInfo
from flightlog.statuses import UNSUCCESSFUL_STATUSES

if TYPE_CHECKING:
    from flightlog.diagnose.reader import Reader

__all__ = [
    "Work",
    "Flag",
    "work_of",
    "script_path",
    "same_work",
    "same_script",
    "not_comparable",
    "flag_of",
    "flag_counts",
    "FLAG_ORDER",
]

_SCRIPT_SUFFIXES = (".py", ".sh", ".ipynb", ".r", ".jl")
#: how flags are listed: the statuses in lifecycle order, then what the metrics say
FLAG_ORDER = (*UNSUCCESSFUL_STATUSES, "nan_loss", "diverged")


@dataclass(frozen=True)
class Work:
    """What a run did: its script (see the module) and, for a pipeline step, the step's name."""

    script: str | None
    step: str | None = None

    def describe(self) -> str:
        if self.step is not None:
            return f"pipeline step {self.step!r}"
        return f"script {self.script}" if self.script else "an unknown script"


@dataclass(frozen=True)
class Flag:
    kind: str  # a status (failed, crashed, killed, stopped), nan_loss or diverged
    why: str  # for a person: "it failed", "val_loss became NaN or infinite", "its loss diverged"


def work_of(client: Reader, info: RunInfo) -> Work:
    if info.parent_id is not None:
        return Work(None, info.name)
    # only the two records the script is read from: a run's evidence can be large (manifests)
    configs = [e for e in client.evidence(info, "runner", "config") if isinstance(e.get("data"), dict)]
    try:
        context = client.context(info)
    except Exception:  # context is optional evidence
        context = {}
    return Work(script_path(configs[-1]["data"] if configs else {}, context or {}))


def script_path(runner_config: dict[str, Any], context: dict[str, Any]) -> str | None:
    """The script a run ran, as a path in its repository (see the module docstring): from the
    runner's command, else the SDK's argv; resolved against the run's working directory."""
    argv = runner_config.get("command") or context.get("command")
    if isinstance(argv, str):
        argv = argv.split()
    if not isinstance(argv, list) or not argv:
        return None
    args = [str(a) for a in argv]
    where = runner_config.get("cwd") or context.get("cwd")
    cwd = where if isinstance(where, str) else None
    git = context.get("git")
    top = git.get("root") if isinstance(git, dict) else None
    root = top if isinstance(top, str) else None
    for i, a in enumerate(args):
        if a == "-m" and i + 1 < len(args):
            return f"-m {args[i + 1]}"
        if a.lower().endswith(_SCRIPT_SUFFIXES):
            return _in_repository(a, cwd, root)
    first = args[0]
    # a command on the PATH (`true`, `make`) is its name; a path to a program is a path
    return _in_repository(first, cwd, root) if "/" in first else first


def _in_repository(path: str, cwd: str | None, root: str | None) -> str:
    """``path`` relative to the repository's root when it lies inside it, else absolute (or
    as given, when the working directory is not known)."""
    if not posixpath.isabs(path):
        if cwd is None:
            return posixpath.normpath(path)
        path = posixpath.join(cwd, path)
    path = posixpath.normpath(path)
    if root:
        root = posixpath.normpath(root)
        if path.startswith(root.rstrip("/") + "/"):
            return posixpath.relpath(path, root)
    return path


def same_script(a: str, b: str) -> bool:
    """The same script: the same path — or, where one run knew its repository and the other
    did not, the absolute path ends with the repository path (``/src/app/vision/train.py``
    and ``vision/train.py``)."""
    if a == b:
        return True
    if posixpath.isabs(a) != posixpath.isabs(b) and not a.startswith("-m ") and not b.startswith("-m "):
        full, rel = (a, b) if posixpath.isabs(a) else (b, a)
        return "/" in rel and full.endswith("/" + rel)
    return False


def not_comparable(info: RunInfo, work: Work, other: RunInfo, other_work: Work) -> str | None:
    """Why ``other`` is no reference for ``info`` although they are related (same name or same
    work), or None when it is comparable."""
    if work.script and other_work.script and not same_script(work.script, other_work.script):
        return f"another script ({other_work.script})"
    if info.params and other.params and not (info.params.keys() & other.params.keys()):
        return "no params in common"
    return None


def same_work(work: Work, other_work: Work) -> bool:
    if work.step is not None:
        return other_work.step == work.step
    return work.script is not None and other_work.script is not None and same_script(work.script, other_work.script)


def flag_of(client: Reader, info: RunInfo, th: Thresholds | None = None) -> Flag | None:
    """Why diagnosis would not trust ``info`` as a reference, or None (cheapest checks first)."""
    if info.status in UNSUCCESSFUL_STATUSES:
        return Flag(info.status, f"it {info.status}")
    bad = nonfinite_losses(info, th)
    if bad:
        return Flag("nan_loss", f"{bad[0]} became NaN or infinite")
    if loss_divergence(RunEvidence(client, info, th or Thresholds())) is not None:
        return Flag("diverged", "its loss diverged")
    return None


def flag_counts(flags: list[Flag]) -> dict[str, int]:
    """``{"failed": 3, "nan_loss": 2}`` in :data:`FLAG_ORDER`."""
    counts: dict[str, int] = {}
    for kind in FLAG_ORDER:
        n = sum(1 for f in flags if f.kind == kind)
        if n:
            counts[kind] = n
    return counts
