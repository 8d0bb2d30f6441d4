"""Artifacts in S3-compatible object storage (``FLIGHTLOG_ARTIFACTS=s3://bucket/prefix``).

The same content addressing as the local directory: a file's bytes live once under
``<prefix>/sha256/ab/cdef…`` and runs record ``cas:sha256/<hex>``, so the URIs a run keeps do
not depend on where the bytes are (moving from a directory to a bucket copies blobs, nothing
else). The client is boto3 with its usual configuration: credentials and region from the
environment or ``~/.aws``, ``AWS_ENDPOINT_URL`` for MinIO, Ceph, R2 or any S3-compatible server.

Why it can be trusted:

- a file is hashed first, then sent through a reader that hashes it again; if the two digests
  differ (the file changed meanwhile) the object is deleted and the upload refused, so a key
  always holds the bytes its name says;
- files above 8 MiB go as multipart uploads, which S3 makes visible only when the last part
  is committed: an upload cut half-way leaves nothing under the key;
- a download lands in a local cache under a temporary name and is renamed into place only
  when its SHA-256 is the one asked for.

Every failure of the object store (missing bucket, denied access, no network) becomes
:class:`~flightlog.errors.StoreUnavailable` naming the bucket and what to check.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flightlog.errors import InvalidInput, NotFound, StoreUnavailable
from flightlog.store.artifacts import LocalArtifactStore, hash_file

__all__ = ["S3ArtifactStore", "parse_s3_uri", "MULTIPART_THRESHOLD"]

MULTIPART_THRESHOLD = 8 << 20
_CHUNK = 1 << 20


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` → (bucket, ``some/prefix/``)."""
    rest = uri[len("s3://") :] if uri.startswith("s3://") else ""
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise InvalidInput(f"artifact store URI {uri!r} names no bucket: write s3://BUCKET or s3://BUCKET/PREFIX")
    prefix = prefix.strip("/")
    return bucket, f"{prefix}/" if prefix else ""


class _HashingReader:
    """A forward-only file reader that hashes what it hands out (s3transfer then reads in order)."""

    def __init__(self, f: Any) -> None:
        self.f = f
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        data: bytes = self.f.read(n)
        self.digest.update(data)
        self.size += len(data)
        return data


