"""Why a step ran although an earlier run of it succeeded: which part of its cache key changed.

Every step's state keeps the parts its key was hashed from (:func:`~.cachekey.cache_key`'s
body: inputs by content digest, params, the code commit, the step's source files or function,
the command, the gate). A step that is about to run is compared with the latest succeeded run
of the same step of the same pipeline, part by part, and each difference becomes one change
with a sentence a person reads (``input data/train.csv content changed``, ``param lr 0.1 →
0.3``). The same comparison answers ``pipeline plan`` before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flightlog.pipeline.spec import StepSpec
from flightlog.pipeline.state import EVIDENCE_KIND

__all__ = ["key_changes", "previous_success", "explain_miss", "why_uncached", "change_texts"]

_MISSING = object()


def _flat(params: Any, prefix: str = "") -> dict[str, Any]:
    """Nested params as dotted names (``optimizer.lr``), as the run's own params are shown."""
    if not isinstance(params, Mapping):
        return {prefix: params} if prefix else {}
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            out.update(_flat(value, name))
        else:
            out[name] = value
    return out


def _short(digest: Any) -> str:
    return str(digest)[:12] if digest else "-"


def _change(part: str, name: str | None, old: Any, new: Any, text: str) -> dict[str, Any]:
    return {"part": part, "name": name, "old": old, "new": new, "text": text}


def key_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The differences between two keys' parts, in the order a person looks for them: inputs,
    params, code (commit, the step's own source), the command, the gate, the outputs."""
    changes: list[dict[str, Any]] = []
    old_in, new_in = old.get("inputs") or {}, new.get("inputs") or {}
    for rel in sorted(set(old_in) | set(new_in)):
        a, b = old_in.get(rel, _MISSING), new_in.get(rel, _MISSING)
        if a is _MISSING:
            changes.append(_change("input", rel, None, b, f"input {rel} added"))
        elif b is _MISSING:
            changes.append(_change("input", rel, a, None, f"input {rel} no longer declared"))
        elif a != b:
            changes.append(_change("input", rel, a, b, f"input {rel} content changed ({_short(a)} → {_short(b)})"))
    old_p, new_p = _flat(old.get("params") or {}), _flat(new.get("params") or {})
    for name in sorted(set(old_p) | set(new_p)):
        a, b = old_p.get(name, _MISSING), new_p.get(name, _MISSING)
        if a is _MISSING:
            changes.append(_change("param", name, None, b, f"param {name} added (= {b!r})"))
        elif b is _MISSING:
            changes.append(_change("param", name, a, None, f"param {name} removed (was {a!r})"))
        elif a != b:
            changes.append(_change("param", name, a, b, f"param {name} {a!r} → {b!r}"))
    old_code, new_code = old.get("code") or {}, new.get("code") or {}
    if old_code.get("commit") != new_code.get("commit"):
        a, b = old_code.get("commit"), new_code.get("commit")
        changes.append(_change("commit", None, a, b, f"code commit {_short(a)} → {_short(b)}"))
    if old_code.get("function") != new_code.get("function"):
        a, b = old_code.get("function"), new_code.get("function")
        changes.append(_change("source", new.get("function"), a, b, "the step's function source changed"))
    old_files, new_files = old_code.get("files") or {}, new_code.get("files") or {}
    for rel in sorted(set(old_files) | set(new_files)):
        a, b = old_files.get(rel), new_files.get(rel)
        if a != b and rel not in old_in and rel not in new_in:  # a declared input the command names: said once, above
            what = "changed" if a and b else "added" if b else "no longer named"
            changes.append(_change("source", rel, a, b, f"source file {rel} {what}"))
    if old.get("command") != new.get("command"):
        a, b = old.get("command"), new.get("command")
        shown = " ".join(map(str, b)) if isinstance(b, list) else b
        changes.append(_change("command", None, a, b, f"command changed (now {shown!r})"))
    if old.get("function") != new.get("function"):
        a, b = old.get("function"), new.get("function")
        changes.append(_change("function", None, a, b, f"function changed ({a} → {b})"))
    if (old.get("gate") or []) != (new.get("gate") or []):
        changes.append(_change("gate", None, old.get("gate"), new.get("gate"), "the gate's checks changed"))
    if sorted(old.get("outputs") or []) != sorted(new.get("outputs") or []):
        changes.append(_change("outputs", None, old.get("outputs"), new.get("outputs"), "the declared outputs changed"))
    return changes


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def previous_success(client: Any, project: str, pipeline: str, step: str) -> tuple[str, dict[str, Any] | None] | None:
    """The latest succeeded run of ``step`` of ``pipeline`` and the key parts it ran with (None
    when its pipeline recorded none: a run from before the parts were kept), or None if none."""
    where = f"tags.pipeline = {_quoted(pipeline)} and tags.pipeline_step = {_quoted(step)} and status = 'succeeded'"
    candidates = client.runs(project, filter=where, order_by="-created", limit=1)
    if not candidates:
        return None
    run = candidates[0]
    if not run.parent_id:
        return run.id, None
    for item in reversed(client.evidence(run.parent_id, EVIDENCE_KIND, f"step:{step}")):
        data = item.get("data") or {}
        ran = {data.get("run"), *(a.get("run") for a in data.get("attempts") or [])}
        if run.id in ran and data.get("cache_parts"):
            return run.id, dict(data["cache_parts"])
    return run.id, None


def why_uncached(step: StepSpec, use_cache: bool) -> dict[str, Any] | None:
    """The reason a step runs whatever its key says, or None when its key decides."""
    if not use_cache:
        return _change("no_cache", None, None, None, "caching was off for this pipeline run (--no-cache)")
    if not step.cache:
        return _change("no_cache", None, None, None, "caching is off for this step (cache: false)")
    if any(c.metric for c in step.gate):
        return _change("no_cache", None, None, None, "a gate on another run's metric always runs")
    return None


def explain_miss(
    client: Any, project: str, pipeline: str, step: StepSpec, parts: Mapping[str, Any], use_cache: bool = True
) -> dict[str, Any] | None:
    """Why ``step`` runs although an earlier run of it succeeded: ``{"previous_run", "changes"}``
    (each change ``{"part", "name", "old", "new", "text"}``), or None when it never succeeded
    before (a first run has nothing to explain)."""
    previous = previous_success(client, project, pipeline, step.name)
    if previous is None:
        return None
    run_id, old = previous
    forced = why_uncached(step, use_cache)
    if forced is not None:
        changes = [forced]
    elif old is None:
        changes = [_change("unknown", None, None, None, f"run {run_id[:12]} recorded no cache key parts to compare")]
    else:
        changes = key_changes(old, parts) or [
            _change(
                "outputs",
                None,
                None,
                None,
                f"the key matches run {run_id[:12]}, but its outputs on disk were changed or removed since",
            )
        ]
    return {"previous_run": run_id, "changes": changes}


def change_texts(miss: Mapping[str, Any] | None) -> list[str]:
    return [str(c.get("text")) for c in (miss or {}).get("changes") or []]
