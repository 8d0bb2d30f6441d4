"""Cache keys: when an earlier step's result can stand in for running the step again.

A step's key hashes what decides its result: its declared inputs (manifest digests, by
content, so a touched but unchanged file still hits), its params, and its code (the git commit
of the working directory plus a hash of the step's own source: the function's source, or the
files a command names, such as ``python train.py``'s ``train.py``). A succeeded step run
carrying the same key, whose declared outputs are still on disk with the digests it recorded,
is reused instead of run again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from collections.abc import Collection
from pathlib import Path
from typing import Any

from flightlog.pipeline.spec import StepSpec

__all__ = ["cache_key", "digest_of", "git_commit", "MissingInput"]

_MAX_HASHED_FILE = 64 << 20


class MissingInput(Exception):
    """A declared input does not exist when the step is about to run."""


def digest_of(path: Path, cache_dir: Path | None) -> str:
    """The content digest of a file or a directory tree (the manifest's, as lineage uses)."""
    from flightlog.data.manifest import build_manifest

    manifest = build_manifest(path, cache_dir=cache_dir, show_progress=False)
    if manifest["kind"] == "file" and manifest.get("files"):
        return str(manifest["files"][0]["sha256"])  # a file's identity is its content hash (as log_input)
    return str(manifest["digest"]).removeprefix("sha256:")


@functools.lru_cache(maxsize=16)
def git_commit(workdir: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", workdir, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _file_hash(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > _MAX_HASHED_FILE:
            return None
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def source_of(step: StepSpec, workdir: Path) -> dict[str, Any]:
    """What identifies the step's code: its function's source, or the files its command names."""
    if step.function is not None:
        digest = step.source_hash
        if not digest:  # a spec from YAML or a stored run: hash the function it names
            from flightlog.pipeline.define import source_hash
            from flightlog.pipeline.stepmain import load_function

            try:
                digest = source_hash(load_function(step.function))
            except Exception:
                digest = None
        return {"function": digest or step.function}
    files: dict[str, str] = {}
    for arg in step.command or []:
        if arg in step.outputs:  # what the step writes is not its code (absent before its first run)
            continue
        path = Path(arg) if Path(arg).is_absolute() else workdir / arg
        digest = _file_hash(path) if "/" in arg or "." in arg else None
        if digest:
            files[arg] = digest
    for check in step.gate:
        if check.expect:
            digest = _file_hash(workdir / check.expect)
            if digest:
                files[check.expect] = digest
    return {"files": files}


def cache_key(
    pipeline: str,
    step: StepSpec,
    workdir: Path,
    cache_dir: Path | None,
    *,
    pending: Collection[str] = (),
) -> tuple[str, dict[str, Any]]:
    """The step's key and what went into it (kept with the step's state, so a miss can be explained
    part by part: :mod:`flightlog.pipeline.cachemiss`).

    ``pending`` names inputs an upstream step is about to remake (``pipeline plan``): their content
    is not known yet, so they go in as None and are not read; the key is then no key to look up.
    """
    inputs: dict[str, str | None] = {}
    for rel in [*step.inputs, *(c.data for c in step.gate if c.data)]:
        if rel in pending:
            inputs[rel] = None
            continue
        path = workdir / rel
        if not path.exists():
            raise MissingInput(f"step {step.name!r}: declared input {rel} does not exist ({path})")
        inputs[rel] = digest_of(path, cache_dir)
    body = {
        "pipeline": pipeline,
        "step": step.name,
        "command": step.command,
        "function": step.function,
        "gate": [g.to_dict() for g in step.gate],
        "params": step.params,
        "inputs": inputs,
        "outputs": sorted(step.outputs),
        "code": {"commit": git_commit(str(workdir)), **source_of(step, workdir)},
    }
    text = json.dumps(body, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest(), body
