"""``flightlog pipeline resume``: the same pipeline run, again, for only what did not finish.

A controller that died (kill -9, a lost machine) leaves its last step states in its journal:
reading its run through the Client ships them first (``Client.run`` settles a dead owner's
journals), so the resumed attempt knows exactly which steps succeeded.
"""

from __future__ import annotations

import flightlog
from flightlog.errors import Conflict
from flightlog.pipeline.controller import Controller, Options, PipelineResult
from flightlog.pipeline.state import load_view

__all__ = ["resume_pipeline"]


def resume_pipeline(ref: str, *, max_parallel: int | None = None, executor: str | None = None,
                    quiet: bool = False, verbose: bool = False) -> PipelineResult:
    """Run again only the steps of a pipeline run that failed or never ran, as its next attempt."""
    client = flightlog.Client()
    try:
        view = load_view(client, ref)  # Client.run ships a dead controller's journal first (its last states)
    finally:
        client.close()
    if not view.run.is_finished:
        raise Conflict(f"pipeline run {view.run.id[:12]} is still running (controller pid {view.run.pid} on "
                       f"{view.run.host}); stop it first (Ctrl-C or kill {view.run.pid})")
    if view.run.status == "succeeded":
        raise Conflict(f"pipeline run {view.run.id[:12]} succeeded: nothing to resume")
    opts = view.options
    options = Options(max_parallel or int(opts.get("max_parallel") or 4), executor or str(opts.get("executor") or "local"),
                      bool(opts.get("use_cache", True)), quiet, verbose)
    return Controller(view.spec, options, resume=view).execute()

