"""Log capture for ``flightlog run``: what a workload writes becomes stored, redacted events.

``CapturePipeline`` turns the bytes read from a child's stdout and stderr into ``LogBatch``
events: one per line or multi-line block (tracebacks, stack traces, indented continuations),
with levels and structure parsed, progress bars collapsed, long lines cut, secrets redacted
and the volume bounded; ``LineMetrics`` reads training progress from the lines as metrics.
Secrets are redacted by ``flightlog.redaction`` (the layer below), chunk by chunk.

The names are imported on first use: ``flightlog.init()`` should not pay for the whole
pipeline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flightlog.lazy import lazy_attributes

if TYPE_CHECKING:
    from flightlog.capture.linemetrics import LineMetrics
    from flightlog.capture.pipeline import CaptureConfig, CapturePipeline

__all__ = ["CaptureConfig", "CapturePipeline", "LineMetrics"]

_HOMES = {
    "CaptureConfig": "flightlog.capture.pipeline",
    "CapturePipeline": "flightlog.capture.pipeline",
    "LineMetrics": "flightlog.capture.linemetrics",
}


__getattr__, __dir__ = lazy_attributes(__name__, _HOMES, eager=tuple(__all__))
