"""A pipeline's state as recorded on its run, and read back by show, resume and diagnosis.

The controller appends evidence to the pipeline run: kind ``pipeline``, name ``definition``
(the spec and the options it ran with) once, and name ``step:NAME`` at every change of a
step's state; the latest record of each step wins. A step recorded as running whose
controller is gone is read from its own run (stopped, killed, crashed) — that is how a
crashed controller's pipeline still shows where each step got to.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.failure import frames_for_display
from flightlog.models import RunInfo
from flightlog.pipeline.spec import PipelineSpec
from flightlog.statuses import INTERRUPTED_STATUSES, TERMINAL_STATUSES
from flightlog.timefmt import iso

__all__ = ["StepState", "PipelineView", "load_view", "said_once", "EVIDENCE_KIND", "DONE", "FINAL", "GATE_FAILED"]

EVIDENCE_KIND = "pipeline"
#: states a step ends in that let its downstream steps run
DONE = frozenset({"succeeded", "cached"})
#: states a step does not leave (in one attempt of the pipeline)
FINAL = TERMINAL_STATUSES | {"cached", "skipped"}
#: how a gate's exception begins (gatemain): its run's failure reads alone, so it says so itself
GATE_FAILED = "gate failed: "


def said_once(reason: str | None) -> str | None:
    """A step's reason where its status was just said ("check failed: ..."): without the gate's
    own "gate failed: ", so a line never says "failed" twice for one failure."""
    if reason is None:
        return None
    return reason.removeprefix(GATE_FAILED)


@dataclass
class StepState:
    name: str
    status: str = "pending"  # pending, running, retrying, succeeded, cached, failed, skipped, stopped, killed, crashed
    kind: str = "command"
    run: str | None = None  # the run of the latest attempt (or the reused run, for a cache hit)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    cached_from: str | None = None
    cache_key: str | None = None
    cache_parts: dict[str, Any] = field(default_factory=dict)  # what the key was hashed from (cachekey)
    cache_miss: dict[str, Any] | None = None  # why it ran although it succeeded before (cachemiss)
    reason: str | None = None
    category: str | None = None
    started: float | None = None
    ended: float | None = None
    outputs: dict[str, str] = field(default_factory=dict)
    pipeline_attempt: int = 1

    @property
    def duration(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return max(0.0, self.ended - self.started)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "duration": self.duration}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepState:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass
class PipelineView:
    """Everything show, resume and diagnosis need: the run, its spec, options and step states."""

    run: RunInfo
    spec: PipelineSpec
    options: dict[str, Any]
    steps: dict[str, StepState]
    step_frames: list[dict[str, Any]] = field(default_factory=list)  # the failing step's frames, the user's first

    @property
    def first_started(self) -> float | None:
        """When the pipeline first started: a resume's run record moves ``started`` to its own
        attempt; the run's creation and its steps' first attempts keep the original."""
        times = [t for t in (self.run.created, self.run.started) if t is not None]
        times += [
            a["started"] for s in self.steps.values() for a in s.attempts if isinstance(a.get("started"), (int, float))
        ]
        return min(times) if times else None

    def to_dict(self) -> dict[str, Any]:
        """The view as ``pipeline show --format json`` and the UI read it: times as ISO-8601, every
        attempt of every step across resumes (each with its pipeline attempt), reasons said once."""
        order = self.spec.order()
        run = self.run.to_dict()
        return {
            "run": self.run.id,
            "name": self.spec.name,
            "project": self.run.project,
            "status": self.run.status,
            "attempt": self.run.attempt,
            "started": iso(self.first_started),  # the original start, across resumes
            "attempt_started": run["started"],  # this attempt's (a resume's) start
            "ended": run["ended"],
            "duration": self.run.duration,
            "options": self.options,
            # a resumed pipeline that then succeeded is no longer failed: its old failure stays in the attempts
            "failure": None
            if self.run.status == "succeeded" or not self.run.failure
            else {**self.run.failure, "frames": self.step_frames},
            "steps": [_step_view(self.steps[n], self.spec.step(n).needs) for n in order],
        }


def _step_view(state: StepState, needs: list[str]) -> dict[str, Any]:
    d = state.to_dict()
    attempts = []
    for number, attempt in enumerate(state.attempts, 1):
        started, ended = attempt.get("started"), attempt.get("ended")
        duration = (
            max(0.0, ended - started) if isinstance(started, (int, float)) and isinstance(ended, (int, float)) else None
        )
        attempts.append(
            {**attempt, "number": number, "started": iso(started), "ended": iso(ended), "duration": duration}
        )
    return {
        **d,
        "started": iso(state.started),
        "ended": iso(state.ended),
        "reason": said_once(state.reason),
        "attempts": attempts,
        "needs": needs,
    }


def load_view(client: Any, ref: str) -> PipelineView:
    run = client.run(ref)
    definition = client.evidence(run, EVIDENCE_KIND, "definition")
    if not definition:
        hint = (
            f"it is a step of pipeline run {run.parent_id[:12]}: flightlog pipeline show {run.parent_id[:12]}"
            if run.parent_id
            else "list pipelines with `flightlog pipeline ls`"
        )
        raise InvalidInput(f"run {run.id[:12]} is not a pipeline run (no pipeline definition recorded on it); {hint}")
    data = definition[-1]["data"]
    spec = PipelineSpec.from_dict(data["spec"])
    steps = {s.name: StepState(s.name, kind=s.kind) for s in spec.steps}
    for item in client.evidence(run, EVIDENCE_KIND):
        name = str(item.get("name") or "")
        if name.startswith("step:") and name[5:] in steps:
            steps[name[5:]] = StepState.from_dict(item["data"])
    if run.status != "running":
        _settle(client, run, steps)
    return PipelineView(run, spec, data.get("options") or {}, steps, _step_frames(client, run))


def _step_frames(client: Any, run: RunInfo) -> list[dict[str, Any]]:
    """Where the failing step's exception came from, the user's own innermost frame first."""
    step_run = (run.failure or {}).get("step_run") if run.status != "succeeded" else None
    if not step_run:
        return []
    try:
        failure = client.run(step_run).failure or {}
    except Exception:  # the step's run is gone (deleted): the pipeline's own summary stands
        return []
    return frames_for_display(failure.get("frames"), limit=3)


def _settle(client: Any, run: RunInfo, steps: dict[str, StepState]) -> None:
    """Steps left running or pending by a controller that is gone: read their own runs."""
    for state in steps.values():
        if state.status in ("running", "retrying") and state.run:
            try:
                child = client.run(state.run)
            except Exception:
                child = None
            if child is not None and child.is_finished:
                state.status = child.status
                state.ended = child.ended
                state.reason = state.reason or f"its run ended {child.status} while the controller was gone"
            else:
                state.status = "crashed"
                state.reason = "the pipeline's controller was lost while this step ran"
            if state.attempts and state.attempts[-1].get("status") in ("running", None):
                state.attempts[-1] = {**state.attempts[-1], "status": state.status, "ended": state.ended}
        elif state.status in ("pending",) and run.status in INTERRUPTED_STATUSES:
            state.reason = f"never ran: the pipeline was {run.status}"
