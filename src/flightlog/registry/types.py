"""The registry's nouns: registered models, their versions, aliases, deployments, events.

Plain frozen dataclasses with a ``to_dict`` in the CLI's JSON conventions (snake_case, ids as
strings, times as ISO-8601 UTC), shared by the stores, the API and the CLI so every surface
answers with the same shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flightlog.timefmt import iso

__all__ = ["AliasChange", "Deployment", "DeploymentChange", "ModelVersion", "RegisteredModel", "RegistryEvent"]


def _iso(t: float | None) -> str | None:
    return None if t is None else iso(t)


@dataclass(frozen=True)
class RegisteredModel:
    project: str
    name: str
    description: str | None
    tags: dict[str, str]
    protected: tuple[str, ...]  # aliases that need an admin token to move
    created: float
    latest_version: int = 0
    aliases: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "name": self.name,
            "description": self.description,
            "tags": dict(self.tags),
            "protected_aliases": list(self.protected),
            "created": _iso(self.created),
            "latest_version": self.latest_version,
            "aliases": dict(self.aliases),
        }


@dataclass(frozen=True)
class ModelVersion:
    """One version of a registered model: what ``resolve`` returns and serving loads.

    ``artifact_path`` is the path the run logged (an artifact's or a checkpoint's), ``digest``
    its sha256 and ``size`` its bytes, taken from the run's record: the file a download checks."""

    name: str
    version: int
    run_id: str
    artifact_path: str
    digest: str | None
    size: int | None
    project: str
    source: str = "artifact"  # artifact | checkpoint
    uri: str | None = None
    description: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    created: float = 0.0
    created_by: str | None = None
    aliases: tuple[str, ...] = ()

    @property
    def ref(self) -> str:
        return f"models:/{self.name}/{self.version}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "name": self.name,
            "version": self.version,
            "ref": self.ref,
            "run_id": self.run_id,
            "source": self.source,
            "artifact_path": self.artifact_path,
            "digest": self.digest,
            "size": self.size,
            "description": self.description,
            "tags": dict(self.tags),
            "aliases": list(self.aliases),
            "created": _iso(self.created),
            "created_by": self.created_by,
        }


@dataclass(frozen=True)
class AliasChange:
    project: str
    name: str
    alias: str
    from_version: int | None
    to_version: int | None  # None: the alias was removed
    time: float
    actor: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "name": self.name,
            "alias": self.alias,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "time": _iso(self.time),
            "actor": self.actor,
        }


@dataclass(frozen=True)
class Deployment:
    """The desired state of an endpoint in an environment: which version it should serve."""

    project: str
    endpoint: str
    env: str
    name: str
    version: int
    ref: str  # what was asked for: fraud@production, fraud/3
    updated: float
    updated_by: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "endpoint": self.endpoint,
            "env": self.env,
            "model": self.name,
            "version": self.version,
            "ref": self.ref,
            "updated": _iso(self.updated),
            "updated_by": self.updated_by,
        }


@dataclass(frozen=True)
class DeploymentChange:
    project: str
    endpoint: str
    env: str
    name: str
    from_version: int | None
    to_version: int
    ref: str
    time: float
    actor: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "endpoint": self.endpoint,
            "env": self.env,
            "model": self.name,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "ref": self.ref,
            "time": _iso(self.time),
            "actor": self.actor,
        }


@dataclass(frozen=True)
class RegistryEvent:
    """A change worth telling CI about, kept in the same transaction as the change (an outbox):
    ``key`` is its dedup key, so it is delivered once however many dispatchers look."""

    id: int
    project: str
    kind: str  # one of registry.events.EVENT_KINDS
    key: str
    payload: dict[str, Any]
    time: float
    delivered: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "project": self.project,
            "kind": self.kind,
            "key": self.key,
            "payload": self.payload,
            "time": _iso(self.time),
            "delivered": _iso(self.delivered),
        }
