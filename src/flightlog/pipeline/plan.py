"""``flightlog pipeline plan FILE``: before running, which steps would run and why, which would be reused.

The plan walks the steps in the order the controller starts them and asks each the
controller's own questions: its cache key from the files on disk now (:func:`~.cachekey.cache_key`),
a succeeded run with that key whose outputs are intact (:func:`~.reuse.find_reusable`), and,
when it would run, what changed since its latest succeeded run (:func:`~.cachemiss.explain_miss`).
An input that an earlier step of the plan remakes cannot be known before that step runs: the
step is planned to run, and says which step remakes which input (a step that remakes a file
byte for byte would let it hit the cache after all; the plan says "would run" to be safe).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from flightlog.config import Settings
from flightlog.pipeline.cachekey import MissingInput, cache_key
from flightlog.pipeline.cachemiss import explain_miss, why_uncached
from flightlog.pipeline.reuse import find_reusable
from flightlog.pipeline.spec import PipelineSpec

__all__ = ["plan_pipeline"]


def plan_pipeline(client: Any, spec: PipelineSpec, *, use_cache: bool = True) -> dict[str, Any]:
    """``{"name", "project", "steps": [{"name", "action": run | reuse | fail, "reused_run",
    "previous_run", "reasons": [{"part", "name", "old", "new", "text"}]}], "run": [...], "reuse": [...]}``."""
    workdir = Path(spec.workdir or os.getcwd()).resolve()
    settings = Settings.from_env()
    project = spec.project or settings.project
    cache_dir = settings.home / "cache"
    producers = {out: s.name for s in spec.steps for out in s.outputs}
    runs: set[str] = set()
    steps: list[dict[str, Any]] = []
    for name in spec.order():
        step = spec.step(name)
        declared = [*step.inputs, *(c.data for c in step.gate if c.data)]
        pending = {rel: producers[rel] for rel in declared if producers.get(rel) in runs}
        entry: dict[str, Any] = {"name": name, "action": "run", "reused_run": None, "previous_run": None, "reasons": []}
        steps.append(entry)
        try:
            key, parts = cache_key(spec.name, step, workdir, cache_dir, pending=pending)
        except MissingInput as exc:
            entry.update(action="fail", reasons=[_reason("missing_input", None, str(exc))])
            runs.add(name)  # what it would have made is not there either: its dependants are not reused
            continue
        forced = why_uncached(step, use_cache)
        if not pending and forced is None:
            hit = find_reusable(client, project, step, key, workdir, cache_dir)
            if hit is not None:
                entry.update(action="reuse", reused_run=hit[0])
                continue
        runs.add(name)
        known = {**parts, "inputs": {k: v for k, v in parts["inputs"].items() if k not in pending}}
        miss = explain_miss(client, project, spec.name, step, known, use_cache)
        reasons: list[dict[str, Any]] = []
        if miss is not None:
            entry["previous_run"] = miss["previous_run"]
            # an input remade upstream is said below, with the step that remakes it, not as "no longer declared"
            reasons = [c for c in miss["changes"] if not (c["part"] == "input" and c["name"] in pending)]
        for rel, producer in pending.items():
            reasons.append(_reason("input", rel, f"input {rel} is remade by step {producer}, which runs first"))
        if not reasons:
            reasons = [_reason("new", None, "it never succeeded before: nothing to reuse")]
        entry["reasons"] = reasons
    return {
        "name": spec.name,
        "project": project,
        "steps": steps,
        "run": [s["name"] for s in steps if s["action"] == "run"],
        "reuse": [s["name"] for s in steps if s["action"] == "reuse"],
    }


def _reason(part: str, name: str | None, text: str) -> dict[str, Any]:
    return {"part": part, "name": name, "old": None, "new": None, "text": text}
