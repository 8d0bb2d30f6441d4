"""What the serving rule kinds share (the serving feature's, registered through the feature
table's ``flightlog_alert_rule_kinds``): replicas grouped by endpoint, environment and version.

A serving replica is a run tagged ``serving.endpoint``, ``serving.env``, ``serving.model``,
``serving.version`` and ``serving.replica``. A serving rule judges a *group*: the replicas of
one endpoint in one environment serving one version (a canary and the stable version are two
groups), so every alert names the endpoint, the environment and the version serving, in its
labels (its identity) and in its summary fields. ``endpoint:`` and ``env:`` scope a rule.

The evaluator learns the replicas of each group from the runs of each cycle, reads their
window of evidence from the store when one of them has news, and turns "holds / does not
hold" into firing and clear signals. The alerts are not about one run: they outlive a
replica (``run_scoped=False``), and clear when the condition stops holding.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flightlog.alerts.delta import Cycle, Needs
from flightlog.alerts.kinds.base import EvalEnv, Evaluator
from flightlog.alerts.rules import Rule
from flightlog.alerts.schema import Fields
from flightlog.alerts.types import Signal
from flightlog.client import Client
from flightlog.config import Settings
from flightlog.models import RunInfo
from flightlog.timefmt import format_duration

__all__ = [
    "ServingEvaluator",
    "Group",
    "Finding",
    "parse_scope",
    "TAGS",
    "serving_group",
    "window_field",
    "window_text",
    "FIELDS",
    "evaluators_of",
]

#: the tags a serving replica carries
TAGS = ("serving.endpoint", "serving.env", "serving.model", "serving.version", "serving.replica")
#: summary fields every serving kind provides
FIELDS = ("endpoint", "env", "version", "model", "replicas", "window")


@dataclass(frozen=True)
class Group:
    endpoint: str
    env: str
    version: str


@dataclass
class Finding:
    """One judgement of a group: ``holds`` True/False (None: not enough evidence to say)."""

    holds: bool | None
    value: float | None = None
    labels: dict[str, str] = field(default_factory=dict)  # the kind's own labels (feature, cohort)
    fields: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    since: float | None = None


def parse_scope(f: Fields) -> tuple[str | None, str | None]:
    """``endpoint:`` and ``env:`` (either may be left out: every endpoint / environment)."""
    return f.text("endpoint"), f.text("env")


def window_field(f: Fields, default: float) -> float:
    return f.duration("window", default=default) or default


def serving_group(run: RunInfo) -> Group | None:
    """The group of a serving replica; None for a run that serves nothing."""
    tags = run.tags or {}
    endpoint = tags.get("serving.endpoint")
    if endpoint is None or endpoint == "":
        return None
    return Group(str(endpoint), str(tags.get("serving.env") or ""), str(tags.get("serving.version") or ""))


@dataclass
class _Replica:
    run: RunInfo
    rules: frozenset[str]


class ServingEvaluator(abc.ABC):
    """Rules of one serving kind; subclasses say what they read and how they judge a group."""

    #: at most one judgement of a group per this many seconds (a rule's ``every:`` overrides)
    every_default = 0.0

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        self.replicas: dict[Group, dict[str, _Replica]] = {}
        self.firing: dict[tuple[str, Group, tuple[tuple[str, str], ...]], Signal] = {}
        self.judged: dict[tuple[str, Group], float] = {}

    @abc.abstractmethod
    def needs(self) -> Needs:
        """What the feed must load for this kind."""

    @abc.abstractmethod
    def judge(self, rule: Rule, group: Group, runs: list[RunInfo], env: EvalEnv) -> list[Finding]:
        """The findings of ``rule`` on one group's replicas (reading the store as needed)."""

    def forget(self, run_id: str) -> None:
        for members in self.replicas.values():
            members.pop(run_id, None)
        self.replicas = {g: m for g, m in self.replicas.items() if m}

    def evaluate(self, cycle: Cycle, env: EvalEnv) -> list[Signal]:
        touched: set[Group] = set()
        for delta in cycle.runs.values():
            group = serving_group(delta.run)
            if group is None:
                continue
            self.replicas.setdefault(group, {})[delta.run.id] = _Replica(delta.run, delta.rules)
            touched.add(group)
        out: list[Signal] = []
        problems: list[str] = []
        for rule in self.rules:
            spec = rule.spec
            for group in sorted(touched, key=lambda g: (g.endpoint, g.env, g.version)):
                if spec.endpoint is not None and group.endpoint != spec.endpoint:
                    continue
                if spec.env is not None and group.env != spec.env:
                    continue
                runs = [r.run for r in self.replicas.get(group, {}).values() if rule.name in r.rules]
                if not runs:
                    continue
                every = getattr(spec, "every", self.every_default)
                last = self.judged.get((rule.name, group))
                if last is not None and env.now - last < every:
                    continue
                self.judged[(rule.name, group)] = env.now
                try:
                    findings = self.judge(rule, group, runs, env)
                except Exception as exc:  # noqa: BLE001 - one group's bad evidence must not hide the others
                    problems.append(f"{group.endpoint}/{group.env} version {group.version}: {exc}")
                    continue
                out.extend(self._signals(rule, group, runs, findings, env))
        if problems and not out:
            raise RuntimeError("; ".join(problems))
        return out

    def _signals(
        self, rule: Rule, group: Group, runs: list[RunInfo], findings: list[Finding], env: EvalEnv
    ) -> list[Signal]:
        newest = max(runs, key=lambda r: (r.created or 0.0, r.id))
        model = str((newest.tags or {}).get("serving.model") or "")
        out: list[Signal] = []
        brief: dict[str, Any] | None = None
        for f in findings:
            if f.holds is None:
                continue
            key = (rule.name, group, tuple(sorted(f.labels.items())))
            was = key in self.firing
            if f.holds == was:
                continue
            labels = {
                **rule.labels,
                "project": newest.project,
                "endpoint": group.endpoint,
                "env": group.env,
                "version": group.version,
                **f.labels,
            }
            fields = {
                "endpoint": group.endpoint,
                "env": group.env,
                "version": group.version,
                "model": model,
                "replicas": len(runs),
                **f.fields,
            }
            evidence = {
                "endpoint": group.endpoint,
                "env": group.env,
                "version": group.version,
                "model": model,
                "replicas": sorted(r.id for r in runs),
                **f.evidence,
            }
            at = env.now
            if f.holds:
                if brief is None:
                    brief = deployment_brief(env, group, newest.project)
                evidence["diagnosis"] = brief
                signal = Signal(
                    rule.name,
                    labels,
                    "firing",
                    at,
                    f.value,
                    since=f.since if f.since is not None else at,
                    run_id=newest.id,
                    project=newest.project,
                    fields=fields,
                    evidence=evidence,
                )
                self.firing[key] = signal
            else:
                self.firing.pop(key, None)
                signal = Signal(
                    rule.name,
                    labels,
                    "clear",
                    at,
                    f.value,
                    run_id=newest.id,
                    project=newest.project,
                    fields=fields,
                    evidence=evidence,
                    reason="condition_cleared",
                )
            out.append(signal)
        return out


def evaluators_of(cls: type[ServingEvaluator]) -> Callable[[Sequence[Rule]], list[Evaluator]]:
    """A kind's ``evaluators``: one evaluator of ``cls`` for all its rules."""

    def build(rules: Sequence[Rule]) -> list[Evaluator]:
        return [cls(rules)] if rules else []

    return build


def window_text(seconds: float) -> str:
    return format_duration(seconds)


def deployment_brief(env: EvalEnv, group: Group, project: str | None) -> dict[str, Any]:
    """The short form of ``flightlog diagnose --deployment`` a firing serving alert carries (its
    headline, the versions before and after the main change), so that a page says where to
    look; a diagnosis that cannot be made says why instead, and never stops the alert."""
    # cost: a firing alert's payload only (the diagnosis reads the data stack)
    from flightlog.serving.diagnosis import deployment_brief as brief

    try:
        client = Client.for_lookups(Settings.from_env(), env.lookup.store)
        found: dict[str, Any] = brief(client, group.endpoint, group.env or None, project)
        return found
    except Exception as exc:  # noqa: BLE001 - an alert goes out with or without its diagnosis
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}
