"""Which run a diagnosis compares with when the user names none — and why.

In order:

1. **pinned**: the project's diagnosis settings name one (``baseline: RUN`` under
   ``projects.<name>``), else the most recent run of the project tagged ``baseline=true``
   (``flightlog runs edit RUN --tag baseline=true``). A pinned run is taken as it is: the
   person who pinned it said it is the reference.
2. **same name**: the most recent successful run of the same project and name (a nightly job,
   a pipeline step) — the habit of a team that names its jobs.
3. **comparable**: with a name per run (the W&B habit) there is none of those: the best
   successful run of the project with the same script (or, for a pipeline step, the same
   step) and the same param keys, by the run's monitored metric (a validation loss first).

Runs that diagnosis would flag are skipped in 2 and 3 — a run that "succeeded" with a metric
that went NaN or a loss that diverged is no reference — and the choice says which it skipped.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flightlog.diagnose.behaviour import loss_divergence, lower_is_better, monitored_metric
from flightlog.diagnose.evidence import RunEvidence, Thresholds
from flightlog.errors import InvalidInput, NotFound
from flightlog.models import RunInfo

if TYPE_CHECKING:
    from flightlog.diagnose.reader import Reader

__all__ = ["BaselineChoice", "choose_baseline", "script_of", "PIN_TAG"]

#: the tag that pins a run as its project's baseline (any of these values)
PIN_TAG = "baseline"
_PIN_VALUES = ("true", "yes", "1")
#: how many earlier successful runs of a project are considered
_CANDIDATES = 50
_SCRIPT_SUFFIXES = (".py", ".sh", ".ipynb", ".r", ".jl", ".yaml", ".yml")


@dataclass(frozen=True)
class BaselineChoice:
    run: RunInfo
    choice: str  # "pinned" | "same_name" | "comparable"
    reason: str
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"choice": self.choice, "reason": self.reason, "skipped": list(self.skipped)}


def choose_baseline(
    client: Reader, info: RunInfo, th: Thresholds, pinned_id: str | None = None
) -> BaselineChoice | None:
    """The baseline for ``info`` (see the module docstring), None when nothing qualifies;
    ``pinned_id``: the run the project's settings pin."""
    pinned = _pinned(client, info, pinned_id)
    if pinned is not None:
        return pinned
    earlier = [
        r
        for r in client.runs(
            project=info.project, filter="status = 'succeeded'", order_by="-created", limit=_CANDIDATES
        )
        if r.id != info.id and (info.created is None or r.created is None or r.created <= info.created)
    ]
    skipped: list[dict[str, str]] = []
    flags: dict[str, str | None] = {}

    def usable(r: RunInfo) -> bool:
        if r.id not in flags:
            flags[r.id] = _flagged(client, r, th)
            if flags[r.id]:
                skipped.append({"run": r.id, "why": str(flags[r.id])})
        return flags[r.id] is None

    if info.name:
        for r in earlier:
            if r.name == info.name and usable(r):
                return BaselineChoice(
                    r,
                    "same_name",
                    f"picked automatically: the most recent successful run of project "
                    f"{info.project!r} and name {info.name!r}{_skipped_text(skipped)}",
                    skipped,
                )
    script = script_of(client, info)
    keys = set(info.params)
    if script is None and info.parent_id is None:
        return None  # nothing says which runs do the same work
    comparable = [r for r in earlier if set(r.params) == keys and _same_work(client, info, r, script)]
    comparable = [r for r in comparable if usable(r)]
    if not comparable:
        return None
    what = f"same script {script}" if script else f"same pipeline step {info.name!r}"
    watched = monitored_metric([n for n in info.metrics], th)
    scored: list[tuple[RunInfo, float]] = []
    for r in comparable:
        value = _final(r, watched)
        if value is not None:
            scored.append((r, value))
    if watched and scored:
        sign = 1.0 if lower_is_better(watched, th) else -1.0
        best, value = min(scored, key=lambda rv: sign * rv[1])  # min is stable: the most recent of equals
        reason = f"comparable: {what}, same param keys, best {watched} ({value:.4g})"
    else:
        best = comparable[0]
        reason = f"comparable: {what}, same param keys, the most recent"
    return BaselineChoice(best, "comparable", reason + _skipped_text(skipped), skipped)


def script_of(client: Reader, info: RunInfo) -> str | None:
    """The script a run ran, by its base name (``train.py``), from its command line: the
    runner's command, else the SDK's argv; ``-m module`` for a module."""
    ev = RunEvidence(client, info)
    argv = ev.runner_config.get("command") or ev.context.get("command")
    if isinstance(argv, str):
        argv = argv.split()
    if not isinstance(argv, list) or not argv:
        return None
    args = [str(a) for a in argv]
    for i, a in enumerate(args):
        if a == "-m" and i + 1 < len(args):
            return f"-m {args[i + 1]}"
        if a.lower().endswith(_SCRIPT_SUFFIXES):
            return os.path.basename(a)
    return os.path.basename(args[0]) or None


def _pinned(client: Reader, info: RunInfo, pinned_id: str | None) -> BaselineChoice | None:
    if pinned_id:
        try:
            run = client.run(pinned_id)
        except NotFound as exc:  # a typo must not fall back to another run in silence
            raise InvalidInput(
                f"the diagnosis settings pin baseline {pinned_id!r} for project {info.project!r}, "
                "but there is no such run: fix `baseline:` in diagnose.yaml (flightlog runs ls lists runs)"
            ) from exc
        if run.id != info.id:
            return BaselineChoice(
                run,
                "pinned",
                f"pinned: the diagnosis settings of project {info.project!r} name it (baseline: {pinned_id})",
            )
    values = ", ".join(f"'{v}'" for v in _PIN_VALUES)
    for r in client.runs(project=info.project, filter=f"tags.{PIN_TAG} in ({values})", order_by="-created", limit=5):
        if r.id != info.id:
            return BaselineChoice(r, "pinned", f"pinned: tagged {PIN_TAG}={r.tags.get(PIN_TAG)}")
    return None


def _same_work(client: Reader, info: RunInfo, other: RunInfo, script: str | None) -> bool:
    if info.parent_id is not None:  # a pipeline step: the same step of another run of the pipeline
        return other.parent_id is not None and other.name == info.name
    return script is not None and script_of(client, other) == script


def _flagged(client: Reader, r: RunInfo, th: Thresholds) -> str | None:
    """Why diagnosis would not trust ``r`` as a reference, or None."""
    bad = [m.name for m in r.metrics.values() if m.nonfinite]
    if bad:
        return f"{bad[0]} became NaN or infinite"
    if loss_divergence(RunEvidence(client, r, th)) is not None:
        return "its loss diverged"
    return None


def _final(r: RunInfo, name: str | None) -> float | None:
    m = r.metrics.get(name) if name else None
    if m is None or m.last is None or not math.isfinite(m.last):
        return None
    return float(m.last)


def _skipped_text(skipped: list[dict[str, str]]) -> str:
    if not skipped:
        return ""
    shown = "; ".join(f"{s['run'][:12]}: {s['why']}" for s in skipped[:3])
    return f" (skipped {len(skipped)} flagged run(s): {shown})"
