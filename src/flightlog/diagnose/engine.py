"""The diagnosis engine: run the analyzers over one run's evidence, merge their findings, and
assemble the report of docs/architecture.md:

    {"run", "status", "kind", "findings": [{"category", "confidence", "summary",
     "evidence": [{"source", "detail", "at"}], "next_steps"}], "baseline", "runbook", "rightsizing"}

Analyzers are small functions of one :class:`Context`, run in order; adding one never means
editing the others (``ANALYZERS``).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from flightlog.diagnose.baseline import baseline_findings
from flightlog.diagnose.behaviour import analyze_behaviour
from flightlog.diagnose.compare import compare_evidence
from flightlog.diagnose.datachecks import analyze_data, removed_columns
from flightlog.diagnose.distributed import analyze_distributed, culprit_first
from flightlog.diagnose.evidence import RunEvidence, Thresholds
from flightlog.diagnose.failures import FailureFacts, analyze_failure, missing_keys
from flightlog.diagnose.findings import LEAD, Finding, merge_findings
from flightlog.diagnose.memory import analyze_memory
from flightlog.diagnose.performance import analyze_performance
from flightlog.diagnose.reader import reader_home
from flightlog.diagnose.regression import analyze_regression
from flightlog.diagnose.rightsize import rightsize_runs
from flightlog.diagnose.runbook import load_runbook, match_runbook
from flightlog.diagnose.selection import BaselineChoice, baseline_for, choice_fields
from flightlog.diagnose.settings import thresholds_for
from flightlog.diagnose.signals import Signal, signal_name
from flightlog.diagnose.stragglers import analyze_stragglers
from flightlog.diagnose.taxonomy import FAILURE_CATEGORIES
from flightlog.errors import InvalidInput
from flightlog.models import SERVING_KIND, RunInfo
from flightlog.plugins import Ref, features
from flightlog.statuses import UNSUCCESSFUL_STATUSES
from flightlog.timefmt import iso

if TYPE_CHECKING:
    from flightlog.diagnose.reader import Reader

__all__ = ["diagnose_run", "service_stop", "Context", "ANALYZERS", "LEAD"]

#: the choice of a diagnosis made with --no-baseline
_NOT_LOOKED_FOR: dict[str, Any] = {
    "run": None,
    "choice": None,
    "reason": "not looked for (--no-baseline)",
    "script": None,
    "step": None,
    "skipped": [],
    "flagged": {},
    "not_comparable": [],
    "comparable_runs": 0,
}
#: the weight kept by a performance or behaviour signal in a run that failed for another reason
SECONDARY = 0.6


@dataclass
class Context:
    run: RunEvidence
    baseline: RunEvidence | None = None
    comparison: dict[str, Any] | None = None
    choice: BaselineChoice | None = None  # how the baseline was chosen, and the comparable runs seen
    facts: FailureFacts = field(default_factory=FailureFacts)
    findings: list[Finding] = field(default_factory=list)


def _failures(ctx: Context) -> list[Finding]:
    return analyze_failure(ctx.run, ctx.facts)


def _performance(ctx: Context) -> list[Finding]:
    return analyze_performance(ctx.run)


def _memory(ctx: Context) -> list[Finding]:
    return analyze_memory(ctx.run)


def _behaviour(ctx: Context) -> list[Finding]:
    return analyze_behaviour(ctx.run)


def _data(ctx: Context) -> list[Finding]:
    return analyze_data(ctx.run, ctx.baseline)


def _regression(ctx: Context) -> list[Finding]:
    return analyze_regression(ctx.run, ctx.baseline, ctx.comparison, ctx.choice)


def _schema(ctx: Context) -> list[Finding]:
    """A KeyError on a column that drift evidence saw removed: two sources, one cause."""
    removed = removed_columns(ctx.run)
    hit = [key for key in missing_keys(ctx.facts) if key in removed]
    if not hit:
        return []
    what = f"column {hit[0]!r}" if len(hit) == 1 else "columns " + ", ".join(repr(k) for k in hit[:6])
    signal = Signal(
        "data_error",
        0.35,
        "column_removed_per_the_drift_report",
        "evidence",
        f"the drift report on this run shows {what} removed from the input",
        ctx.facts.traceback_at,
    )
    return [Finding("data_error", "", [signal], kind="data")]


def _distributed(ctx: Context) -> list[Finding]:
    """Ranks of a distributed run (the culprit and its victims), and hangs (docs/distributed.md)."""
    return analyze_distributed(ctx.run) + analyze_stragglers(ctx.run)


def _from_baseline(ctx: Context) -> list[Finding]:
    if ctx.comparison is None:
        return []
    return baseline_findings(merge_findings(ctx.findings), ctx.comparison)


#: how a service is taken down on purpose — a rollout, a scale-down, Kubernetes, Ctrl-C — rather
#: than from a fault: a replica that ended ``stopped`` by one of these has nothing to find
_SERVICE_STOP_SIGNALS = frozenset({int(signal.SIGTERM), int(signal.SIGINT)})


def service_stop(info: RunInfo) -> str | None:
    """What a person should read about a service's run that was stopped by a rolling restart or
    a scale-down ("stopped by SIGTERM at …: a clean stop"), None for any other end. Why: every
    replica replaced in a rollout ends this way, and "terminated from outside" with advice to
    checkpoint and resume is training advice that would send them looking for a fault."""
    if info.status != "stopped" or info.signal not in _SERVICE_STOP_SIGNALS:
        return None
    when = iso(info.ended)
    at = f" at {when[11:19]}Z" if when else ""
    return (
        f"stopped by {signal_name(int(info.signal))}{at}: a clean stop (a rollout, a scale-down or a shutdown), "
        "not a failure"
    )


def _service_failures(ctx: Context) -> list[Finding]:
    """A service's end: what a crash, a kill or an error says, and nothing for a clean stop."""
    findings = _failures(ctx)
    if service_stop(ctx.run.info) is not None:
        findings = [f for f in findings if f.category != "killed_by_signal"]
    return findings


