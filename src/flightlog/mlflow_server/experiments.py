"""Experiments ↔ projects: MLflow's experiment id for each project, kept in ``mlflow_experiments``.

An experiment's name is its project's name. A project that has runs but no row yet (runs
logged by flightlog's SDK, or imported) gets its id the first time MLflow asks for it; id
``0``, MLflow's default experiment, is the project ``default``, named ``Default`` as MLflow
names it (``get_experiment_by_name("Default")``, ``set_experiment("Default")``), and listed by
every search whether or not it has runs yet. Renaming is refused: a
flightlog project has no identity apart from its name, and its runs keep theirs.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from flightlog.mlflow_server.errors import MlflowError, already_exists, invalid, not_found
from flightlog.mlflow_server.migrations import MIGRATIONS
from flightlog.names import check_name_text
from flightlog.store.base import feature_store
from flightlog.store.features import ensure_tables

__all__ = [
    "Experiment",
    "Experiments",
    "experiments_of",
    "project_of_name",
    "DEFAULT_ID",
    "DEFAULT_NAME",
    "DEFAULT_PROJECT",
]

DEFAULT_ID = "0"
DEFAULT_PROJECT = "default"
DEFAULT_NAME = "Default"  # what MLflow calls experiment 0


def project_of_name(name: str) -> str:
    """The project an MLflow experiment name means: ``Default`` is the project ``default``."""
    return DEFAULT_PROJECT if name == DEFAULT_NAME else name


_COLS = "id, project, lifecycle, artifact_location, tags, created, updated"
MAX_NAME = 500  # MLflow's MAX_EXPERIMENT_NAME_LENGTH


@dataclass
class Experiment:
    id: str
    name: str
    lifecycle: str = "active"
    artifact_location: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    created: float = 0.0
    updated: float = 0.0

    @property
    def mlflow_name(self) -> str:
        """The name MLflow clients see: the project's, ``Default`` for experiment 0."""
        return DEFAULT_NAME if self.id == DEFAULT_ID else self.name

    def to_mlflow(self) -> dict[str, Any]:
        return {
            "experiment_id": self.id,
            "name": self.mlflow_name,
            "artifact_location": self.artifact_location or f"mlflow-artifacts:/{self.id}",
            "lifecycle_stage": self.lifecycle,
            "creation_time": int(self.created * 1000),
            "last_update_time": int(self.updated * 1000),
            "tags": [{"key": k, "value": v} for k, v in sorted(self.tags.items())],
        }


def _row(r: Any) -> Experiment:
    return Experiment(str(r[0]), r[1], r[2], r[3], json.loads(r[4] or "{}"), float(r[5]), float(r[6]))


def check_name(name: str) -> str:
    if not name.strip():
        raise invalid("Invalid experiment name: it must not be empty.")
    if len(name) > MAX_NAME:
        raise invalid(f"Experiment name is {len(name)} characters long; at most {MAX_NAME} are accepted.")
    check_name_text(name, "experiment name")  # control characters, DEL, bidi controls (flightlog.names)
    return name


