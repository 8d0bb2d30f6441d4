"""``flightlog.models.load("models:/fraud@production")``: a registered model in one call.

It resolves the reference (the registry's one grammar), downloads the version's artifact into
a cache keyed by its digest, checks the digest, and loads it by kind (``loaders.py``). Why a
cache keyed by digest: the digest names the bytes, so a version loaded once is read from disk
the next time (an alias that moves to another version gets other bytes under another key),
and two processes loading the same version share one copy.

What "checks the digest" means for each kind of artifact:

* a file: the sha256 of the downloaded file equals the version's digest;
* a directory the SDK logged (``run.log_artifact("model/")``): every file's sha256 equals the
  one its artifact record carries, and the directory's digest — sha256 over the sorted
  ``path\\0size\\0sha256`` lines, the data feature's manifest digest — equals the version's;
* a model an MLflow client logged (a directory recorded with its manifest): the manifest's
  sha256 equals the version's digest, and every file matches the manifest.

A mismatch raises :class:`~flightlog.errors.DigestMismatch` and leaves nothing in the cache.
The cache is ``FLIGHTLOG_MODEL_CACHE``, else ``$XDG_CACHE_HOME/flightlog/models``, else
``~/.cache/flightlog/models``; a cached copy is hashed again whenever its files' size or
modification time changed since it was checked.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from flightlog.client import Client
from flightlog.errors import DigestMismatch, InvalidInput, NotFound
from flightlog.registry import Registry
from flightlog.registry.loaders import load_path
from flightlog.registry.types import ModelVersion

__all__ = ["CACHE_ENV", "cache_root", "download", "load"]

CACHE_ENV = "FLIGHTLOG_MODEL_CACHE"  # declared in config.VARIABLES (docs/configuration.md)
_STAMP = ".flightlog-verified.json"
_MANIFEST_KIND = "model"  # an MLflow model directory, recorded as its manifest (mlflow_server/api/artifacts.py)
_DIR_KIND = "dir"


def cache_root() -> Path:
    """Where downloaded versions are kept (see the module docstring)."""
    given = os.environ.get(CACHE_ENV, "").strip()
    if given:
        return Path(given).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "flightlog" / "models"


def _sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != _STAMP) if root.is_dir() else [root]


def _stamp_of(root: Path) -> dict[str, list[int]]:
    return {str(p.relative_to(root.parent)): [p.stat().st_size, p.stat().st_mtime_ns] for p in _files(root)}


def _fresh(slot: Path, name: str) -> Path | None:
    """The cached copy in ``slot``, when its files are as they were when checked."""
    target = slot / name
    stamp = slot / _STAMP
    if not target.exists() or not stamp.is_file():
        return None
    try:
        if json.loads(stamp.read_text()) == _stamp_of(target):
            return target
    except (OSError, ValueError):
        pass
    return None


def _mismatch(mv: ModelVersion, what: str, got: str, expected: str | None) -> DigestMismatch:
    return DigestMismatch(
        f"{mv.ref}: {what} has sha256 {got}, not the registered {expected}: the artifact store holds "
        "other bytes than the run logged; nothing was kept",
        details={"ref": mv.ref, "expected": expected, "got": got, "what": what},
    )


def _record(client: Client, mv: ModelVersion) -> Any:
    found = [a for a in client.artifacts(mv.run_id) if a.path == mv.artifact_path]
    if not found:
        raise NotFound(
            f"{mv.ref}: run {mv.run_id[:12]} no longer has the artifact {mv.artifact_path!r} it was registered from",
            details={"ref": mv.ref, "run_id": mv.run_id, "path": mv.artifact_path},
        )
    return found[-1]


def _verify_tree(client: Client, mv: ModelVersion, kind: str | None, root: Path) -> None:
    """Every file against its record, and the directory against the version's digest."""
    records = {a.path: a for a in client.artifacts(mv.run_id)}
    lines = []
    for path in _files(root):
        rel = path.relative_to(root).as_posix()
        sha = _sha256(path)
        record = records.get(f"{mv.artifact_path}/{rel}")
        if record is not None and record.sha256 and record.sha256 != sha:
            raise _mismatch(mv, f"file {rel}", sha, record.sha256)
        lines.append((rel, path.stat().st_size, sha))
    if mv.digest is None:
        return
    if kind == _DIR_KIND or kind is None:
        digest = hashlib.sha256("".join(f"{r}\0{s}\0{h}\n" for r, s, h in sorted(lines)).encode()).hexdigest()
        if digest != mv.digest:
            raise _mismatch(mv, "the directory", digest, mv.digest)