#: what is judged on a long-running service's run (a serving replica): what ended or broke the
#: process — a crash, an out-of-memory kill, a signal other than a clean stop —, never training
#: behaviour (steps, data loading, losses, a tail after the last step), and no training run as
#: its baseline
SERVICE_ANALYZERS: tuple[Callable[[Context], list[Finding]], ...] = (_service_failures,)

ANALYZERS: tuple[Callable[[Context], list[Finding]], ...] = (
    _failures,
    _performance,
    _memory,
    _behaviour,
    _data,
    _schema,
    _regression,
    _distributed,
    _from_baseline,
)


def diagnose_run(
    client: Reader,
    run: str | RunInfo,
    baseline: str | RunInfo | None = None,
    *,
    auto_baseline: bool = True,
    thresholds: Thresholds | None = None,
    cwd: str | os.PathLike[str] | None = None,
    service: bool = False,
) -> dict[str, Any]:
    """The diagnosis report of ``run`` (see the module docstring for its shape).

    A serving replica's run (``RunInfo.kind``) gets its feature's report, which asks for this
    one with ``service=True``: only ``SERVICE_ANALYZERS``, no baseline."""
    info = client.run(run if isinstance(run, str) else run.id)
    pipeline = info.parent_id is None and "pipeline" in info.tags
    if baseline is None and not service and (pipeline or info.kind == SERVING_KIND):
        # a whole-run diagnosis a feature has (a pipeline's, a replica's)
        for diagnoser in features().diagnosis_reports():
            report = diagnoser.load()(client, info.id) if isinstance(diagnoser, Ref) else diagnoser(client, info.id)
            if report is not None:
                return dict(report)
    ev = RunEvidence(client, info, thresholds or thresholds_for(client, info.project, cwd))
    ctx = Context(ev)
    if baseline is not None:
        base = client.run(baseline if isinstance(baseline, str) else baseline.id)
        if base.id == info.id:
            raise InvalidInput("a run cannot be its own baseline: pass another run to --baseline")
        ctx.choice = BaselineChoice(base, "given", "given with --baseline")
    elif auto_baseline and not service:
        ctx.choice = baseline_for(client, info, cwd=cwd, th=ev.thresholds)
    if ctx.choice is not None and ctx.choice.run is not None:
        ctx.baseline = RunEvidence(client, ctx.choice.run, ev.thresholds)
        ctx.comparison = compare_evidence(ev, ctx.baseline, chosen="given" if baseline is not None else "automatic")
        ctx.comparison.update(choice_fields(ctx.choice))
    built_in = SERVICE_ANALYZERS if service else ANALYZERS
    for analyzer in (*built_in, *features().diagnosis_analyzers()):  # the built-in ones, then the features'
        ctx.findings.extend(analyzer(ctx))
    ranked = culprit_first(ctx.findings, distributed="distributed" in info.tags)  # the culprit, never a victim
    findings = _own_findings_first(_divergence_first(_secondary(info, merge_findings(ranked))))
    kind = _kind(info, findings)
    runbook = _runbook(client, ctx, findings, cwd)
    return {
        "run": info.id,
        "status": info.status,
        "kind": kind,
        "findings": [f.to_dict() for f in findings],
        "baseline": ctx.comparison,
        "baseline_choice": ctx.choice.to_dict() if ctx.choice is not None else _NOT_LOOKED_FOR,
        "runbook": runbook,
        "rightsizing": rightsize_runs([ev], {"run": info.id}),
    }


