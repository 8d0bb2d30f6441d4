"""The registry's rules over a store that keeps its tables (SQLite, PostgreSQL): what may be
registered, which alias may move, what a deployment may name. A flightlog server answers its
API with this same class over its own store, so the rules hold once for every surface.

Every refusal is checked before anything is written, and each change is then one transaction
(``stores/sql.py``): a bad request records nothing, not half of something.
"""

from __future__ import annotations

import getpass
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flightlog.errors import Conflict, Forbidden, InvalidInput, NotFound
from flightlog.models import Artifact
from flightlog.names import check_name_text
from flightlog.registry.events import deliver_soon
from flightlog.registry.refs import AmbiguousModel, ModelRef, check_alias, check_name, parse_ref
from flightlog.registry.replicas import replica_state
from flightlog.registry.stores.sql import SqlRegistryStore
from flightlog.registry.types import (
    AliasChange,
    Deployment,
    DeploymentChange,
    ModelVersion,
    RegisteredModel,
    RegistryEvent,
)
from flightlog.timefmt import iso

__all__ = ["LocalRegistry", "check_place", "check_tags"]

_PLACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # fullmatch: "$" would let a final newline in


def check_place(value: str, what: str) -> str:
    check_name_text(value, what)
    if not isinstance(value, str) or not _PLACE.fullmatch(value):
        raise InvalidInput(
            f"{what} {value!r} is not valid: use letters, digits, '_', '.' and '-' (up to 128)",
            details={what.replace(" ", "_"): str(value)[:200]},
        )
    return value


def check_tags(tags: Any, what: str = "tags") -> dict[str, str]:
    if tags is None:
        return {}
    if not isinstance(tags, Mapping):
        raise InvalidInput(f"{what} must be an object of names to text values, not {type(tags).__name__}")
    out: dict[str, str] = {}
    for key, value in tags.items():
        if not isinstance(key, str) or not key or len(key) > 250:
            raise InvalidInput(f"a tag name must be text of 1 to 250 characters, not {key!r:.60}")
        check_name_text(key, "tag name")
        if not isinstance(value, (str, int, float, bool)) or len(str(value)) > 5000:
            raise InvalidInput(f"tag {key!r} must have a text value of at most 5000 characters")
        out[key] = str(value)
    return out