def _verify_manifest(client: Client, mv: ModelVersion, record: Any, root: Path, work: Path) -> None:
    """An MLflow model: its manifest against the version's digest, its files against the manifest."""
    manifest = client.artifact_store.copy_out(str(record.uri), work / "manifest.json")
    sha = _sha256(manifest)
    if mv.digest is not None and sha != mv.digest:
        raise _mismatch(mv, "the model's manifest", sha, mv.digest)
    try:
        listed = {str(f["path"]): str(f["sha256"]) for f in json.loads(manifest.read_text())["files"]}
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"{mv.ref}: the model's manifest cannot be read ({exc})") from None
    got = {p.relative_to(root).as_posix(): _sha256(p) for p in _files(root)}
    for rel, expected in listed.items():
        if rel not in got:
            raise NotFound(f"{mv.ref}: the model's file {rel} is missing from run {mv.run_id[:12]}'s artifacts")
        if got[rel] != expected:
            raise _mismatch(mv, f"file {rel}", got[rel], expected)


def download(
    ref: str | ModelVersion,
    *,
    client: Client | None = None,
    project: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """The local path (a file or a directory) of the version ``ref`` names, downloaded into the
    cache and checked against its digest (see the module docstring)."""
    own = client is None
    client = client or Client()
    try:
        mv = ref if isinstance(ref, ModelVersion) else Registry(client).resolve(ref, project)
        root = Path(cache_dir).expanduser() if cache_dir is not None else cache_root()
        name = Path(mv.artifact_path).name
        slot = root / (mv.digest or f"unverified-{mv.run_id}-{mv.artifact_path.replace('/', '_')}")
        cached = _fresh(slot, name)
        if cached is not None:
            return cached
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".download-", dir=root))
        try:
            record = _record(client, mv)
            got = client.download_artifact(mv.run_id, mv.artifact_path, work / "content" / name)
            if got.is_file():
                sha = _sha256(got)
                if mv.digest is not None and sha != mv.digest:
                    raise _mismatch(mv, "the download", sha, mv.digest)
            elif record.kind == _MANIFEST_KIND:
                _verify_manifest(client, mv, record, got, work)
            else:
                _verify_tree(client, mv, record.kind, got)
            (work / "content" / _STAMP).write_text(json.dumps(_stamp_of(work / "content" / name)))
            if slot.exists():
                shutil.rmtree(slot, ignore_errors=True)  # a stale copy someone changed: replaced
            try:
                os.replace(work / "content", slot)
            except OSError:  # another process put the same bytes there first
                if _fresh(slot, name) is None:
                    raise
            return slot / name
        finally:
            shutil.rmtree(work, ignore_errors=True)
    finally:
        if own:
            client.close()


def load(
    ref: str | ModelVersion,
    *,
    client: Client | None = None,
    project: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    kind: str | None = None,
    model: Any = None,
) -> Any:
    """The model ``ref`` names (``models:/fraud@production``, ``fraud/3``, …), downloaded,
    checked and loaded: a scikit-learn estimator (joblib or pickle), a PyTorch state dict
    (loaded into ``model`` when one is given) or a TorchScript module, an XGBoost or LightGBM
    booster, an ONNX Runtime session (with onnxruntime installed), an MLflow model directory of
    those flavors, or, for any other directory, its path. ``kind=`` forces one (``loaders.KINDS``).
    """
    path = download(ref, client=client, project=project, cache_dir=cache_dir)
    return load_path(path, kind=kind, model=model)
