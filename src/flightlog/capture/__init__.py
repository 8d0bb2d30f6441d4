"""Log capture for ``flightlog run``: what a workload writes becomes stored, redacted events.

``CapturePipeline`` turns the bytes read from a child's stdout and stderr into ``LogBatch``
events: one per line or multi-line block (tracebacks, stack traces, indented continuations),
with levels and structure parsed, progress bars collapsed, long lines cut, secrets redacted
and the volume bounded; ``LineMetrics`` reads training progress from the lines as metrics.
``Redactor`` is also used on SDK log events, params, tags, notes and command lines.
"""

from flightlog.capture.linemetrics import LineMetrics
from flightlog.capture.patterns import load_patterns
from flightlog.capture.pipeline import CaptureConfig, CapturePipeline
from flightlog.capture.redact import Redactor

__all__ = ["CaptureConfig", "CapturePipeline", "LineMetrics", "Redactor", "load_patterns"]