def _secondary(info: RunInfo, findings: list[Finding]) -> list[Finding]:
    """In a run that failed, what made it fail leads: performance findings and a memory trend
    are kept, at a lower weight, as context for the failure."""
    if info.status not in UNSUCCESSFUL_STATUSES:
        return findings
    failure = [f for f in findings if f.category in FAILURE_CATEGORIES or f.category == "nan_loss"]
    if not failure or failure[0].confidence < 0.4:
        return findings
    out = []
    for f in findings:
        if f.category not in FAILURE_CATEGORIES and f.category != "nan_loss":
            f = replace(f, signals=[replace(s, weight=s.weight * SECONDARY) for s in f.signals])
        out.append(f)
    return merge_findings(out)


#: what an exploding loss brings with it: its final value is worse than the baseline's, and its
#: best came early; both are consequences of the divergence, not causes of their own
_CONSEQUENCES_OF_DIVERGENCE = ("metric_regressed", "loss_plateau")


def _divergence_first(findings: list[Finding]) -> list[Finding]:
    """A diverged loss leads: a regression or plateau beside it keeps a lower weight, below it."""
    lead = next((f for f in findings if f.category == "loss_divergence"), None)
    if lead is None or lead.confidence < LEAD:
        return findings
    out = []
    for f in findings:
        if f.category in _CONSEQUENCES_OF_DIVERGENCE:
            scale = min(SECONDARY, 0.95 * lead.confidence / max(f.confidence, 1e-9))
            f = replace(f, signals=[replace(s, weight=s.weight * scale) for s in f.signals])
        out.append(f)
    return merge_findings(out)


#: findings about the run against others: never above what the run itself shows
_AGAINST_OTHERS = ("metric_regressed",)
#: what the run itself shows: its failure, its behaviour, its phases (a plateau is not among
#: them: a model that converged to a worse place stops improving too, and its reference
#: run plateaued the same way — the regression says more than the plateau)
_OWN = frozenset(
    {
        *FAILURE_CATEGORIES,
        "nan_loss",
        "loss_divergence",
        "slow_startup",
        "slow_completion",
        "queue_wait",
        "data_loader_bottleneck",
        "memory_leak",
        "hang",
        "collective_mismatch",
        "straggler",
    }
)


def _own_findings_first(findings: list[Finding]) -> list[Finding]:
    """A regression against other runs never outranks the run's own failure or behaviour
    lead (a slow start, a slow completion, a failure category): it keeps a lower weight,
    below the strongest of them."""
    lead = next((f for f in findings if f.category in _OWN and f.confidence >= LEAD), None)
    if lead is None:
        return findings
    out = []
    for f in findings:
        if f.category in _AGAINST_OTHERS and f.confidence >= 0.95 * lead.confidence:
            f = _capped(f, 0.9 * lead.confidence)
        out.append(f)
    return merge_findings(out)


def _capped(f: Finding, target: float) -> Finding:
    """``f`` with every signal's weight scaled by one factor so that its confidence (a
    noisy-OR of the weights, not their sum) comes to at most ``target``."""
    lo, hi = 0.0, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        if _scaled(f, mid).confidence <= target:
            lo = mid
        else:
            hi = mid
    return _scaled(f, lo)


def _scaled(f: Finding, k: float) -> Finding:
    return replace(f, signals=[replace(s, weight=s.weight * k) for s in f.signals])


def _kind(info: RunInfo, findings: list[Finding]) -> str:
    if findings and findings[0].confidence >= LEAD:
        return findings[0].problem_kind
    if info.status in UNSUCCESSFUL_STATUSES and findings:
        return findings[0].problem_kind
    return "none"


def _runbook(
    client: Reader, ctx: Context, findings: list[Finding], cwd: str | os.PathLike[str] | None
) -> list[dict[str, Any]]:
    entries = load_runbook(reader_home(client), cwd)
    chain = ctx.facts.chain
    exception = "\n".join(e.headline() for e in chain) if chain else None
    failure = ctx.run.info.failure or {}
    if exception is None and failure.get("exception"):
        exception = f"{failure['exception']}: {failure.get('message', '')}"
    lines = [e.message for e in ctx.run.recent]
    if exception:
        lines.append(exception)
    return match_runbook(
        entries, findings=[(f.category, f.confidence) for f in findings], exception=exception, log_lines=lines
    )
