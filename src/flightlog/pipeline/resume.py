"""``flightlog pipeline resume``: the same pipeline run, again, for only what did not finish.

A controller that died (kill -9, a lost machine) leaves its last step states in its journal:
they are shipped first, so the resumed attempt knows exactly which steps succeeded.
"""

from __future__ import annotations

import socket
from typing import Any

import flightlog
from flightlog.errors import Conflict
from flightlog.pipeline.controller import Controller, Options, PipelineResult
from flightlog.pipeline.state import load_view

__all__ = ["resume_pipeline", "ship_lost_journal"]


def resume_pipeline(ref: str, *, max_parallel: int | None = None, executor: str | None = None,
                    quiet: bool = False, verbose: bool = False) -> PipelineResult:
    """Run again only the steps of a pipeline run that failed or never ran, as its next attempt."""
    client = flightlog.Client()
    try:
        ship_lost_journal(client, ref)
        view = load_view(client, ref)
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


def ship_lost_journal(client: Any, ref: str) -> None:
    """Ship what a dead controller left in its journal, so its last states are read (and its
    run can be seen as crashed). Nothing to do for a live or finished pipeline."""
    try:
        info = client.store.get_run(ref)
        if info.status not in ("running", "created") or info.host != socket.gethostname() or not info.pid:
            return
        import psutil

        if psutil.pid_exists(info.pid):
            return
        from flightlog.journal.sync import sync

        sync(client.settings.home, client.store, run_id=info.id)
    except Exception:  # reading must work even when the journal cannot be shipped
        pass
