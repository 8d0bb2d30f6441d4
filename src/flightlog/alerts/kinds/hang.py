"""``hang``: a running run whose ranks (or whose single process) stopped making progress.

    - name: hang
      kind: hang
      min_ranks: 1        # how many stalled ranks fire it (default 1)

Fires while the run is running and its hang watch says a rank is stalled now: no step, finished
stage, heartbeat or collective for longer than the watch's threshold (``FLIGHTLOG_HANG_*``,
docs/distributed.md), the stall recorded with the rank's stacks and Flight Recorder as ``stall``
evidence. The alert's ``finding`` is the diagnosis of the hang at the moment it fired: the
culprit rank, the collective it never entered, where it was, the ranks that wait for it.
Resolves when every rank made progress again (``progress_resumed``) or the run ends.

Unlike ``stalled``, which measures silence from the store (no metric, log line or heartbeat),
``hang`` is the rank's own judgement against its usual step time, made inside the process, so
a run that keeps printing while its collectives are stuck still counts, and the alert comes
with the evidence of where it is stuck.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flightlog.alerts.delta import Needs, RunDelta
from flightlog.alerts.kinds.base import EvalEnv, Kind, PerRun, run_labels
from flightlog.alerts.rules import Rule
from flightlog.alerts.schema import Fields
from flightlog.alerts.types import Signal
from flightlog.timefmt import format_duration

__all__ = ["KIND", "HangSpec", "stalled_now"]


@dataclass(frozen=True)
class HangSpec:
    min_ranks: int = 1


def parse(f: Fields) -> HangSpec | None:
    count = f.integer("min_ranks", default=1, minimum=1)
    return HangSpec(count if count is not None else 1)


def stalled_now(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The ``stall`` records whose rank (or process) has not resumed since, by rank (``pid:N``
    for a process that is no rank)."""
    latest: dict[str, dict[str, Any]] = {}
    for item in sorted(records, key=lambda r: (r.get("data") or {}).get("time") or r.get("time") or 0.0):
        data = item.get("data")
        if not isinstance(data, dict):
            continue
        rank = data.get("rank")
        key = f"rank:{rank}" if isinstance(rank, int) else f"pid:{data.get('pid')}"
        latest[key] = data
    return {k: v for k, v in latest.items() if v.get("state") == "stalled"}


class HangEvaluator(PerRun):
    def __init__(self, rules: Sequence[Rule]) -> None:
        super().__init__(rules)
        self._firing: dict[tuple[str, str], float] = {}  # → when the stall began

    def needs(self) -> Needs:
        return Needs(activity=True)

    def forget(self, run_id: str) -> None:
        self._firing = {k: v for k, v in self._firing.items() if k[1] != run_id}

    def evaluate_run(self, delta: RunDelta, env: EvalEnv) -> list[Signal]:
        rules = [r for r in self.rules if r.name in delta.rules]
        if not rules:
            return []
        run = delta.run
        out: list[Signal] = []
        if not delta.running or run.status != "running":
            for rule in rules:
                since = self._firing.pop((rule.name, run.id), None)
                if since is not None:
                    out.append(self._signal(rule, delta, "clear", run.ended or env.now, since, {}, reason="run_ended"))
            return out
        stalled = stalled_now(env.lookup.store.evidence(run.id, "stall"))
        for rule in rules:
            spec: HangSpec = rule.spec
            key = (rule.name, run.id)
            if len(stalled) >= spec.min_ranks and key not in self._firing:
                since = min(float(d.get("since") or d.get("time") or env.now) for d in stalled.values())
                self._firing[key] = since
                finding = _hang_finding(env, run.id)
                out.append(self._signal(rule, delta, "firing", env.now, since, stalled, finding=finding))
            elif len(stalled) < spec.min_ranks and key in self._firing:
                since = self._firing.pop(key)
                out.append(self._signal(rule, delta, "clear", env.now, since, stalled, reason="progress_resumed"))
        return out

    def _signal(
        self,
        rule: Rule,
        delta: RunDelta,
        state: str,
        at: float,
        since: float,
        stalled: dict[str, dict[str, Any]],
        *,
        finding: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> Signal:
        ranks = sorted(int(d["rank"]) for d in stalled.values() if isinstance(d.get("rank"), int))
        summary = (finding or {}).get("summary") or ""
        who = (
            ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))
            if ranks
            else ("the process" if stalled else "")
        )
        return Signal(
            rule.name,
            run_labels(rule, delta.run),
            "firing" if state == "firing" else "clear",
            at,
            max(0.0, at - since),
            since=since,
            run_id=delta.run.id,
            project=delta.run.project,
            reason=reason,
            fields={
                "stalled": who,
                "stalled_for": format_duration(max(0.0, at - since)),
                "finding": summary,
                "culprit": _culprit_text(finding),
            },
            evidence={"stalled": list(stalled.values()), "finding": finding},
        )


def _hang_finding(env: EvalEnv, run_id: str) -> dict[str, Any] | None:
    """The diagnosis's hang finding now (the culprit, where it is, who waits); None without diagnosis."""
    try:
        report = env.lookup.diagnose(run_id)
    except Exception:
        return None
    for finding in (report or {}).get("findings") or []:
        if finding.get("category") in ("hang", "collective_mismatch"):
            return dict(finding)
    return None


def _culprit_text(finding: dict[str, Any] | None) -> str:
    culprit = (finding or {}).get("culprit") or {}
    if not isinstance(culprit, dict) or culprit.get("rank") is None:
        return ""
    return f"rank {culprit['rank']}"


KIND = Kind(
    name="hang",
    doc="a rank (or the process) stopped making progress, found by its hang watch while the run runs",
    fields=("stalled", "stalled_for", "finding", "culprit"),
    default_summary="run {run.name} ({run.short_id}) hangs: {stalled} made no progress for {stalled_for}. {finding}",
    parse=parse,
    evaluators=lambda rules: [HangEvaluator(rules)] if rules else [],
)
