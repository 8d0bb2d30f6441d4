"""Which earlier run can stand in for a step: the controller's cache lookup, shared with ``pipeline plan``.

A succeeded run whose tags carry the step's key, and whose declared outputs are still on disk
with the digests it recorded, is reused; the latest such run wins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flightlog.pipeline.cachekey import MissingInput, digest_of
from flightlog.pipeline.spec import StepSpec

__all__ = ["find_reusable", "output_digests"]


def output_digests(step: StepSpec, workdir: Path, cache_dir: Path | None) -> dict[str, str]:
    """The content digest of each declared output on disk; MissingInput when one is absent."""
    out = {}
    for rel in step.outputs:
        path = workdir / rel
        if not path.exists():
            raise MissingInput(f"step {step.name!r} did not produce its declared output {rel} ({path})")
        out[rel] = digest_of(path, cache_dir)
    return out


def find_reusable(
    client: Any, project: str, step: StepSpec, key: str, workdir: Path, cache_dir: Path | None
) -> tuple[str, dict[str, str]] | None:
    """The latest succeeded run with this key whose outputs are still on disk, unchanged, and
    those outputs' digests; None when no run can stand in."""
    candidates = client.runs(
        project, filter=f"tags.cache_key = '{key}' and status = 'succeeded'", order_by="-created", limit=5
    )
    if not candidates:
        return None
    try:
        current = output_digests(step, workdir, cache_dir)  # once: the files on disk are the same for every candidate
    except MissingInput:
        return None
    for candidate in candidates:
        recorded = {
            a.path: a.sha256 for a in client.artifacts(candidate.id) if a.role == "output" and a.kind == "step-output"
        }
        if all(recorded.get(rel) == digest for rel, digest in current.items()):
            return candidate.id, current
    return None
