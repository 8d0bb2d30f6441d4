"""Which training run and digest a served version comes from: the registry's answer, else
what a replica recorded when it attached (``serving.model_run``, ``serving.digest``).

Shared by the deployment diagnosis and live drift (``drift.py``): each needs the training run
of the version it judges, to read that run's data profile and evaluation.
"""

from __future__ import annotations

from typing import Any

from flightlog.errors import InvalidInput, NotFound
from flightlog.registry import Registry
from flightlog.timefmt import iso

__all__ = ["registry_of", "version_info"]


def registry_of(client: Any) -> Any:
    """The registry of the client's store, or None for a store that keeps none."""
    try:
        return Registry(client)
    except InvalidInput:  # a store that keeps no registry: replicas alone still tell a story
        return None


def version_info(
    registry: Any, model: str | None, version: str | None, runs: list[Any], project: str | None
) -> dict[str, Any] | None:
    """The version's model, training run, digest and reference (None for no version)."""
    if version is None:
        return None
    out: dict[str, Any] = {"version": version, "model": model, "run_id": None, "digest": None, "ref": None}
    for r in runs:  # what a replica recorded when it attached (serving.model_run)
        if (r.tags or {}).get("serving.version") == version:
            out["model"] = out["model"] or (r.tags or {}).get("serving.model") or None
            params = r.params or {}
            out["run_id"] = out["run_id"] or params.get("serving.model_run")
            out["digest"] = out["digest"] or params.get("serving.digest")
    if registry is not None and out["model"] and version.isdigit():
        try:
            mv = registry.resolve(f"{out['model']}/{version}", project)
        except (NotFound, InvalidInput):
            pass
        else:
            out.update(run_id=mv.run_id, digest=mv.digest, ref=mv.ref, created=iso(mv.created))
    return out
