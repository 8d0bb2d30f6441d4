"""A content-addressed local artifact store: FLIGHTLOG_HOME/artifacts/sha256/ab/cdef….

Files are hashed while they are copied (one read), written to a temporary name and renamed
into place, so a crash never leaves a half-written blob under a real digest, and a file
logged twice (by two runs, say) is kept once. URIs look like ``cas:sha256/<hex>``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from flightlog.errors import InvalidInput, NotFound
from flightlog.filemodes import private_dirs
from flightlog.schema.paths import check_artifact_path  # the rule lives with the record schema

__all__ = ["LocalArtifactStore", "check_artifact_path", "hash_file", "open_artifact_store"]

_CHUNK = 1 << 20


def hash_file(path: str | os.PathLike[str]) -> tuple[str, int]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


class LocalArtifactStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _blob(self, sha256: str) -> Path:
        return self.root / "sha256" / sha256[:2] / sha256[2:]

    def put_file(self, source: str | os.PathLike[str]) -> tuple[str, int, str]:
        """Copy ``source`` in; returns (sha256, size, uri)."""
        tmp_dir = self.root / "tmp"
        private_dirs(tmp_dir)  # owner-only, as the blobs (mkstemp makes them 0600): filemodes.py
        digest = hashlib.sha256()
        size = 0
        fd, tmp_name = tempfile.mkstemp(dir=tmp_dir)
        try:
            with open(source, "rb") as src, os.fdopen(fd, "wb") as dst:
                while chunk := src.read(_CHUNK):
                    digest.update(chunk)
                    dst.write(chunk)
                    size += len(chunk)
            sha = digest.hexdigest()
            blob = self._blob(sha)
            if blob.exists():
                os.unlink(tmp_name)
            else:
                private_dirs(blob.parent)
                os.replace(tmp_name, blob)
        except BaseException:
            try:
                os.unlink(tmp_name)
            except FileNotFoundError:
                pass
            raise
        return sha, size, f"cas:sha256/{sha}"

    def path_of(self, uri: str) -> Path:
        if uri.startswith("cas:sha256/"):
            blob = self._blob(uri.rsplit("/", 1)[1])
            if blob.exists():
                return blob
            raise NotFound(f"artifact content {uri} is missing from {self.root} (removed by gc?)")
        if uri.startswith("file://"):
            path = Path(uri[len("file://") :])
            if path.exists():
                return path
            raise NotFound(f"artifact {uri} is not kept by flightlog and no longer exists on disk")
        raise NotFound(f"artifact URI {uri!r} is not readable here")

    def copy_out(self, uri: str, dest: str | os.PathLike[str]) -> Path:
        src = self.path_of(uri)
        dest_path = Path(dest)
        dest_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest_path)
        return dest_path

    def stored_blobs(self) -> Iterator[tuple[str, int]]:
        """(sha256, size) of every blob kept."""
        base = self.root / "sha256"
        if not base.is_dir():
            return
        for prefix in base.iterdir():
            for blob in prefix.iterdir():
                yield prefix.name + blob.name, blob.stat().st_size

    def remove_blobs(self, digests: list[str]) -> None:
        for sha in digests:
            self._blob(sha).unlink(missing_ok=True)

    def remove_unreferenced(self, referenced: set[str], *, dry_run: bool = False) -> tuple[int, int]:
        """Delete blobs no artifact row points at; returns (files, bytes)."""
        doomed = [(sha, size) for sha, size in list(self.stored_blobs()) if sha not in referenced]
        if not dry_run:
            self.remove_blobs([sha for sha, _ in doomed])
        return len(doomed), sum(size for _, size in doomed)


def open_artifact_store(home: Path, uri: str | None = None) -> LocalArtifactStore:
    """The artifact store ``FLIGHTLOG_ARTIFACTS`` names: ``s3://bucket/prefix`` (object storage,
    cached under ``home/artifacts``), or by default the directory ``home/artifacts``."""
    if not uri:
        return LocalArtifactStore(home / "artifacts")
    if uri.startswith("s3://"):
        from flightlog.store.objectstore import S3ArtifactStore

        return S3ArtifactStore(uri, home / "artifacts")

    raise InvalidInput(
        f"FLIGHTLOG_ARTIFACTS={uri!r} is not an artifact store: use s3://BUCKET/PREFIX, or unset it "
        "to keep artifacts under FLIGHTLOG_HOME/artifacts"
    )
