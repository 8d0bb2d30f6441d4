"""``flightlog pipeline resume``: the same pipeline run, again, for only what did not finish.

A controller that died (kill -9, a lost machine) leaves its last step states in its journal:
reading its run through the Client ships them first (``Client.run`` settles a dead owner's
journals), so the resumed attempt knows exactly which steps succeeded.
"""

from __future__ import annotations

import json
from pathlib import Path

from flightlog.client import Client
from flightlog.config import home_from_env
from flightlog.errors import Conflict, FlightlogError, InvalidInput
from flightlog.pipeline.controller import Controller, Options, PipelineResult
from flightlog.pipeline.spec import PipelineSpec
from flightlog.pipeline.state import EVIDENCE_KIND, load_view
from flightlog.pipeline.yamlfile import load_pipeline_file
from flightlog.redaction import redact_user_strings
from flightlog.schema import record as schema_record

__all__ = ["resume_pipeline"]


def resume_pipeline(
    ref: str,
    *,
    max_parallel: int | None = None,
    executor: str | None = None,
    quiet: bool = False,
    verbose: bool = False,
) -> PipelineResult:
    """Run again only the steps of a pipeline run that failed or never ran, as its next attempt."""
    client = Client()
    try:
        view = load_view(client, ref)  # Client.run ships a dead controller's journal first (its last states)
    finally:
        client.close()
    if not view.run.is_finished:
        raise Conflict(
            f"pipeline run {view.run.id[:12]} is still running (controller pid {view.run.pid} on "
            f"{view.run.host}); stop it first (Ctrl-C or kill {view.run.pid})"
        )
    if view.run.status == "succeeded":
        raise Conflict(f"pipeline run {view.run.id[:12]} succeeded: nothing to resume")
    view.spec = _original_spec(view.spec)
    opts = view.options
    options = Options(
        max_parallel or int(opts.get("max_parallel") or 4),
        executor or str(opts.get("executor") or "local"),
        bool(opts.get("use_cache", True)),
        quiet,
        verbose,
    )
    return Controller(view.spec, options, resume=view).execute()


def _original_spec(spec: PipelineSpec) -> PipelineSpec:
    """The definition as the pipeline file says it. The stored one is redacted (docs/redaction.md:
    a step's ``--token X`` or ``api_key`` param is kept as a marker), so when it holds a marker
    the file is read again, and used only if it is still the same pipeline once redacted."""
    stored = spec.to_dict()
    if "[REDACTED:" not in json.dumps(stored["steps"]):
        return spec
    path = Path(spec.source or "")
    if spec.source and not path.is_absolute() and spec.workdir:
        path = Path(spec.workdir) / path.name
    fresh = None
    if spec.source and path.is_file():
        try:
            fresh = load_pipeline_file(path)
        except FlightlogError:
            fresh = None
    if fresh is not None:
        record = schema_record("evidence", kind=EVIDENCE_KIND, name="definition", data={"spec": fresh.to_dict()})
        if redact_user_strings(record, home_from_env())["data"]["spec"]["steps"] == stored["steps"]:
            return fresh
    raise InvalidInput(
        f"pipeline {spec.name}: its stored definition has secrets hidden (a step's command line or params), "
        f"so it cannot be run again as stored, and {path if spec.source else 'its pipeline file'} "
        "is missing or has changed since; run the pipeline afresh with `flightlog pipeline run FILE`",
        details={"source": spec.source},
    )
