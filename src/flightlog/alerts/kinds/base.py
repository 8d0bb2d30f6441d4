"""What every rule kind provides, and what an evaluator is given.

A kind is data (:class:`Kind`): how to read its fields, its template fields, its default
summary, and a factory of evaluators. An evaluator may serve several rules of its kind (the
threshold evaluator computes each window aggregate once for every rule that shares it).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from flightlog.alerts.delta import Cycle, Needs, RunDelta
from flightlog.alerts.types import Signal
from flightlog.models import RunInfo

if TYPE_CHECKING:
    from flightlog.alerts.lookup import Lookup
    from flightlog.alerts.rules import Rule
    from flightlog.alerts.schema import Fields

__all__ = ["Kind", "Evaluator", "PerRun", "EvalEnv", "run_labels", "CMP", "NP_CMP"]

CMP: dict[str, Callable[[float, float], bool]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}


NP_CMP: dict[str, Callable[[Any, Any], Any]] = {
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}


@dataclass
class EvalEnv:
    """The moment of an evaluation and the history it may consult."""

    now: float
    lookup: Lookup
    replay: bool = False  # alerts test: history is limited to what existed when the run ran


class Evaluator(Protocol):
    rules: list[Rule]

    def needs(self) -> Needs: ...
    def evaluate(self, cycle: Cycle, env: EvalEnv) -> list[Signal]: ...
    def forget(self, run_id: str) -> None: ...


class PerRun(abc.ABC):
    """Base of the kinds that judge runs one by one (their cost is per run, not per point)."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)

    def needs(self) -> Needs:
        """By default a per-run kind judges finished runs only."""
        return Needs(finish=True)

    def forget(self, run_id: str) -> None:  # noqa: B027 - a no-op default, overridden by stateful kinds
        """Kinds that keep per-run state drop it here."""

    def evaluate(self, cycle: Cycle, env: EvalEnv) -> list[Signal]:
        names = {r.name for r in self.rules}
        out: list[Signal] = []
        for delta in cycle.runs.values():
            if names & delta.rules:
                out.extend(self.evaluate_run(delta, env))
        return out

    @abc.abstractmethod
    def evaluate_run(self, delta: RunDelta, env: EvalEnv) -> list[Signal]:
        """Implemented by each subclass."""


@dataclass(frozen=True)
class Kind:
    name: str
    doc: str
    fields: tuple[str, ...]  # template fields the kind provides
    default_summary: str
    parse: Callable[[Fields], Any]  # the kind's spec (problems go to Fields)
    evaluators: Callable[[Sequence[Rule]], list[Evaluator]]
    run_scoped: bool = True  # alerts about one run (labelled run) end with the run


def run_labels(rule: Rule, run: RunInfo, **extra: str) -> dict[str, str]:
    """An alert's labels: the rule's own, the run and its project, and the kind's (gpu, metric, ...)."""
    labels = dict(rule.labels)
    labels["run"] = run.id
    labels["project"] = run.project
    if run.parent_id:
        labels["pipeline"] = run.parent_id
    labels.update(extra)
    return labels


def template_run(run: RunInfo) -> dict[str, Any]:
    return {
        "id": run.id,
        "short_id": run.id[:8],
        "name": run.name,
        "project": run.project,
        "status": run.status,
        "attempt": run.attempt,
        "host": run.host,
        "parent_id": run.parent_id,
        "end_reason": run.end_reason,
    }
