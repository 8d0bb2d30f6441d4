"""Which run a run is measured against — one choice for ``flightlog diagnose``, ``flightlog
compare``, triage's last good run, the API and the UI — and why (docs/troubleshooting.md).

In order:

1. **pinned**: the project's diagnosis settings name one (``baseline: RUN`` under
   ``projects.<name>``), else the most recent run of the project tagged ``baseline=true``
   (``flightlog runs edit RUN --tag baseline=true``). A pinned run is taken as it is: the
   person who pinned it said it is the reference.
2. **same name**: the most recent comparable run of the same project and name (a nightly job)
   created before it.
3. **comparable**: with a name per run (the W&B habit) there is none of those: the best
   comparable run of the project by the run's monitored metric (a validation loss first).

Comparable (:mod:`.comparable`): the same work (the same script by its path in the
repository, or the same pipeline step), params in common, and not flagged (failed, NaN,
diverged). The choice keeps every comparable run it saw as the *references* — the spread a
metric difference is judged against — and counts what it skipped, and why, so that a report
can say "5 earlier runs of this name, all flagged: 3 failed, 2 nan_loss".
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flightlog.diagnose.behaviour import lower_is_better, monitored_metric
from flightlog.diagnose.comparable import Flag, Work, flag_counts, flag_of, not_comparable, same_work, work_of
from flightlog.diagnose.evidence import Thresholds
from flightlog.diagnose.reader import reader_home
from flightlog.diagnose.settings import pinned_baseline, thresholds_for
from flightlog.errors import InvalidInput, NotFound
from flightlog.models import RunInfo
from flightlog.statuses import TERMINAL_STATUSES, sql_list

if TYPE_CHECKING:
    from flightlog.diagnose.reader import Reader

__all__ = ["BaselineChoice", "choose_baseline", "baseline_for", "choice_fields", "PIN_TAG", "MAX_REFERENCES"]

#: the tag that pins a run as its project's baseline (any of these values)
PIN_TAG = "baseline"
_PIN_VALUES = ("true", "yes", "1")
#: how many earlier ended runs of a project are looked at
_CANDIDATES = 50
#: the comparable runs kept as references (the newest): enough to see a spread
MAX_REFERENCES = 10


@dataclass(frozen=True)
class BaselineChoice:
    """The run chosen (None when none qualifies), how, why, and what was seen on the way."""

    run: RunInfo | None
    choice: str | None  # "pinned" | "same_name" | "comparable" | "given" | None
    reason: str
    work: Work | None = None
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"run", "why", "flag"}: flagged runs
    unlike: list[dict[str, str]] = field(default_factory=list)  # {"run", "why"}: related but not comparable
    references: list[RunInfo] = field(default_factory=list)  # comparable, unflagged, newest first

    @property
    def pinned(self) -> bool:
        """Whether a person named the baseline (pinned, or given): then one run is enough."""
        return self.choice in ("pinned", "given")

    @property
    def flagged(self) -> dict[str, int]:
        return flag_counts([Flag(s["flag"], s["why"]) for s in self.skipped])

    def to_dict(self) -> dict[str, Any]:
        """The JSON of a choice (``baseline_choice`` of a diagnosis, ``onset.choice`` of triage)."""
        return {
            "run": self.run.id if self.run is not None else None,
            "choice": self.choice,
            "reason": self.reason,
            "script": self.work.script if self.work is not None else None,
            "step": self.work.step if self.work is not None else None,
            "skipped": list(self.skipped),
            "flagged": self.flagged,
            "not_comparable": list(self.unlike),
            "comparable_runs": len(self.references),
        }


def choice_fields(choice: BaselineChoice) -> dict[str, Any]:
    """What a comparison document (``compare``, a diagnosis's ``baseline``) says of its choice:
    the choice's JSON without its ``run`` (the document's ``baseline`` names it)."""
    doc = choice.to_dict()
    doc.pop("run")
    return doc


def baseline_for(
    client: Reader, info: RunInfo, *, cwd: str | os.PathLike[str] | None = None, th: Thresholds | None = None
) -> BaselineChoice:
    """:func:`choose_baseline` with the project's diagnosis settings (its thresholds and its
    pinned run) read the way ``flightlog diagnose`` reads them: what every surface calls."""
    settings = th or thresholds_for(client, info.project, cwd)
    return choose_baseline(client, info, settings, pinned_baseline(info.project, reader_home(client), cwd))


def choose_baseline(
    client: Reader, info: RunInfo, th: Thresholds | None = None, pinned_id: str | None = None
) -> BaselineChoice:
    """The baseline of ``info`` (see the module docstring); ``pinned_id``: the run the
    project's settings pin. The choice's ``run`` is None when nothing qualifies, and its
    reason then says what was found and why none of it would do."""
    th = th or Thresholds()
    pinned = _pinned(client, info, pinned_id)
    work = work_of(client, info)
    if pinned is not None:  # a person's word: no spread needed, none looked for
        return BaselineChoice(pinned[0], "pinned", pinned[1], work)
    related, flagged, different = _related(client, info, work, th)
    references = [r for r, _ in related]
    skipped = [{"run": r.id, "why": f.why, "flag": f.kind} for r, f in flagged]
    unlike = [{"run": r.id, "why": why} for r, why in different]
    created = {r.id: r.created or 0.0 for r, _ in flagged}
    same_name = [r for r, by_name in related if by_name]
    if same_name:
        # the flagged runs it passed over on the way to it (newer than it), not the older ones seen after
        newer = [s for s in skipped if created.get(s["run"], 0.0) > (same_name[0].created or 0.0)]
        reason = (
            f"picked automatically: the most recent successful run of project {info.project!r} and name "
            f"{info.name!r}{_skipped_text(newer)}"
        )
        return BaselineChoice(same_name[0], "same_name", reason, work, skipped, unlike, references)
    if references:
        best, how = _best(info, references, th)
        keys = (
            "same param keys" if all(r.params.keys() == info.params.keys() for r in references) else "params in common"
        )
        reason = f"comparable: same {work.describe()}, {keys}, {how}{_skipped_text(skipped)}"
        return BaselineChoice(best, "comparable", reason, work, skipped, unlike, references)
    by_name = sum(
        1 for r in [*(r for r, _ in flagged), *(r for r, _ in different)] if info.name and r.name == info.name
    )
    of = "of this name" if by_name == len(skipped) + len(unlike) else f"of this {work.describe()}"
    if 0 < by_name < len(skipped) + len(unlike):
        of = f"of this name or {work.describe()}"
    return BaselineChoice(None, None, _none_reason(info, work, skipped, unlike, of), work, skipped, unlike, [])


def _related(
    client: Reader, info: RunInfo, work: Work, th: Thresholds
) -> tuple[list[tuple[RunInfo, bool]], list[tuple[RunInfo, Flag]], list[tuple[RunInfo, str]]]:
    """The earlier runs of the same name or the same work: the comparable ones (with whether
    they share the name), the flagged ones and the ones that are not comparable, newest first."""
    if work.script is None and work.step is None and not info.name:
        return [], [], []  # nothing says which runs do the same work
    earlier = [
        r
        for r in client.runs(
            project=info.project,
            filter=f"status in {sql_list(TERMINAL_STATUSES)}",
            order_by="-created",
            limit=_CANDIDATES,
        )
        if r.id != info.id and (info.created is None or r.created is None or r.created <= info.created)
    ]
    good: list[tuple[RunInfo, bool]] = []
    skipped: list[tuple[RunInfo, Flag]] = []
    unlike: list[tuple[RunInfo, str]] = []
    for r in earlier:
        if len(good) >= MAX_REFERENCES:
            break
        by_name = bool(info.name) and r.name == info.name
        if not by_name and (work.step is not None) != (r.parent_id is not None):
            continue
        if (
            not by_name
            and work.step is None
            and info.params
            and r.params
            and not (r.params.keys() & info.params.keys())
        ):
            continue  # another name and nothing in common: unrelated, not worth reading its context
        other = work_of(client, r)
        if not by_name and not same_work(work, other):
            continue
        why = not_comparable(info, work, r, other)
        if why is not None:
            unlike.append((r, why))
            continue
        flag = flag_of(client, r, th)
        if flag is not None:
            skipped.append((r, flag))
            continue
        good.append((r, by_name))
    return good, skipped, unlike


def _best(info: RunInfo, references: list[RunInfo], th: Thresholds) -> tuple[RunInfo, str]:
    watched = monitored_metric(list(info.metrics), th)
    scored = [(r, v) for r in references if (v := _final(r, watched)) is not None]
    if watched and scored:
        sign = 1.0 if lower_is_better(watched, th) else -1.0
        best, value = min(scored, key=lambda rv: sign * rv[1])  # min is stable: the most recent of equals
        return best, f"best {watched} ({value:.4g})"
    return references[0], "the most recent"


def _none_reason(
    info: RunInfo, work: Work, skipped: list[dict[str, str]], unlike: list[dict[str, str]], of: str
) -> str:
    """Why there is no baseline, counted: what was found (``of`` this name, this script) and
    what was wrong with it."""
    n = len(skipped) + len(unlike)
    if n == 0:
        known = work.script is not None or work.step is not None
        what = work.describe() if not info.name else f"name {info.name!r}" + (f" or {work.describe()}" if known else "")
        if work.script is None and work.step is None and not info.name:
            return "nothing says which runs do the same work (no script, no pipeline step, no name)"
        return f"no earlier run of the same {what}"
    runs = f"{n} earlier run{'s' if n != 1 else ''} {of}"
    flagged = ", ".join(f"{v} {k}" for k, v in flag_counts([Flag(s["flag"], s["why"]) for s in skipped]).items())
    reasons: dict[str, int] = {}
    for u in unlike:
        key = u["why"].split(" (")[0]
        reasons[key] = reasons.get(key, 0) + 1
    different = ", ".join(f"{v} {k}" for k, v in reasons.items())
    if not unlike:
        text = f"{runs}, all flagged: {flagged}"
    elif not skipped:
        text = f"{runs}, none comparable: {different}"
    else:
        text = f"{runs}: {len(skipped)} flagged ({flagged}), {len(unlike)} not comparable ({different})"
    return text + _skipped_text(skipped, lead=" (")


def _pinned(client: Reader, info: RunInfo, pinned_id: str | None) -> tuple[RunInfo, str] | None:
    if pinned_id:
        try:
            run = client.run(pinned_id)
        except NotFound as exc:  # a typo must not fall back to another run in silence
            raise InvalidInput(
                f"the diagnosis settings pin baseline {pinned_id!r} for project {info.project!r}, "
                "but there is no such run: fix `baseline:` in diagnose.yaml (flightlog runs ls lists runs)"
            ) from exc
        if run.id != info.id:
            return run, f"pinned: the diagnosis settings of project {info.project!r} name it (baseline: {pinned_id})"
    values = ", ".join(f"'{v}'" for v in _PIN_VALUES)
    for r in client.runs(project=info.project, filter=f"tags.{PIN_TAG} in ({values})", order_by="-created", limit=5):
        if r.id != info.id:
            return r, f"pinned: tagged {PIN_TAG}={r.tags.get(PIN_TAG)}"
    return None


def _final(r: RunInfo, name: str | None) -> float | None:
    m = r.metrics.get(name) if name else None
    if m is None or m.last is None or not math.isfinite(m.last):
        return None
    return float(m.last)


def _skipped_text(skipped: list[dict[str, str]], lead: str = " (skipped ") -> str:
    if not skipped:
        return ""
    shown = "; ".join(f"{s['run'][:12]}: {s['why']}" for s in skipped[:3])
    more = f"; … {len(skipped) - 3} more" if len(skipped) > 3 else ""
    if lead == " (skipped ":
        return f" (skipped {len(skipped)} flagged run(s): {shown}{more})"
    return f"{lead}{shown}{more})"