class Experiments:
    """The table, on the run store's own database (SQLite or PostgreSQL; both take ``?``)."""

    def __init__(self, db: Any, unique: tuple[type[Exception], ...]) -> None:
        self.db = db
        self._unique = unique

    def _one(self, where: str, arg: Any) -> Experiment | None:
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {_COLS} FROM mlflow_experiments WHERE {where}", (arg,)).fetchone()
        return _row(row) if row is not None else None

    def by_name(self, name: str, projects: set[str] | None = None) -> Experiment | None:
        """The experiment of project ``name`` (``Default``: experiment 0); made for a project that
        has runs but no id yet."""
        name = project_of_name(name)
        found = self._one("project = ?", name)
        if found is None and (name == DEFAULT_PROJECT or (projects is not None and name in projects)):
            found = self._insert(name, None, {}, quiet=True)
        return found

    def by_id(self, experiment_id: str) -> Experiment:
        if experiment_id == DEFAULT_ID:
            found = self.by_name(DEFAULT_PROJECT)
            if found is not None:
                return found
        if not experiment_id.isdigit() or len(experiment_id) > 18:
            raise not_found(f"No Experiment with id={experiment_id} exists")
        found = self._one("id = ?", int(experiment_id))
        if found is None:
            raise not_found(f"No Experiment with id={experiment_id} exists")
        return found

    def all(self, projects: set[str]) -> list[Experiment]:
        """Every experiment, a row made for each project that has none yet (and for ``Default``)."""
        with self.db.read() as conn:
            rows = [_row(r) for r in conn.execute(f"SELECT {_COLS} FROM mlflow_experiments ORDER BY id")]
        have = {e.name for e in rows}
        for name in sorted((projects | {DEFAULT_PROJECT}) - have):
            made = self._insert(name, None, {}, quiet=True)
            if made is not None:
                rows.append(made)
        return rows

    def create(self, name: str, artifact_location: str | None, tags: dict[str, str]) -> Experiment:
        made = self._insert(project_of_name(check_name(name)), artifact_location, tags, quiet=False)
        assert made is not None  # noqa: S101 - quiet=False raises instead of returning None
        return made

    def _insert(self, name: str, location: str | None, tags: dict[str, str], *, quiet: bool) -> Experiment | None:
        now = time.time()
        try:
            with self.db.write() as conn:
                if name == DEFAULT_PROJECT:
                    # MLflow's Default is there before any experiment: made late, it is dated as the earliest
                    first = conn.execute("SELECT MIN(created) FROM mlflow_experiments").fetchone()[0]
                    now = min(now, float(first)) if first is not None else now
                    conn.execute(
                        "INSERT INTO mlflow_experiments (id, project, artifact_location, tags, created, updated) "
                        "VALUES (0, ?, ?, ?, ?, ?)",
                        (name, location, json.dumps(tags), now, now),
                    )
                else:
                    conn.execute(
                        "INSERT INTO mlflow_experiments (project, artifact_location, tags, created, updated) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (name, location, json.dumps(tags), now, now),
                    )
        except self._unique:
            if quiet:
                return self._one("project = ?", name)
            shown = DEFAULT_NAME if name == DEFAULT_PROJECT else name
            raise already_exists(f"Experiment '{shown}' already exists.") from None
        return self._one("project = ?", name)

    def set_lifecycle(self, exp: Experiment, lifecycle: str) -> None:
        with self.db.write() as conn:
            conn.execute(
                "UPDATE mlflow_experiments SET lifecycle = ?, updated = ? WHERE id = ?",
                (lifecycle, time.time(), int(exp.id)),
            )

    def set_tag(self, exp: Experiment, key: str, value: str | None) -> None:
        tags = dict(exp.tags)
        if value is None:
            tags.pop(key, None)
        else:
            tags[key] = value
        with self.db.write() as conn:
            conn.execute(
                "UPDATE mlflow_experiments SET tags = ?, updated = ? WHERE id = ?",
                (json.dumps(tags, sort_keys=True), time.time(), int(exp.id)),
            )


def _sql(store: Any) -> Experiments:
    """The experiments table in a SQL run store's own database (either dialect)."""
    ensure_tables(store.db, MIGRATIONS)
    return Experiments(store.db, store.dialect.unique_violation)


#: the experiments table of each run store's database (``Store.backend``)
_BUILDERS = {"sqlite": _sql, "postgresql": _sql}


def experiments_of(store: Any) -> Experiments:
    """The experiments table in ``store``'s database; a store without one cannot serve MLflow."""
    found = feature_store(store, _BUILDERS)
    if found is None:
        raise MlflowError(
            "NOT_IMPLEMENTED", "this server's store keeps no MLflow experiments (a SQL run store is needed)"
        )
    return found
