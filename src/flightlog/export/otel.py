"""A run's stages as OpenTelemetry spans, so a tracing backend (Jaeger, Tempo, Honeycomb, …)
shows where training time went next to the services around it.

    from flightlog.export.otel import export_run_spans
    export_run_spans("3f2a")        # through the global TracerProvider you configured

One trace per run: a root span named after the run (from its start to its end, with the
project, name, status and end reason as attributes), and under it one span per recorded
stage span — every span of coarse stages, and the kept sample of fine per-batch stages (their
aggregate count, total and mean are attributes on a ``stage.summary`` event of the root span).
Times are the recorded ones, so exporting after the fact draws the same timeline.
"""

from __future__ import annotations

from typing import Any

from flightlog.statuses import FAILED_STATUSES

__all__ = ["export_run_spans"]

_SCOPE = "flightlog"


def export_run_spans(run: Any, *, client: Any = None, tracer_provider: Any = None) -> int:
    """Emit the run's stage spans; returns how many spans were emitted (the root included)."""
    from opentelemetry import trace

    from flightlog.client import Client

    own = client is None
    client = client or Client()
    try:
        info = client.run(run)
        stages = client.stages(info.id)
    finally:
        if own:
            client.close()
    tracer = (tracer_provider or trace.get_tracer_provider()).get_tracer(_SCOPE)
    starts = [s.first_start for s in stages if s.first_start is not None]
    ends = [s.last_end for s in stages if s.last_end is not None]
    start = info.started or info.created or (min(starts) if starts else 0.0)
    end = info.ended or info.updated or (max(ends) if ends else start)
    root = tracer.start_span(
        info.name or info.id,
        start_time=_ns(start),
        attributes={
            "flightlog.run_id": info.id,
            "flightlog.project": info.project,
            "flightlog.name": info.name or "",
            "flightlog.status": info.status,
            "flightlog.end_reason": info.end_reason or "",
            "flightlog.attempt": info.attempt,
        },
    )
    emitted = 1
    context = trace.set_span_in_context(root)
    for stage in stages:
        root.add_event(
            "stage.summary",
            timestamp=_ns(stage.first_start or start),
            attributes={
                "stage": stage.name,
                "count": stage.count,
                "total_seconds": stage.total,
                "mean_seconds": stage.mean,
                "max_seconds": stage.max,
            },
        )
        for span in stage.spans:
            attrs: dict[str, Any] = {"flightlog.attempt": span.attempt, "flightlog.sampled": span.sampled}
            for key, value in (span.attrs or {}).items():
                if isinstance(value, (str, bool, int, float)):
                    attrs[f"stage.{key}"] = value
            child = tracer.start_span(span.name, context=context, start_time=_ns(span.start), attributes=attrs)
            child.end(end_time=_ns(span.end))
            emitted += 1
    if info.status in FAILED_STATUSES:
        from opentelemetry.trace import Status, StatusCode

        root.set_status(Status(StatusCode.ERROR, f"{info.status} ({info.end_reason or 'unknown'})"))
    root.end(end_time=_ns(max(end, start)))
    return emitted


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)