class S3ArtifactStore(LocalArtifactStore):
    """Blobs in a bucket; ``root`` is a local cache of downloaded blobs (verified by hash)."""

    def __init__(self, uri: str, cache_root: Path, *, client: Any = None) -> None:
        super().__init__(cache_root)
        self.uri = uri
        self.bucket, self.prefix = parse_s3_uri(uri)
        try:
            import boto3
            from boto3.s3.transfer import TransferConfig
        except ImportError as exc:
            raise InvalidInput(f"an s3:// artifact store needs boto3 ({exc}): pip install 'flightlog[s3]'") from None
        self.client = client or boto3.client("s3")
        self.transfer = TransferConfig(multipart_threshold=MULTIPART_THRESHOLD, multipart_chunksize=MULTIPART_THRESHOLD)
        self._checked = False

    # ── errors ──────────────────────────────────────────────────────────────
    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except ClientError as exc:
            raise self._client_error(doing, exc) from None
        except BotoCoreError as exc:
            raise StoreUnavailable(
                f"cannot {doing} in the artifact bucket {self.uri}: {exc}", details={"artifacts": self.uri}
            ) from None

    def _client_error(self, doing: str, exc: Any) -> StoreUnavailable:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code == "NoSuchBucket" or (code == "404" and doing == "reach the bucket"):
            hint = f"the bucket {self.bucket!r} does not exist: create it, or fix FLIGHTLOG_ARTIFACTS"
        elif code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch") or status == 403:
            hint = (
                f"access to the bucket {self.bucket!r} is denied: check the credentials "
                "(AWS_ACCESS_KEY_ID / AWS_PROFILE) and the bucket's policy"
            )
        else:
            hint = f"{code or status}: {error.get('Message') or exc}"
        return StoreUnavailable(
            f"cannot {doing} in the artifact store {self.uri}: {hint}", details={"artifacts": self.uri, "code": code}
        )

    def check(self) -> None:
        """Fail early and clearly when the bucket is missing or closed to us (once)."""
        if self._checked:
            return
        with self._errors("reach the bucket"):
            self.client.head_bucket(Bucket=self.bucket)
        self._checked = True

    # ── keys ────────────────────────────────────────────────────────────────
    def key(self, sha256: str) -> str:
        return f"{self.prefix}sha256/{sha256[:2]}/{sha256[2:]}"

    def size_of(self, sha256: str) -> int | None:
        from botocore.exceptions import ClientError

        self.check()
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self.key(sha256))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise self._client_error("look up an artifact", exc) from None
        return int(head["ContentLength"])

    # ── writing ─────────────────────────────────────────────────────────────
    def put_file(self, source: str | os.PathLike[str]) -> tuple[str, int, str]:
        """Upload ``source`` unless its content is already there; returns (sha256, size, uri)."""
        sha, size = hash_file(source)
        self.put_verified(source, sha)
        return sha, size, f"cas:sha256/{sha}"

    def put_verified(self, source: str | os.PathLike[str], sha256: str) -> None:
        """Upload a file whose digest is known, checking the bytes sent against it."""
        if self.size_of(sha256) is not None:
            return  # content-addressed: already kept
        key = self.key(sha256)
        with open(source, "rb") as f:
            reader = _HashingReader(f)
            with self._errors("upload an artifact"):
                self.client.upload_fileobj(reader, self.bucket, key, Config=self.transfer)
        if reader.digest.hexdigest() != sha256:
            with self._errors("remove a damaged upload"):
                self.client.delete_object(Bucket=self.bucket, Key=key)
            raise InvalidInput(
                f"{source} changed while it was uploaded (its SHA-256 is no longer {sha256}): "
                "log it again once it is complete"
            )

    # ── reading ─────────────────────────────────────────────────────────────
    def path_of(self, uri: str) -> Path:
        """A local copy of the content (downloaded once into the cache, verified by hash)."""
        if not uri.startswith("cas:sha256/"):
            return super().path_of(uri)
        sha = uri.rsplit("/", 1)[1]
        blob = self._blob(sha)
        if blob.exists():
            return blob
        if self.size_of(sha) is None:
            raise NotFound(f"artifact content {uri} is missing from {self.uri} (removed by gc?)")
        tmp_dir = self.root / "tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=tmp_dir, prefix="download-")
        try:
            with os.fdopen(fd, "wb") as out, self._errors("download an artifact"):
                self.client.download_fileobj(self.bucket, self.key(sha), out, Config=self.transfer)
            got, _ = hash_file(tmp_name)
            if got != sha:
                raise StoreUnavailable(
                    f"the object for {uri} in {self.uri} is damaged: its SHA-256 is {got}",
                    details={"expected": sha, "actual": got},
                )
            blob.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp_name, blob)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        return blob

    def stored_blobs(self) -> Iterator[tuple[str, int]]:
        """(sha256, size) of every blob under the prefix."""
        self.check()
        start = f"{self.prefix}sha256/"
        with self._errors("list the artifacts"):
            for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start):
                for obj in page.get("Contents", []):
                    rest = obj["Key"][len(start) :].replace("/", "")
                    if len(rest) == 64:
                        yield rest, int(obj["Size"])

    def remove_blobs(self, digests: list[str]) -> None:
        """Delete the objects (1,000 a request) and their cached copies."""
        with self._errors("remove unreferenced artifacts"):
            for start in range(0, len(digests), 1000):
                self.client.delete_objects(
                    Bucket=self.bucket,
                    Delete={
                        "Objects": [{"Key": self.key(sha)} for sha in digests[start : start + 1000]],
                        "Quiet": True,
                    },
                )
        super().remove_blobs(digests)
