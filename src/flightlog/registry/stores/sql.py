"""The registry in a SQL run store (its tables: ``registry/migrations.py``), on the store's own
database: one implementation for SQLite and PostgreSQL (both connections take ``?``).

Every change is one transaction that also writes its history row and its event (an outbox
row with a unique dedup key), so a change is recorded whole or not at all, and an event exists
exactly when its change does. Version numbers are taken as ``MAX + 1`` inside the write; two
writers racing on PostgreSQL meet the primary key, and the loser tries again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Any, Protocol

from flightlog.errors import InvalidInput
from flightlog.registry.refs import SCHEME, parse_ref
from flightlog.registry.types import (
    AliasChange,
    Deployment,
    DeploymentChange,
    ModelVersion,
    RegisteredModel,
    RegistryEvent,
)

__all__ = ["SqlRegistryStore"]

_V = "project, name, version, run_id, source, artifact_path, digest, size, uri, description, tags, created, created_by"
_RETRIES = 5
#: the tables whose rows name a model (a rename moves them all)
_NAMED = (
    "registry_models",
    "registry_versions",
    "registry_aliases",
    "registry_alias_history",
    "registry_deployments",
    "registry_deployment_history",
)


class _Database(Protocol):
    def write(self) -> AbstractContextManager[Any]: ...
    def read(self) -> AbstractContextManager[Any]: ...


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


class SqlRegistryStore:
    def __init__(self, db: _Database, unique_violation: tuple[type[Exception], ...]) -> None:
        self.db = db
        self._unique = unique_violation

    # ── reads ──────────────────────────────────────────────────────────────
    def models(self, project: str | None = None) -> list[RegisteredModel]:
        where, args = ("WHERE project=?", [project]) if project is not None else ("", [])
        with self.db.read() as conn:
            rows = conn.execute(
                f"SELECT project, name, description, tags, protected, created FROM registry_models "
                f"{where} ORDER BY project, name",
                args,
            ).fetchall()
            latest = dict(
                ((r[0], r[1]), r[2])
                for r in conn.execute(
                    f"SELECT project, name, MAX(version) FROM registry_versions {where} GROUP BY project, name", args
                )
            )
            aliases: dict[tuple[str, str], dict[str, int]] = {}
            for r in conn.execute(
                f"SELECT project, name, alias, version FROM registry_aliases {where} ORDER BY alias", args
            ):
                aliases.setdefault((r[0], r[1]), {})[r[2]] = int(r[3])
        return [
            RegisteredModel(
                r[0],
                r[1],
                r[2],
                json.loads(r[3]),
                tuple(json.loads(r[4])),
                r[5],
                int(latest.get((r[0], r[1])) or 0),
                aliases.get((r[0], r[1]), {}),
            )
            for r in rows
        ]

    def model(self, project: str, name: str) -> RegisteredModel | None:
        return next((m for m in self.models(project) if m.name == name), None)

    def projects_of(self, name: str) -> list[str]:
        with self.db.read() as conn:
            return [
                r[0] for r in conn.execute("SELECT project FROM registry_models WHERE name=? ORDER BY project", (name,))
            ]

    def versions(self, project: str, name: str, version: int | None = None) -> list[ModelVersion]:
        where = "WHERE v.project=? AND v.name=?"
        args: list[Any] = [project, name]
        if version is not None:
            where += " AND v.version=?"
            args.append(version)
        with self.db.read() as conn:
            rows = conn.execute(
                f"SELECT {', '.join('v.' + c.strip() for c in _V.split(','))} FROM registry_versions v "
                f"{where} ORDER BY v.version",
                args,
            ).fetchall()
            aliases: dict[int, list[str]] = {}
            for r in conn.execute(
                "SELECT version, alias FROM registry_aliases WHERE project=? AND name=? ORDER BY alias", (project, name)
            ):
                aliases.setdefault(int(r[0]), []).append(r[1])
        return [_version(r, tuple(aliases.get(int(r[2]), ()))) for r in rows]

    def alias_version(self, project: str, name: str, alias: str) -> int | None:
        with self.db.read() as conn:
            row = conn.execute(
                "SELECT version FROM registry_aliases WHERE project=? AND name=? AND alias=?", (project, name, alias)
            ).fetchone()
        return None if row is None else int(row[0])

    def alias_history(self, project: str, name: str, alias: str | None = None) -> list[AliasChange]:
        where, args = "WHERE project=? AND name=?", [project, name]
        if alias is not None:
            where += " AND alias=?"
            args.append(alias)
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT project, name, alias, from_version, to_version, time, actor "
                f"FROM registry_alias_history {where} ORDER BY id",
                args,
            ).fetchall()
        return [AliasChange(*r) for r in rows]

    def deployments(self, project: str | None = None) -> list[Deployment]:
        where, args = ("WHERE project=?", [project]) if project is not None else ("", [])
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT project, endpoint, env, name, version, ref, updated, updated_by "
                f"FROM registry_deployments {where} ORDER BY project, endpoint, env",
                args,
            ).fetchall()
        return [Deployment(*r) for r in rows]

    def deployment_history(self, project: str, endpoint: str, env: str) -> list[DeploymentChange]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT project, endpoint, env, name, from_version, to_version, ref, time, actor "
                "FROM registry_deployment_history WHERE project=? AND endpoint=? AND env=? ORDER BY id",
                (project, endpoint, env),
            ).fetchall()
        return [DeploymentChange(*r) for r in rows]

    def events(
        self, *, after: int = 0, project: str | None = None, limit: int = 1000, undelivered: bool = False
    ) -> list[RegistryEvent]:
        conds: list[str] = ["id > ?"]
        args: list[Any] = [after]
        if project is not None:
            conds.append("project=?")
            args.append(project)
        if undelivered:
            conds.append("delivered IS NULL")
        with self.db.read() as conn:
            rows = conn.execute(
                f"SELECT id, project, kind, key, payload, time, delivered FROM registry_events "
                f"WHERE {' AND '.join(conds)} ORDER BY id LIMIT ?",
                [*args, limit],
            ).fetchall()
        return [RegistryEvent(int(r[0]), r[1], r[2], r[3], json.loads(r[4]), r[5], r[6]) for r in rows]

    # ── writes: each one transaction, with its history and its event ───────
    def register(
        self, mv: ModelVersion, *, alias: str | None, model_description: str | None, model_tags: dict[str, str] | None
    ) -> tuple[ModelVersion, AliasChange | None]:
        """Add ``mv`` as the model's next version (the model is created on its first version)."""
        for attempt in range(_RETRIES):
            try:
                with self.db.write() as conn:
                    now = mv.created or time.time()
                    exists = conn.execute(
                        "SELECT 1 FROM registry_models WHERE project=? AND name=?", (mv.project, mv.name)
                    ).fetchone()
                    if exists is None:
                        conn.execute(
                            "INSERT INTO registry_models(project, name, description, tags, protected, created) "
                            "VALUES(?, ?, ?, ?, ?, ?)",
                            (mv.project, mv.name, model_description, _dumps(model_tags or {}), "[]", now),
                        )
                    number = 1 + max(
                        int(
                            conn.execute(
                                "SELECT COALESCE(MAX(version), 0) FROM registry_versions WHERE project=? AND name=?",
                                (mv.project, mv.name),
                            ).fetchone()[0]
                        ),
                        int(
                            conn.execute(
                                "SELECT last_version FROM registry_models WHERE project=? AND name=?",
                                (mv.project, mv.name),
                            ).fetchone()[0]
                        ),
                    )
                    conn.execute(
                        "UPDATE registry_models SET last_version=? WHERE project=? AND name=?",
                        (number, mv.project, mv.name),
                    )
                    made = ModelVersion(
                        mv.name,
                        number,
                        mv.run_id,
                        mv.artifact_path,
                        mv.digest,
                        mv.size,
                        mv.project,
                        mv.source,
                        mv.uri,
                        mv.description,
                        dict(mv.tags),
                        now,
                        mv.created_by,
                    )
                    conn.execute(
                        f"INSERT INTO registry_versions({_V}) VALUES({','.join('?' * 13)})",
                        (
                            made.project,
                            made.name,
                            made.version,
                            made.run_id,
                            made.source,
                            made.artifact_path,
                            made.digest,
                            made.size,
                            made.uri,
                            made.description,
                            _dumps(made.tags),
                            now,
                            made.created_by,
                        ),
                    )
                    _event(
                        conn,
                        made.project,
                        "version_created",
                        f"version:{made.project}/{made.name}/{made.version}:{now:.6f}",  # a model made again reuses 1
                        {
                            "model": made.name,
                            "version": made.version,
                            "run_id": made.run_id,
                            "artifact_path": made.artifact_path,
                            "digest": made.digest,
                            "actor": made.created_by,
                        },
                        now,
                    )
                    change = None
                    if alias is not None:
                        change = self._move(conn, made.project, made.name, alias, made.version, made.created_by, now)
                return made, change
            except self._unique:
                if attempt == _RETRIES - 1:
                    raise
        raise AssertionError("unreachable")

    def set_alias(
        self, project: str, name: str, alias: str, version: int | None, actor: str | None
    ) -> AliasChange | None:
        """Point ``alias`` at ``version`` (None: remove it); None when it already pointed there."""
        with self.db.write() as conn:
            return self._move(conn, project, name, alias, version, actor, time.time())

    def _move(
        self, conn: Any, project: str, name: str, alias: str, version: int | None, actor: str | None, now: float
    ) -> AliasChange | None:
        row = conn.execute(
            "SELECT version FROM registry_aliases WHERE project=? AND name=? AND alias=?", (project, name, alias)
        ).fetchone()
        before = None if row is None else int(row[0])
        if before == version:
            return None
        if version is None:
            conn.execute("DELETE FROM registry_aliases WHERE project=? AND name=? AND alias=?", (project, name, alias))
        elif before is None:
            conn.execute(
                "INSERT INTO registry_aliases(project, name, alias, version, updated, updated_by) "
                "VALUES(?, ?, ?, ?, ?, ?)",
                (project, name, alias, version, now, actor),
            )
        else:
            conn.execute(
                "UPDATE registry_aliases SET version=?, updated=?, updated_by=? WHERE project=? AND name=? AND alias=?",
                (version, now, actor, project, name, alias),
            )
        cur = conn.execute(
            "INSERT INTO registry_alias_history(project, name, alias, from_version, to_version, time, actor) "
            "VALUES(?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (project, name, alias, before, version, now, actor),
        )
        hid = int(cur.fetchone()[0])
        kind = "alias_set" if before is None else "alias_removed" if version is None else "alias_moved"
        _event(
            conn,
            project,
            kind,
            f"alias:{project}/{name}@{alias}:{hid}",
            {
                "model": name,
                "alias": alias,
                "ref": f"models:/{name}@{alias}",
                "from_version": before,
                "to_version": version,
                "actor": actor,
            },
            now,
        )
        return AliasChange(project, name, alias, before, version, now, actor)

    def create_model(self, project: str, name: str, description: str | None, tags: dict[str, str]) -> None:
        """A model with no version yet (MLflow's clients create one before registering into it)."""
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO registry_models(project, name, description, tags, protected, created) "
                "VALUES(?, ?, ?, ?, ?, ?)",
                (project, name, description, _dumps(tags), "[]", time.time()),
            )

    def move_model(self, from_project: str, to_project: str, name: str) -> None:
        """A model with no version yet joins the project of its first version's run."""
        with self.db.write() as conn:
            conn.execute(
                "UPDATE registry_models SET project=? WHERE project=? AND name=?", (to_project, from_project, name)
            )

    def delete_version(self, project: str, name: str, version: int, actor: str | None) -> list[AliasChange]:
        """Remove one version, and the aliases that pointed at it (each removal in the alias
        history, with its event); its number is never given again. The removals, in order."""
        with self.db.write() as conn:
            now = time.time()
            removed = self._unalias(conn, project, name, version, actor, now)
            conn.execute(
                "DELETE FROM registry_versions WHERE project=? AND name=? AND version=?", (project, name, version)
            )
            _event(
                conn,
                project,
                "version_deleted",
                f"version_deleted:{project}/{name}/{version}:{now:.6f}",
                {"model": name, "version": version, "actor": actor},
                now,
            )
        return removed

    def delete_model(self, project: str, name: str, actor: str | None) -> list[int]:
        """Remove a model with its versions and aliases (the alias and deployment histories stay,
        as evidence of what served). The numbers of the versions it had."""
        with self.db.write() as conn:
            now = time.time()
            numbers = [
                int(r[0])
                for r in conn.execute(
                    "SELECT version FROM registry_versions WHERE project=? AND name=? ORDER BY version", (project, name)
                )
            ]
            self._unalias(conn, project, name, None, actor, now)
            conn.execute("DELETE FROM registry_versions WHERE project=? AND name=?", (project, name))
            conn.execute("DELETE FROM registry_models WHERE project=? AND name=?", (project, name))
            _event(
                conn,
                project,
                "model_deleted",
                f"model_deleted:{project}/{name}:{now:.6f}",
                {"model": name, "versions": numbers, "actor": actor},
                now,
            )
        return numbers

    def rename_model(self, project: str, name: str, new: str, actor: str | None) -> None:
        """Give a model another name, with its versions, aliases and both histories (so
        ``deployments show`` keeps telling the whole story under the new name)."""
        with self.db.write() as conn:
            now = time.time()
            for table in _NAMED:
                conn.execute(f"UPDATE {table} SET name=? WHERE project=? AND name=?", (new, project, name))  # noqa: S608 - fixed names
            for table, key in (("registry_deployments", "endpoint, env"), ("registry_deployment_history", "id")):
                refs = conn.execute(
                    f"SELECT {key}, ref FROM {table} WHERE project=? AND name=?",  # noqa: S608 - fixed names
                    (project, new),
                ).fetchall()
                for *where, ref in refs:  # what was deployed reads under the new name (models:/new@production)
                    cond = " AND ".join(f"{k.strip()}=?" for k in key.split(","))
                    conn.execute(
                        f"UPDATE {table} SET ref=? WHERE project=? AND {cond}",  # noqa: S608 - fixed names
                        (_renamed_ref(ref, name, new), project, *where),
                    )
            _event(
                conn,
                project,
                "model_renamed",
                f"model_renamed:{project}/{name}:{now:.6f}",
                {"model": new, "from_name": name, "actor": actor},
                now,
            )

    def _unalias(
        self, conn: Any, project: str, name: str, version: int | None, actor: str | None, now: float
    ) -> list[AliasChange]:
        """Remove the aliases of ``name`` that point at ``version`` (every alias: None)."""
        rows = conn.execute(
            "SELECT alias, version FROM registry_aliases WHERE project=? AND name=? ORDER BY alias", (project, name)
        ).fetchall()
        changes = []
        for alias, points_at in rows:
            if version is None or int(points_at) == version:
                change = self._move(conn, project, name, alias, None, actor, now)
                if change is not None:
                    changes.append(change)
        return changes

    def update_model(
        self,
        project: str,
        name: str,
        *,
        description: str | None = None,
        tags: dict[str, str] | None = None,
        remove_tags: Sequence[str] = (),
        protected: Sequence[str] | None = None,
    ) -> None:
        with self.db.write() as conn:
            row = conn.execute(
                "SELECT description, tags, protected FROM registry_models WHERE project=? AND name=?", (project, name)
            ).fetchone()
            merged = {**json.loads(row[1]), **(tags or {})}
            for key in remove_tags:
                merged.pop(key, None)
            conn.execute(
                "UPDATE registry_models SET description=?, tags=?, protected=? WHERE project=? AND name=?",
                (
                    row[0] if description is None else description,
                    _dumps(merged),
                    row[2] if protected is None else _dumps(sorted(set(protected))),
                    project,
                    name,
                ),
            )

    def update_version(
        self,
        project: str,
        name: str,
        version: int,
        *,
        description: str | None = None,
        tags: dict[str, str] | None = None,
        remove_tags: Sequence[str] = (),
    ) -> None:
        with self.db.write() as conn:
            row = conn.execute(
                "SELECT description, tags FROM registry_versions WHERE project=? AND name=? AND version=?",
                (project, name, version),
            ).fetchone()
            merged = {**json.loads(row[1]), **(tags or {})}
            for key in remove_tags:
                merged.pop(key, None)
            conn.execute(
                "UPDATE registry_versions SET description=?, tags=? WHERE project=? AND name=? AND version=?",
                (row[0] if description is None else description, _dumps(merged), project, name, version),
            )

    def deploy(
        self, project: str, endpoint: str, env: str, name: str, version: int, ref: str, actor: str | None
    ) -> DeploymentChange | None:
        """Set the desired state of (endpoint, env); None when it already named that version."""
        with self.db.write() as conn:
            now = time.time()
            row = conn.execute(
                "SELECT name, version FROM registry_deployments WHERE project=? AND endpoint=? AND env=?",
                (project, endpoint, env),
            ).fetchone()
            before = None if row is None or row[0] != name else int(row[1])
            if row is not None and row[0] == name and int(row[1]) == version:
                return None
            if row is None:
                conn.execute(
                    "INSERT INTO registry_deployments(project, endpoint, env, name, version, ref, updated, "
                    "updated_by) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
                    (project, endpoint, env, name, version, ref, now, actor),
                )
            else:
                conn.execute(
                    "UPDATE registry_deployments SET name=?, version=?, ref=?, updated=?, updated_by=? "
                    "WHERE project=? AND endpoint=? AND env=?",
                    (name, version, ref, now, actor, project, endpoint, env),
                )
            cur = conn.execute(
                "INSERT INTO registry_deployment_history(project, endpoint, env, name, from_version, "
                "to_version, ref, time, actor) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (project, endpoint, env, name, before, version, ref, now, actor),
            )
            hid = int(cur.fetchone()[0])
            _event(
                conn,
                project,
                "deployment_changed",
                f"deployment:{project}/{endpoint}/{env}:{hid}",
                {
                    "endpoint": endpoint,
                    "env": env,
                    "model": name,
                    "from_version": before,
                    "to_version": version,
                    "ref": ref,
                    "actor": actor,
                },
                now,
            )
            return DeploymentChange(project, endpoint, env, name, before, version, ref, now, actor)

    def claim_event(self, event_id: int, now: float, *, stale: float = 300.0) -> bool:
        """Take an event to deliver it (compare-and-set): exactly one dispatcher wins; a claim
        older than ``stale`` seconds without delivery (its dispatcher died) may be taken again."""
        with self.db.write() as conn:
            cur = conn.execute(
                "UPDATE registry_events SET claimed=? WHERE id=? AND delivered IS NULL AND "
                "(claimed IS NULL OR claimed < ?)",
                (now, event_id, now - stale),
            )
            return bool(cur.rowcount == 1)

    def mark_delivered(self, event_id: int, now: float) -> None:
        with self.db.write() as conn:
            conn.execute("UPDATE registry_events SET delivered=? WHERE id=?", (now, event_id))

    def sent_to(self, event_id: int) -> set[str]:
        """The destinations (by key) that already got the event."""
        with self.db.read() as conn:
            rows = conn.execute("SELECT target FROM registry_event_sends WHERE event_id=?", (event_id,)).fetchall()
        return {str(r[0]) for r in rows}

    def mark_sent(self, event_id: int, target: str, now: float) -> None:
        """One destination got the event (the claim's holder writes this; a second write is a no-op)."""
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO registry_event_sends(event_id, target, time) VALUES(?, ?, ?) "
                "ON CONFLICT (event_id, target) DO NOTHING",
                (event_id, target, now),
            )

    def release_event(self, event_id: int) -> None:
        """A delivery that failed: let the next pass try again."""
        with self.db.write() as conn:
            conn.execute("UPDATE registry_events SET claimed=NULL WHERE id=? AND delivered IS NULL", (event_id,))


