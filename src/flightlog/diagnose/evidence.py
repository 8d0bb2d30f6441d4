"""Everything diagnosis reads about one run, fetched once through :class:`flightlog.Client`
(so it works against the embedded store and a server alike) and cached.

Analyzers are pure functions of a :class:`RunEvidence`; this module is the only one that
reads. Logs are bounded: the error events, the warnings and the last events — never a
whole multi-gigabyte log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from flightlog.models import LogEvent, MetricHistory, RunInfo, StageSummary

if TYPE_CHECKING:
    from flightlog.diagnose.reader import Reader

__all__ = ["RunEvidence", "Thresholds", "ERROR", "WARNING"]

ERROR = 40
WARNING = 30
_TAIL = 200
_ERRORS = 200


@dataclass(frozen=True)
class Thresholds:
    """The knobs of the analyzers, set per project in the diagnosis settings (:mod:`.settings`,
    docs/troubleshooting.md)."""

    queue_wait_s: float = 60.0  # below this a queue wait is never reported
    startup_s: float = 1.0  # the workload's own setup before its first step, below this never reported
    import_s: float = 10.0  # time before the program's first output (interpreter, imports)
    completion_s: float = 1.0  # below this a tail after the last step is never reported
    share: float = 0.3  # a phase is worth reporting from this share of the run's time
    data_share: float = 0.4  # data-stage share of step time that makes a loader the bottleneck
    idle_cpu_percent: float = 30.0  # a tree below this (% of one core) while stepping is idle
    idle_gpu_percent: float = 30.0
    leak_min_samples: int = 6
    leak_min_growth: float = 0.15  # relative RSS growth over the window
    leak_min_growth_bytes: int = 16 << 20
    leak_min_r2: float = 0.8
    leak_min_seconds: float = 2.0  # a shorter trend (few samples, often start-up) counts half
    plateau_patience: int = 10  # evaluations without improvement
    plateau_min_delta: float = 0.01  # relative to the best value
    plateau_min_points: int = 12
    divergence_factor: float = 10.0  # a loss that ends this many times above where it started has diverged
    divergence_min_points: int = 5
    rightsize_min_samples: int = 3  # resource samples an attempt needs before its peak is a request
    rightsize_min_duration_s: float = 60.0  # a failed attempt counts only when it ran this long
    metric_regression: float = 0.25  # a final metric this much worse (relative) than the baseline's is reported
    higher_is_better: tuple[str, ...] = ()  # metric names or globs, besides the known patterns (acc, f1, auc, ...)
    lower_is_better: tuple[str, ...] = ()  # (loss, error, mse, perplexity, ... are known)


@dataclass
class RunEvidence:
    client: Reader
    info: RunInfo
    thresholds: Thresholds = field(default_factory=Thresholds)
    _histories: dict[str, MetricHistory] = field(default_factory=dict, repr=False)

    @property
    def id(self) -> str:
        return self.info.id

    # the reads below name the run by its RunInfo, not its id: a Client then asks the store
    # straight away instead of resolving the id first (one query per read saved)

    @cached_property
    def errors(self) -> list[LogEvent]:
        """The last error-level (and worse) events."""
        return self.client.logs(self.info, level="error", limit=_ERRORS, tail=True)

    @cached_property
    def warnings(self) -> list[LogEvent]:
        return [e for e in self.client.logs(self.info, level="warning", limit=_ERRORS, tail=True) if e.level < ERROR]

    @cached_property
    def tail(self) -> list[LogEvent]:
        """The last events of any level."""
        return self.client.logs(self.info, limit=_TAIL, tail=True)

    @cached_property
    def recent(self) -> list[LogEvent]:
        """Errors, warnings and the tail, once each, in time order."""
        seen: dict[tuple[float, str, str], LogEvent] = {}
        for e in [*self.errors, *self.warnings, *self.tail]:
            seen.setdefault((e.time, e.stream, e.message), e)
        return sorted(seen.values(), key=lambda e: e.time)

    def grep(self, pattern: str, limit: int = 20) -> list[LogEvent]:
        return self.client.logs(self.info, grep=pattern, limit=limit)

    @cached_property
    def stages(self) -> list[StageSummary]:
        return self.client.stages(self.info)

    @cached_property
    def resources(self) -> list[dict[str, Any]]:
        samples = self.client.resources(self.info)
        return sorted(samples, key=lambda s: s.get("time") or 0.0)

    @cached_property
    def evidence(self) -> list[dict[str, Any]]:
        return self.client.evidence(self.info)

    def evidence_of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.evidence if e.get("kind") == kind]

    @cached_property
    def runner_config(self) -> dict[str, Any]:
        items = [e for e in self.evidence_of("runner") if e.get("name") == "config"]
        return dict(items[-1]["data"]) if items else {}

    @cached_property
    def resource_summaries(self) -> list[dict[str, Any]]:
        return [e["data"] for e in self.evidence_of("resources") if isinstance(e.get("data"), dict)]

    @cached_property
    def context(self) -> dict[str, Any]:
        try:
            return self.client.context(self.info)
        except Exception:  # context is optional evidence
            return {}

    @cached_property
    def artifacts(self) -> list[Any]:
        return self.client.artifacts(self.info)

    def history(self, name: str) -> MetricHistory:
        if name not in self._histories:
            self._histories[name] = self.client.metric_history(self.info, name)
        return self._histories[name]

    # ── facts derived from the run ──────────────────────────────────────────
    @property
    def process_start(self) -> float | None:
        return self.info.timeline.get("process_start") or self.info.started

    @property
    def process_end(self) -> float | None:
        return self.info.timeline.get("process_end") or self.info.ended

    @property
    def first_step(self) -> float | None:
        t = self.info.timeline.get("first_metric")
        if t is None:
            times = [m.first_time for m in self.info.metrics.values() if m.first_time is not None]
            t = min(times) if times else None
        return t

    @property
    def last_step(self) -> float | None:
        t = self.info.timeline.get("last_metric")
        if t is None:
            times = [m.last_time for m in self.info.metrics.values() if m.last_time is not None]
            t = max(times) if times else None
        return t

    @property
    def memory_limit(self) -> int | None:
        """The memory limit the run ran under: the runner's, the cgroup's, else None."""
        limit = self.runner_config.get("memory_limit_bytes")
        oom = (self.info.failure or {}).get("oom") or {}
        limit = limit or oom.get("limit_bytes")
        if not limit:
            limits = [int(s["cgroup_memory_limit"]) for s in self.resources if s.get("cgroup_memory_limit")]
            limit = min(limits) if limits else None
        return int(limit) if limit else None

    @property
    def timed_out(self) -> bool:
        return self.info.end_reason == "timeout"

    @property
    def oom_killed(self) -> bool:
        return self.info.end_reason == "oom_killed"
