"""The registry of a flightlog server, through its API (``registry/api.py``): what the CLI and
the SDK use when ``FLIGHTLOG_URL`` is set. The same methods as `LocalRegistry`; the server
applies the rules (and delivers the events) over its own store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from flightlog.errors import InvalidInput
from flightlog.registry.refs import ModelRef, check_alias, check_name, parse_ref
from flightlog.registry.types import (
    AliasChange,
    Deployment,
    DeploymentChange,
    ModelVersion,
    RegisteredModel,
)
from flightlog.timefmt import parse_time

__all__ = ["RemoteRegistry"]


def _t(value: Any) -> float:
    return 0.0 if value is None else parse_time(str(value))


def _model(d: dict[str, Any]) -> RegisteredModel:
    return RegisteredModel(
        d["project"],
        d["name"],
        d.get("description"),
        d.get("tags") or {},
        tuple(d.get("protected_aliases") or ()),
        _t(d.get("created")),
        int(d.get("latest_version") or 0),
        {k: int(v) for k, v in (d.get("aliases") or {}).items()},
    )


def _version(d: dict[str, Any]) -> ModelVersion:
    return ModelVersion(
        d["name"],
        int(d["version"]),
        d["run_id"],
        d["artifact_path"],
        d.get("digest"),
        d.get("size"),
        d["project"],
        d.get("source") or "artifact",
        None,
        d.get("description"),
        d.get("tags") or {},
        _t(d.get("created")),
        d.get("created_by"),
        tuple(d.get("aliases") or ()),
    )


def _change(d: dict[str, Any] | None) -> AliasChange | None:
    if d is None:
        return None
    return AliasChange(
        d["project"],
        d["name"],
        d["alias"],
        d.get("from_version"),
        d.get("to_version"),
        _t(d.get("time")),
        d.get("actor"),
    )


def _deployment(d: dict[str, Any]) -> Deployment:
    return Deployment(
        d["project"],
        d["endpoint"],
        d["env"],
        d["model"],
        int(d["version"]),
        d["ref"],
        _t(d.get("updated")),
        d.get("updated_by"),
    )


class RemoteRegistry:
    def __init__(self, client: Any, http: Any) -> None:
        self.client = client
        self.http = http

    def _get(self, path: str, project: str | None = None, **params: Any) -> Any:
        query = {k: v for k, v in {"project": project, **params}.items() if v is not None}
        return self.http.json("GET", path, params=query)

    @staticmethod
    def _m(name: str) -> str:
        return "/models/" + quote(check_name(name), safe="")

    def models(self, project: str | None = None) -> list[RegisteredModel]:
        return [_model(m) for m in self._get("/models", project)["models"]]

    def model(self, name: str, project: str | None = None) -> RegisteredModel:
        return _model(self._get(self._m(name), project))

    def versions(self, name: str, project: str | None = None) -> list[ModelVersion]:
        return [_version(v) for v in self._get(self._m(name), project)["versions"]]

    def resolve(self, ref: str | ModelRef, project: str | None = None) -> ModelVersion:
        r = parse_ref(ref) if isinstance(ref, str) else ref
        if r.alias is not None:
            return _version(self._get(f"{self._m(r.name)}/aliases/{r.alias}", project))
        if r.version is not None:
            return _version(self._get(f"{self._m(r.name)}/versions/{r.version}", project))
        versions = self.versions(r.name, project)
        if not versions:
            raise InvalidInput(f"model {r.name!r} has no version yet")
        return versions[-1]

    def lineage(self, ref: str, project: str | None = None) -> dict[str, Any]:
        mv = self.resolve(ref, project)
        result: dict[str, Any] = self._get(f"{self._m(mv.name)}/versions/{mv.version}", mv.project, lineage="true")
        return result

    def register(
        self,
        run: Any,
        path: str,
        name: str,
        *,
        alias: str | None = None,
        description: str | None = None,
        tags: Mapping[str, str] | None = None,
        model_description: str | None = None,
    ) -> ModelVersion:
        run_id = run if isinstance(run, str) else getattr(run, "id", run)
        body = {
            "run": run_id,
            "path": path,
            "alias": alias,
            "description": description,
            "tags": dict(tags) if tags else None,
        }
        return _version(
            self.http.json("POST", f"{self._m(name)}/versions", json={k: v for k, v in body.items() if v is not None})
        )

    def set_alias(
        self, name: str, alias: str, version: int | str | None, project: str | None = None
    ) -> AliasChange | None:
        path = f"{self._m(name)}/aliases/{check_alias(alias)}"
        params = {"project": project} if project else None
        if version is None:
            return _change(self.http.json("DELETE", path, params=params)["change"])
        return _change(self.http.json("PUT", path, params=params, json={"version": version})["change"])

    def alias_history(self, name: str, alias: str | None = None, project: str | None = None) -> list[AliasChange]:
        rows = self._get(f"{self._m(name)}/alias-history", project, alias=alias)["history"]
        return [c for c in map(_change, rows) if c is not None]

    def update_model(
        self,
        name: str,
        *,
        project: str | None = None,
        description: str | None = None,
        tags: Mapping[str, str] | None = None,
        remove_tags: Sequence[str] = (),
        protected: Sequence[str] | None = None,
    ) -> RegisteredModel:
        body = {
            "description": description,
            "tags": dict(tags) if tags else None,
            "remove_tags": list(remove_tags) or None,
            "protected_aliases": None if protected is None else list(protected),
        }
        return _model(
            self.http.json(
                "PATCH",
                self._m(name),
                params={"project": project} if project else None,
                json={k: v for k, v in body.items() if v is not None},
            )
        )

    def delete_version(self, name: str, version: int | str, project: str | None = None) -> list[AliasChange]:
        path = f"{self._m(name)}/versions/{quote(str(version), safe='')}"
        rows = self.http.json("DELETE", path, params={"project": project} if project else None)["aliases_removed"]
        return [c for c in map(_change, rows) if c is not None]

    def delete_model(self, name: str, project: str | None = None) -> list[int]:
        done = self.http.json("DELETE", self._m(name), params={"project": project} if project else None)
        return [int(n) for n in done["versions"]]

    def rename_model(self, name: str, new_name: str, project: str | None = None) -> RegisteredModel:
        return _model(
            self.http.json(
                "POST",
                f"{self._m(name)}/rename",
                params={"project": project} if project else None,
                json={"new_name": check_name(new_name)},
            )
        )

    def update_version(self, ref: str, **_: Any) -> ModelVersion:
        raise InvalidInput(
            "a version's description and tags are set when it is registered; through a server they cannot be edited yet"
        )

    def deploy(
        self, ref: str, endpoint: str, env: str, project: str | None = None
    ) -> tuple[Deployment, DeploymentChange | None]:
        body = {"ref": ref, "endpoint": endpoint, "env": env, "project": project}
        d = self.http.json("POST", "/deployments", json={k: v for k, v in body.items() if v is not None})
        deployment = _deployment(d)
        change = None
        if d.get("changed"):
            change = DeploymentChange(
                deployment.project,
                endpoint,
                env,
                deployment.name,
                None,
                deployment.version,
                deployment.ref,
                deployment.updated,
                deployment.updated_by,
            )
        return deployment, change

    def deployments(self, project: str | None = None) -> list[Deployment]:
        return [_deployment(d) for d in self._get("/deployments", project)["deployments"]]

    def deployment_report(self, endpoint: str, env: str, project: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self._get(f"/deployments/{quote(endpoint, safe='')}/{quote(env, safe='')}", project)
        return result

    def deliver(self) -> int:
        return 0  # the server delivers the events of the changes it makes
