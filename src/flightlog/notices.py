"""flightlog's own notices on stderr, printed one way by every part of it.

The SDK, the runner, the resource sampler, the alert monitor and the pipeline controller all
say things about themselves ("flightlog: run 3f2a… → …", "flightlog: resource sampling error: …").
They go through ``notice`` so that each one:

- carries the ``flightlog:`` prefix, so a user can tell them from the workload's own output;
- goes past the console capture (``sdk/console.py`` replaces ``sys.stderr`` with a tee that
  records the workload's output, not flightlog's reports about itself);
- never raises: stderr may be closed, None (pythonw, some daemons) or a broken pipe, and a notice
  must never crash the process it observes.

A bottom-layer module with no click or rich import, so the training process can use it. Whether
to say something (``FLIGHTLOG_QUIET``, a pipeline's ``--quiet``) is the caller's decision; the
CLI's error rendering stays in ``cli/output.py``.
"""

from __future__ import annotations

import sys

__all__ = ["PREFIX", "notice"]

PREFIX = "flightlog: "


def notice(message: str) -> None:
    """Write ``flightlog: MESSAGE`` and a newline to stderr, and flush; never raise."""
    stream = sys.stderr
    stream = getattr(stream, "flightlog_passthrough", stream)
    try:
        stream.write(f"{PREFIX}{message}\n")
        stream.flush()
    except Exception:  # closed, None, a broken pipe: the workload goes on regardless
        pass
