"""The server's artifact blobs: the same content-addressed layout as the embedded store's,
written from streamed request bodies, served as downloads that can never run in a page.

An upload is hashed while it is written to a temporary file and renamed into place only when
its size and SHA-256 are what the client said, so a half-sent or damaged body never sits under
a real digest. Memory use is one chunk, whatever the size: multi-gigabyte checkpoints stream.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import FileResponse

from flightlog.errors import InvalidInput, NotFound
from flightlog.filemodes import private_dirs
from flightlog.store.artifacts import LocalArtifactStore, check_artifact_path
from flightlog.transport.wire import PayloadTooLarge

__all__ = [
    "BlobStore",
    "S3BlobStore",
    "open_blob_store",
    "DigestMismatch",
    "check_digest",
    "check_artifact_path",
    "download_headers",
]

_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_WRITE_EVERY = 1 << 20
SANDBOX = "default-src 'none'; sandbox"


class DigestMismatch(InvalidInput):
    code = "digest_mismatch"


def check_digest(digest: str) -> str:
    if not _DIGEST.match(digest):
        raise InvalidInput(f"{digest[:80]!r} is not a SHA-256 digest: 64 lowercase hex characters")
    return digest


def download_headers(name: str) -> dict[str, str]:
    """Served as an attachment, sandboxed and never sniffed: an HTML or SVG artifact cannot run script here."""
    return {
        "Content-Security-Policy": SANDBOX,
        "X-Content-Type-Options": "nosniff",
        "Cross-Origin-Resource-Policy": "same-origin",
        "Cache-Control": "private, max-age=0",
    }


class BlobStore(LocalArtifactStore):
    def blob(self, digest: str) -> Path:
        return self._blob(check_digest(digest))

    def size_of(self, digest: str) -> int | None:
        try:
            st = os.lstat(self.blob(digest))
        except FileNotFoundError:
            return None
        return st.st_size if stat.S_ISREG(st.st_mode) else None

    def response(self, digest: str, filename: str) -> FileResponse:
        path = self.blob(digest)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            raise NotFound(
                f"the content {digest[:12]}… is not on this server (never uploaded, or removed by gc)"
            ) from None
        if not stat.S_ISREG(st.st_mode):  # never follow a link planted in the blob directory
            raise NotFound(f"the content {digest[:12]}… is not a regular file on this server")
        return FileResponse(
            path,
            media_type="application/octet-stream",
            filename=filename or digest,
            content_disposition_type="attachment",
            headers=download_headers(filename),
            stat_result=st,
        )

    async def receive(self, request: Request, *, limit: int, expected: str | None = None) -> tuple[str, int]:
        """Stream the request body in; returns (sha256, size) once it is safely in place."""
        declared = request.headers.get("content-length")
        length = int(declared) if declared is not None and declared.isascii() and declared.isdigit() else None
        if length is not None and length > limit:
            raise PayloadTooLarge(
                f"the upload is {length} bytes; this server takes at most {limit}", details={"limit": limit}
            )
        tmp_dir = self.root / "tmp"
        await anyio.to_thread.run_sync(private_dirs, tmp_dir)  # owner-only (filemodes.py); mkstemp files are 0600
        fd, tmp_name = tempfile.mkstemp(dir=tmp_dir, prefix="upload-")
        digest = hashlib.sha256()
        size = 0
        try:
            with os.fdopen(fd, "wb") as out:
                pending: list[bytes] = []
                held = 0
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        raise PayloadTooLarge(
                            f"the upload is over {limit} bytes, the most this server takes", details={"limit": limit}
                        )
                    digest.update(chunk)
                    pending.append(chunk)
                    held += len(chunk)
                    if held >= _WRITE_EVERY:
                        await anyio.to_thread.run_sync(out.write, b"".join(pending))
                        pending, held = [], 0
                if pending:
                    await anyio.to_thread.run_sync(out.write, b"".join(pending))
            if length is not None and size != length:
                raise InvalidInput(f"the upload ended after {size} of {length} bytes")
            sha = digest.hexdigest()
            if expected is not None and sha != expected:
                raise DigestMismatch(
                    f"the upload's SHA-256 is {sha}, not {expected}: it was damaged on the way; send it again",
                    details={"expected": expected, "actual": sha, "size": size},
                )
            await anyio.to_thread.run_sync(self._place, tmp_name, sha)
        except BaseException:
            _remove(tmp_name)
            raise
        return sha, size

    def _place(self, tmp_name: str, sha: str) -> None:
        blob = self._blob(sha)
        if blob.exists():
            _remove(tmp_name)
            return
        private_dirs(blob.parent)
        os.replace(tmp_name, blob)


class S3BlobStore(BlobStore):
    """Blobs in S3-compatible object storage: an upload is received and checked on local disk
    as above, then sent to the bucket (multipart when large: visible only once complete) and
    removed locally; a download is fetched once into the local cache, verified, then served."""

    def __init__(self, root: Path, objects: Any) -> None:
        super().__init__(root)
        self.objects = objects  # flightlog.store.objectstore.S3ArtifactStore over the same cache root

    def size_of(self, digest: str) -> int | None:
        size: int | None = self.objects.size_of(check_digest(digest))
        return size

    def response(self, digest: str, filename: str) -> FileResponse:
        self.objects.path_of(f"cas:sha256/{check_digest(digest)}")  # NotFound when the bucket lacks it
        return super().response(digest, filename)

    def _place(self, tmp_name: str, sha: str) -> None:
        try:
            self.objects.put_verified(tmp_name, sha)
        finally:
            _remove(tmp_name)

    def remove_unreferenced(self, referenced: set[str], *, dry_run: bool = False) -> tuple[int, int]:
        result: tuple[int, int] = self.objects.remove_unreferenced(referenced, dry_run=dry_run)
        return result


def open_blob_store(home: Path, artifacts: str | None) -> BlobStore:
    """The server's blobs: in ``artifacts`` (an s3:// URI, checked now so a missing bucket or
    denied access stops the server with a clear error) or under ``home/artifacts``."""
    if not artifacts:
        return BlobStore(home / "artifacts")
    from flightlog.store.artifacts import open_artifact_store

    objects: Any = open_artifact_store(home, artifacts)
    objects.check()
    return S3BlobStore(home / "artifacts", objects)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def filename_of(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def blob_info(digest: str, size: int) -> dict[str, Any]:
    return {"sha256": digest, "size": size, "uri": f"cas:sha256/{digest}"}
