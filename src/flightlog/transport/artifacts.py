"""Artifact content in remote mode: blobs go up to the server, and come down on demand.

The local content-addressed store under ``FLIGHTLOG_HOME/artifacts`` stays what it is for the
SDK (``log_artifact`` copies into it, the journal records ``cas:sha256/<hex>``) and becomes a
cache for readers. Before an ``artifact`` record is shipped, its blob is uploaded unless the
server already has it (``HEAD`` first, then a streamed ``PUT``; the server checks the size and
the hash). A blob that cannot be uploaded now (server down) fails the shipment, so the record
stays in the journal and both go up together when the server is back.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx

from flightlog.errors import InvalidInput, NotFound
from flightlog.store.artifacts import LocalArtifactStore
from flightlog.transport.connection import Connection

__all__ = ["RemoteArtifactStore", "blob_digest"]

_CHUNK = 1 << 20
_UPLOAD_TIMEOUT = httpx.Timeout(300.0, connect=5.0)


def blob_digest(uri: str | None) -> str | None:
    """The sha256 of a ``cas:sha256/<hex>`` URI, or None for other URIs."""
    if not uri or not uri.startswith("cas:sha256/"):
        return None
    digest = uri[len("cas:sha256/") :]
    return digest if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest) else None


def _chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            yield chunk


class RemoteArtifactStore(LocalArtifactStore):
    """A local CAS (what the SDK writes, what readers cache) backed by the server's blobs."""

    def __init__(self, root: Path, http: Connection) -> None:
        super().__init__(root)
        self.http = http
        self._on_server: set[str] = set()

    # ── up ──────────────────────────────────────────────────────────────────
    def put_file(self, source: str | os.PathLike[str]) -> tuple[str, int, str]:
        sha, size, uri = super().put_file(source)
        self.upload(sha)
        return sha, size, uri

    def upload_referenced(self, records: Sequence[dict[str, Any]]) -> list[str]:
        """Upload the blob of every ``artifact`` record that the server lacks; returns warnings."""
        warnings = []
        for record in records:
            if record.get("k") != "artifact":
                continue
            sha = blob_digest(record.get("uri"))
            if sha is None or sha in self._on_server:
                continue
            if not self._blob(sha).is_file():
                warnings.append(
                    f"artifact {record.get('path')!r}: its content {sha[:12]} is no longer in {self.root}; "
                    "recorded on the server without content"
                )
                continue
            self.upload(sha)
        return warnings

    def upload(self, sha: str) -> None:
        if sha in self._on_server:
            return
        path = f"/blobs/sha256/{sha}"
        head = self.http.request("HEAD", path, ok=(404,))
        if head.status_code == 404:
            blob = self._blob(sha)
            size = blob.stat().st_size
            self.http.request(
                "PUT",
                path,
                content=_chunks(blob),
                retries=0,
                timeout=_UPLOAD_TIMEOUT,
                headers={"Content-Type": "application/octet-stream", "Content-Length": str(size)},
            )
        self._on_server.add(sha)

    # ── down ────────────────────────────────────────────────────────────────
    def path_of(self, uri: str) -> Path:
        sha = blob_digest(uri)
        if sha is None:
            if uri.startswith("file://") and Path(uri[len("file://") :]).exists():
                return Path(uri[len("file://") :])
            if uri.startswith("file://"):
                raise NotFound(
                    f"artifact {uri} is not kept by flightlog: it is a path on the machine that logged it, "
                    "and it does not exist here"
                )
            raise NotFound(f"artifact URI {uri!r} is not readable here")
        blob = self._blob(sha)
        if not blob.is_file():
            blob.parent.mkdir(parents=True, exist_ok=True)
            self._download(sha, blob)
        return blob

    def copy_out(self, uri: str, dest: str | os.PathLike[str]) -> Path:
        dest_path = Path(dest)
        dest_path.parent.mkdir(parents=True, exist_ok=True)
        sha = blob_digest(uri)
        if sha is None or self._blob(sha).is_file():
            shutil.copyfile(self.path_of(uri), dest_path)
        else:
            self._download(sha, dest_path)
        return dest_path

    def _download(self, sha: str, dest: Path) -> None:
        """Stream a blob to ``dest`` through a temporary file, checking its hash before the rename."""
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".flightlog-download-")
        digest = hashlib.sha256()
        try:
            with (
                os.fdopen(fd, "wb") as out,
                self.http.stream("GET", f"/blobs/sha256/{sha}", timeout=_UPLOAD_TIMEOUT) as resp,
            ):
                for chunk in resp.iter_bytes(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != sha:
                raise InvalidInput(
                    f"artifact content {sha[:12]} arrived damaged (hash {digest.hexdigest()[:12]}); try again"
                )
            os.replace(tmp, dest)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
