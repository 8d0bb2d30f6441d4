"""What a process that hosts a run may do to it beyond the user's API: the runner around a
workload, the pipeline controller around its steps.

They record things a training script never does — a queue time, the runner's configuration,
attempts, the workload's captured output and resource samples, instants of the timeline — and
used to reach into the run's private writer for it (``run._w``, 17 places). :class:`RunControl`
is that small set of operations, named for what they do, so the writer's buffers stay the
SDK's own business and can change without breaking the runner. It is not part of
``flightlog``'s public API: integrations write through :class:`~flightlog.sdk.run.Run`.
"""

from __future__ import annotations

from typing import Any

from flightlog.logevents import LogBatch
from flightlog.sdk.run import Run
from flightlog.sdk.writer import Writer

__all__ = ["RunControl", "control"]


class RunControl:
    """The host's handle on one run (see the module's docstring); cheap to make, holds nothing."""

    __slots__ = ("_run", "_writer")

    def __init__(self, run: Run) -> None:
        self._run = run
        self._writer: Writer = run._w

    # ── the run's record ────────────────────────────────────────────────────
    def set_queued(self, queued_at: float) -> None:
        """When a scheduler queued the run (``FLIGHTLOG_QUEUED_AT``, ``--queued-at``)."""
        self._writer.add_record("run", queued=queued_at)

    def begin_attempt(self, attempt: int) -> None:
        """The run is running again as ``attempt``: what is recorded from now on carries it."""
        self._run.attempt = attempt
        self._writer.attempt = attempt
        self._writer.stages.attempt = attempt
        self._writer.add_record("run", attempt=attempt, status="running")

    def add_evidence(self, kind: str, name: str, data: dict[str, Any]) -> None:
        """A named document for diagnosis (the runner's config, a resource summary), as is:
        unlike :meth:`Run.log_evidence` it is not checked as a user's input."""
        self._writer.add_record("evidence", kind=kind, name=name, data=data)

    def add_input(self, **artifact: Any) -> None:
        """An input artifact recorded by reference (a cached step output the pipeline reused)."""
        self._writer.add_record("artifact", role="input", **artifact)

    def mark(self, **instants: float) -> None:
        """Named instants merged into the run's timeline (``process_start``, ``heartbeat``, …)."""
        self._writer.add_record("timeline", data=instants)

    def span(self, name: str, start: float, end: float, attrs: dict[str, Any] | None = None) -> None:
        """A whole coarse stage span (an attempt of the workload, from start to exit)."""
        self._writer.stages.record(name, start, end, attrs)

    def flush(self) -> None:
        """Ship what is buffered now, on the calling thread: the runner before it starts a
        workload that reads the run back from the server (an MLflow client given
        ``MLFLOW_RUN_ID`` asks for the run first thing)."""
        self._writer.flush()

    def count(self, name: str, value: float = 1) -> None:
        """Add to one of the run's counters (captured lines, drops, leftover processes killed)."""
        self._writer.count(name, value)

    # ── the workload's evidence ─────────────────────────────────────────────
    def add_logs(self, batch: LogBatch) -> None:
        """Captured log events, already split, redacted and grouped by the capture pipeline."""
        self._writer.add_logs(batch)

    def pending_log_events(self) -> int:
        """Log events buffered and not yet flushed: the runner's back-pressure reads it."""
        return self._writer.pending_log_events()

    def pending_metric_points(self) -> int:
        """Metric calls buffered and not yet flushed."""
        return len(self._writer.metrics)

    def add_metric_call(self, point: tuple[int, float, dict[str, float]]) -> None:
        """One ``(step, time, values)`` metric call, as ``run.log`` buffers it (metrics read
        from the workload's output lines)."""
        self._writer.metrics.append(point)

    def add_resource_sample(self, sample: dict[str, Any]) -> None:
        """One sample of the workload's process tree (``resources/``)."""
        self._writer.resources.append(sample)

    # ── durability ──────────────────────────────────────────────────────────
    def persist(self) -> None:
        """Journal what is buffered now (no round trip to the store): for records that must
        outlive a SIGKILL of this process a moment later (a pipeline's step states)."""
        self._writer.persist()


def control(run: Run) -> RunControl:
    """The host's handle on ``run`` (the runner's, the pipeline controller's)."""
    return RunControl(run)