class LocalRegistry:
    """The registry of the store a `flightlog.Client` reads.

    ``actor`` is who changes things (the local user by default; a server passes its token's
    name); ``admin`` whether they may move protected aliases (always locally; an admin token
    on a server); ``scope`` the one project a token is limited to, and ``visible`` which run ids
    it may name (``Ctx.visible``: a lineage keeps to them)."""

    def __init__(
        self,
        client: Any,
        store: SqlRegistryStore,
        *,
        actor: str | None = None,
        admin: bool = True,
        scope: str | None = None,
        visible: Callable[[list[str]], list[str]] | None = None,
    ) -> None:
        self.client = client
        self.store = store
        self.actor = actor if actor is not None else _local_user()
        self.admin = admin
        self.scope = scope
        self.visible = visible

    # ── which project ──────────────────────────────────────────────────────
    def project_of(self, name: str, project: str | None = None) -> str:
        """The project a model name lives in: the one given (a token's own when it is limited to
        one); else the only project, among those the caller may read, that has the model.

        Never a silent pick (issue 31, item 2): when several projects have the name, the answer
        is an error naming them, not the caller's or the server's default project — a writer of
        ``default`` who registers ``fraud@production`` there must not be served to everyone who
        asks for ``fraud@production``. NotFound names where to look."""
        check_name(name)
        if self.scope is not None:
            if project is not None and project != self.scope:
                raise Forbidden(f"this token is limited to project {self.scope!r}", details={"project": self.scope})
            project = self.scope
        if project is not None:
            if self.store.model(project, name) is None:
                raise NotFound(
                    f"project {project!r} has no registered model {name!r}" + self._known(project),
                    details={"model": name, "project": project},
                )
            return project
        projects = self.store.projects_of(name)
        if len(projects) == 1:
            return projects[0]
        if not projects:
            raise NotFound(f"no registered model {name!r}" + self._known(None), details={"model": name})
        raise AmbiguousModel(
            f"model {name!r} is registered in several projects ({', '.join(projects)}): a reference to it must "
            "name one (--project, ?project= in the API, project= in the SDK); flightlog never picks one for you",
            details={"model": name, "projects": projects},
        )

    def _known(self, project: str | None) -> str:
        names = sorted({m.name for m in self.store.models(project)})
        return f"; registered models: {', '.join(names[:20])}" if names else "; none is registered yet"

    # ── reads ──────────────────────────────────────────────────────────────
    def models(self, project: str | None = None) -> list[RegisteredModel]:
        return self.store.models(self.scope or project)

    def model(self, name: str, project: str | None = None) -> RegisteredModel:
        found = self.store.model(self.project_of(name, project), name)
        assert found is not None  # project_of found it
        return found

    def versions(self, name: str, project: str | None = None) -> list[ModelVersion]:
        return self.store.versions(self.project_of(name, project), name)

    def resolve(self, ref: str | ModelRef, project: str | None = None) -> ModelVersion:
        """The version a reference names; NotFound for an unknown model, alias or version."""
        r = parse_ref(ref) if isinstance(ref, str) else ref
        where = self.project_of(r.name, project)
        number = r.version
        if r.alias is not None:
            number = self.store.alias_version(where, r.name, r.alias)
            if number is None:
                aliases = sorted(self.store.model(where, r.name).aliases)  # type: ignore[union-attr]
                raise NotFound(
                    f"model {r.name!r} has no alias {r.alias!r}; its aliases: {', '.join(aliases) or 'none'}",
                    details={"model": r.name, "alias": r.alias, "aliases": aliases},
                )
        found = (
            self.store.versions(where, r.name, number)
            if number is not None
            else self.store.versions(where, r.name)[-1:]
        )
        if not found:
            latest = self.store.model(where, r.name).latest_version  # type: ignore[union-attr]
            raise NotFound(
                f"model {r.name!r} has no version {number} (its versions: 1 to {latest})",
                details={"model": r.name, "version": number, "latest_version": latest},
            )
        return found[0]

    def alias_history(self, name: str, alias: str | None = None, project: str | None = None) -> list[AliasChange]:
        return self.store.alias_history(
            self.project_of(name, project), name, None if alias is None else check_alias(alias)
        )

    def lineage(self, ref: str, project: str | None = None) -> dict[str, Any]:
        """Data snapshot → run → version in one answer: the version, its run, the run's inputs
        (each with the runs that produced it) and the input manifests it logged."""
        mv = self.resolve(ref, project)
        # a token of one project names no run of another (a run there may share an input's digest)
        lineage = self.client.lineage(mv.run_id, visible=self.visible)
        manifests = [
            {"name": e.get("name"), "data": e.get("data")} for e in self.client.evidence(mv.run_id, "manifest")
        ]
        run = self.client.run(mv.run_id)
        return {
            "version": mv.to_dict(),
            "run": {"id": run.id, "name": run.name, "status": run.status, "project": run.project},
            "inputs": lineage["inputs"],
            "manifests": manifests,
        }

    # ── changes ────────────────────────────────────────────────────────────
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
        """A new version of ``name`` from the artifact (or checkpoint) ``path`` that ``run`` logged."""
        check_name(name)
        alias = None if alias is None else check_alias(alias)
        tags = check_tags(tags)
        if description is not None and (not isinstance(description, str) or len(description) > 20000):
            raise InvalidInput("the description must be text of at most 20,000 characters")
        info = self.client.run(run)
        if self.scope is not None and info.project != self.scope:
            raise NotFound(f"no run {run!r}")  # a run outside the token's project is answered as absent
        artifact = self._logged(info.id, path)
        if alias is not None:
            model = self.store.model(info.project, name)
            self._may_move(model, alias)
        mv = ModelVersion(
            name,
            0,
            info.id,
            artifact.path,
            artifact.sha256,
            artifact.size,
            info.project,
            "checkpoint" if artifact.kind == "checkpoint" else "artifact",
            artifact.uri,
            description,
            tags,
            0.0,
            self.actor,
        )
        made, _ = self.store.register(mv, alias=alias, model_description=model_description, model_tags=None)
        self.deliver()
        return self.store.versions(made.project, made.name, made.version)[0]

    def deliver(self) -> int:
        """Send the events not delivered yet to the configured destinations (registry/events.py):
        now, within short bounds, or by this process's background pump (a server's)."""
        return deliver_soon(self.store)

    def _logged(self, run_id: str, path: str) -> Artifact:
        if not isinstance(path, str) or not path:
            raise InvalidInput("the artifact path must be the path the run logged it under (e.g. model/weights.npz)")
        arts = [a for a in self.client.artifacts(run_id) if a.role == "output"]
        matches = [a for a in arts if a.path == path.strip("/")]
        if not matches:
            logged = sorted({a.path for a in arts})
            shown = ", ".join(logged[:30]) + (f" and {len(logged) - 30} more" if len(logged) > 30 else "")
            raise NotFound(
                f"run {run_id[:12]} never logged {path!r} as an artifact or checkpoint; it logged: "
                f"{shown or 'nothing'}",
                details={"run_id": run_id, "path": path, "logged": logged[:200]},
            )
        return matches[-1]  # the last one logged under that path

    def _may_move(self, model: RegisteredModel | None, alias: str) -> None:
        if model is not None and alias in model.protected and not self.admin:
            raise Forbidden(
                f"alias {alias!r} of model {model.name!r} is protected: moving it needs an admin token",
                details={"model": model.name, "alias": alias, "needed": "admin"},
            )

    def set_alias(
        self, name: str, alias: str, version: int | str | None, project: str | None = None
    ) -> AliasChange | None:
        """Point ``name@alias`` at ``version`` (a number, or another reference of the same model:
        ``fraud@staging``); None removes the alias. Returns the change (None: nothing moved)."""
        alias = check_alias(alias)
        where = self.project_of(name, project)
        model = self.store.model(where, name)
        self._may_move(model, alias)
        number: int | None = None
        if version is not None:
            target = self._target(name, version)
            mv = self.resolve(target, where)
            number = mv.version
        elif self.store.alias_version(where, name, alias) is None:
            raise NotFound(f"model {name!r} has no alias {alias!r} to remove", details={"model": name, "alias": alias})
        change = self.store.set_alias(where, name, alias, number, self.actor)
        self.deliver()
        return change

    @staticmethod
    def _target(name: str, version: int | str) -> ModelRef:
        if isinstance(version, bool):
            raise InvalidInput(f"version {version!r} is not a version number")
        if isinstance(version, int) or (isinstance(version, str) and version.isdigit()):
            if int(version) < 1:
                raise InvalidInput(f"version {version!r} is not valid: versions are numbered from 1")
            return ModelRef(name, version=int(version))
        ref = parse_ref(str(version) if "@" in str(version) or "/" in str(version) else f"{name}@{version}")
        if ref.name != name:
            raise InvalidInput(
                f"an alias of model {name!r} must point at a version of {name!r}, not of {ref.name!r}",
                details={"model": name, "other": ref.name},
            )
        return ref

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
        where = self.project_of(name, project)
        if protected is not None:
            if not self.admin:
                raise Forbidden("choosing protected aliases needs an admin token", details={"needed": "admin"})
            protected = [check_alias(a) for a in protected]
        self.store.update_model(
            where,
            name,
            description=description,
            tags=check_tags(tags),
            remove_tags=list(remove_tags),
            protected=protected,
        )
        return self.model(name, where)

    def update_version(
        self,
        ref: str,
        *,
        project: str | None = None,
        description: str | None = None,
        tags: Mapping[str, str] | None = None,
        remove_tags: Sequence[str] = (),
    ) -> ModelVersion:
        mv = self.resolve(ref, project)
        self.store.update_version(
            mv.project,
            mv.name,
            mv.version,
            description=description,
            tags=check_tags(tags),
            remove_tags=list(remove_tags),
        )
        return self.store.versions(mv.project, mv.name, mv.version)[0]

    # ── deployments: the desired state ─────────────────────────────────────
    # ── removals and renames ───────────────────────────────────────────────
    def delete_version(self, name: str, version: int | str, project: str | None = None) -> list[AliasChange]:
        """Remove one version and the aliases on it. Refused while a deployment should serve it
        (deploy another version there first) or while a protected alias is on it and the
        caller is not an admin: removing that alias is moving it."""
        where = self.project_of(name, project)
        mv = self.resolve(self._target(name, version), where)
        model = self.store.model(where, name)
        for alias in mv.aliases:
            self._may_move(model, alias)
        self._not_deployed(where, name, {mv.version}, f"version {mv.version} of {name!r}")
        removed = self.store.delete_version(where, name, mv.version, self.actor)
        self.deliver()
        return removed

    def delete_model(self, name: str, project: str | None = None) -> list[int]:
        """Remove a model, its versions and aliases; the histories stay. Refused as a version's
        removal is; a model registered again under this name starts at version 1."""
        where = self.project_of(name, project)
        model = self.store.model(where, name)
        versions = self.store.versions(where, name)
        for mv in versions:
            for alias in mv.aliases:
                self._may_move(model, alias)
        self._not_deployed(where, name, {mv.version for mv in versions}, f"model {name!r}")
        numbers = self.store.delete_model(where, name, self.actor)
        self.deliver()
        return numbers

    def rename_model(self, name: str, new_name: str, project: str | None = None) -> RegisteredModel:
        """Give a model another name: its versions, aliases, deployments and histories follow."""
        where = self.project_of(name, project)
        check_name(new_name)
        if self.store.model(where, new_name) is not None:
            raise Conflict(
                f"project {where!r} already has a registered model {new_name!r}: pick another name",
                details={"model": new_name, "project": where},
            )
        self.store.rename_model(where, name, new_name, self.actor)
        self.deliver()
        found = self.store.model(where, new_name)
        assert found is not None  # noqa: S101 - renamed in the transaction above
        return found

    def _not_deployed(self, project: str, name: str, versions: set[int], what: str) -> None:
        serving = [d for d in self.store.deployments(project) if d.name == name and d.version in versions]
        if serving:
            places = ", ".join(f"{d.endpoint} ({d.env}) v{d.version}" for d in serving)
            first = serving[0]
            raise Conflict(
                f"{what} is what {places} should serve: deploy another version there first "
                f"(flightlog deploy {name}@ALIAS --endpoint {first.endpoint} --env {first.env}), then remove it",
                details={"model": name, "deployments": [f"{d.endpoint}/{d.env}" for d in serving]},
            )

    def deploy(
        self, ref: str, endpoint: str, env: str, project: str | None = None
    ) -> tuple[Deployment, DeploymentChange | None]:
        """Make ``ref``'s version what (endpoint, env) should serve; the alias is resolved now, so
        the deployment names a version (moving the alias later is a new deploy, by CI)."""
        check_place(endpoint, "endpoint")
        check_place(env, "environment")
        mv = self.resolve(ref, project)
        change = self.store.deploy(mv.project, endpoint, env, mv.name, mv.version, str(parse_ref(ref)), self.actor)
        self.deliver()
        return self.deployment(endpoint, env, mv.project), change

    def deployments(self, project: str | None = None) -> list[Deployment]:
        return self.store.deployments(self.scope or project)

    def deployment(self, endpoint: str, env: str, project: str | None = None) -> Deployment:
        check_place(endpoint, "endpoint")
        check_place(env, "environment")
        found = [d for d in self.deployments(project) if d.endpoint == endpoint and d.env == env]
        if not found:
            known = ", ".join(sorted({f"{d.endpoint} ({d.env})" for d in self.deployments(project)})) or "none"
            raise NotFound(
                f"no deployment of endpoint {endpoint!r} in environment {env!r}; deployments: {known}",
                details={"endpoint": endpoint, "env": env},
            )
        if len(found) > 1:
            raise InvalidInput(
                f"endpoint {endpoint!r} in {env!r} is deployed in several projects: name one",
                details={"projects": [d.project for d in found]},
            )
        return found[0]

    def deployment_report(self, endpoint: str, env: str, project: str | None = None) -> dict[str, Any]:
        """Desired state, its history, and the replicas that report serving it (observed state:
        runs tagged by the serving feature; a crashed one is shown as gone)."""
        d = self.deployment(endpoint, env, project)
        history = self.store.deployment_history(d.project, endpoint, env)
        quoted = "'" + endpoint.replace("'", "''") + "'"
        runs = self.client.runs(project=d.project, filter=f"tags.serving.endpoint = {quoted}")
        replicas = []
        now = time.time()
        for r in runs:
            if r.tags.get("serving.env") != env:  # exactly the environment's: as `serving replicas --env` counts
                continue
            version = r.tags.get("serving.version")
            beat = r.timeline.get("heartbeat") if r.timeline else None
            replicas.append(
                {
                    "run_id": r.id,
                    "replica": r.tags.get("serving.replica") or r.host,
                    "host": r.host,
                    "model": r.tags.get("serving.model"),
                    "version": int(version) if str(version).isdigit() else version,
                    "state": replica_state(r, now),  # serving | gone: the one definition (registry/replicas.py)
                    "status": "gone" if r.status == "crashed" else r.status,
                    "started": None if r.started is None else _iso(r.started),
                    "heartbeat": None if beat is None else _iso(float(beat)),
                    "current": str(version) == str(d.version) and r.tags.get("serving.model", d.name) == d.name,
                }
            )
        return {"desired": d.to_dict(), "history": [h.to_dict() for h in history], "replicas": replicas}

    def events(self, *, after: int = 0, limit: int = 1000) -> list[RegistryEvent]:
        return self.store.events(after=after, project=self.scope, limit=limit)


def _iso(t: float) -> str:
    return str(iso(t))


def _local_user() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in this environment (a container without one)
        return None