def _version(r: Sequence[Any], aliases: tuple[str, ...]) -> ModelVersion:
    return ModelVersion(
        name=r[1],
        version=int(r[2]),
        run_id=r[3],
        source=r[4],
        artifact_path=r[5],
        digest=r[6],
        size=None if r[7] is None else int(r[7]),
        uri=r[8],
        project=r[0],
        description=r[9],
        tags=json.loads(r[10]),
        created=r[11],
        created_by=r[12],
        aliases=aliases,
    )


def _renamed_ref(ref: str, old: str, new: str) -> str:
    """A deployed reference with the model's new name; one that does not parse stays as it was."""
    try:
        parsed = parse_ref(ref)
    except InvalidInput:
        return ref
    if parsed.name != old:
        return ref
    text = str(replace(parsed, name=new))
    return text if ref.startswith(SCHEME) or not text.startswith(SCHEME) else text.removeprefix(SCHEME)


def _event(conn: Any, project: str, kind: str, key: str, payload: dict[str, Any], now: float) -> None:
    body = {"kind": kind, "project": project, "key": key, "time": now, **payload}
    conn.execute(
        "INSERT INTO registry_events(project, kind, key, payload, time) VALUES(?, ?, ?, ?, ?)",
        (project, kind, key, _dumps(body), now),
    )
