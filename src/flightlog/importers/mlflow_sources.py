"""Reading an MLflow tracking store without MLflow installed.

One small reader per kind of store, picked by the tracking URI's scheme (the registry at the
bottom): ``sqlite:///path/mlflow.db`` (MLflow's database store, the default since MLflow 3)
and ``file:///path/mlruns`` or a plain directory (the older file store). Every reader yields
the same plain records, so the copy into flightlog is written once.
"""

from __future__ import annotations

import math
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import yaml

from flightlog.errors import InvalidInput, NotFound

__all__ = ["MlflowExperiment", "MlflowRun", "MlflowSource", "open_source", "artifact_dir"]

# the file store keeps a run's status as a number (mlflow.entities.RunStatus)
_STATUS_NUMBERS = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}


@dataclass
class MlflowExperiment:
    id: str
    name: str


@dataclass
class MlflowRun:
    id: str
    experiment: MlflowExperiment
    name: str | None
    status: str  # RUNNING, SCHEDULED, FINISHED, FAILED, KILLED
    start_time: int | None  # milliseconds, as MLflow keeps them
    end_time: int | None
    artifact_uri: str | None
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    # name → [(step, timestamp ms, value)] in the order MLflow recorded them
    metrics: dict[str, list[tuple[int, int, float]]] = field(default_factory=dict)
    # what of the run could not be read (a malformed metric line), said as it is skipped
    skipped: list[str] = field(default_factory=list)


class MlflowSource(ABC):
    """The experiments and (active, not deleted) runs of one MLflow tracking store.

    ``directory`` is the folder that holds the store (the database file's, or the one holding
    ``mlruns``: where MLflow keeps ``mlartifacts`` and ``mlruns`` side by side), the bounds of
    what an import copies as artifacts. ``skipped`` collects the runs that could not be read,
    each with the reason, while ``runs`` goes on with the next."""

    directory: Path
    skipped: list[str]

    @abstractmethod
    def experiments(self) -> list[MlflowExperiment]: ...

    @abstractmethod
    def runs(self, experiment: MlflowExperiment) -> Iterator[MlflowRun]: ...

    def close(self) -> None:
        return None


class SqliteSource(MlflowSource):
    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise NotFound(f"no MLflow database at {path}: check --tracking-uri (sqlite:///ABSOLUTE/PATH/mlflow.db)")
        self.directory = path.resolve().parent
        self.skipped = []
        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = {"experiments", "runs", "params", "tags", "metrics"} - tables
        if missing:
            raise InvalidInput(f"{path} is not an MLflow tracking database (no table {', '.join(sorted(missing))})")

    def experiments(self) -> list[MlflowExperiment]:
        rows = self._conn.execute(
            "SELECT experiment_id, name FROM experiments WHERE lifecycle_stage='active' ORDER BY experiment_id"
        )
        return [MlflowExperiment(str(r[0]), r[1]) for r in rows]

    def runs(self, experiment: MlflowExperiment) -> Iterator[MlflowRun]:
        rows = self._conn.execute(
            "SELECT run_uuid, name, status, start_time, end_time, artifact_uri FROM runs "
            "WHERE experiment_id=? AND lifecycle_stage='active' ORDER BY start_time, run_uuid",
            (int(experiment.id),),
        ).fetchall()
        for run_id, name, status, start, end, artifact_uri in rows:
            run = MlflowRun(run_id, experiment, name, status, start, end, artifact_uri)
            run.params = dict(
                self._conn.execute("SELECT key, value FROM params WHERE run_uuid=?", (run_id,)).fetchall()
            )
            run.tags = dict(self._conn.execute("SELECT key, value FROM tags WHERE run_uuid=?", (run_id,)).fetchall())
            points = self._conn.execute(
                "SELECT key, step, timestamp, value, is_nan FROM metrics WHERE run_uuid=? ORDER BY key, step, timestamp",
                (run_id,),
            )
            for key, step, timestamp, value, is_nan in points:
                try:
                    point = (int(step), int(timestamp), math.nan if is_nan else float(value))
                except (TypeError, ValueError):
                    run.skipped.append(
                        f"run {run_id}: metric {key!r} at step {step!r} has the value {value!r}, "
                        "not a number; that point was skipped"
                    )
                    continue
                run.metrics.setdefault(key, []).append(point)
            yield run

    def close(self) -> None:
        self._conn.close()


class FileSource(MlflowSource):
    def __init__(self, root: Path) -> None:
        if not root.is_dir():
            raise NotFound(f"no MLflow file store at {root}: check --tracking-uri (file:///ABSOLUTE/PATH/mlruns)")
        self._root = root
        self.directory = root.resolve().parent
        self.skipped = []

    def experiments(self) -> list[MlflowExperiment]:
        out = []
        for meta_path in sorted(self._root.glob("*/meta.yaml")):
            meta = _yaml(meta_path)
            if meta.get("lifecycle_stage", "active") == "active":
                out.append(
                    MlflowExperiment(str(meta.get("experiment_id", meta_path.parent.name)), str(meta.get("name")))
                )
        return sorted(out, key=lambda e: (len(e.id), e.id))

    def runs(self, experiment: MlflowExperiment) -> Iterator[MlflowRun]:
        metas = []
        for path in sorted((self._root / experiment.id).glob("*/meta.yaml")):
            try:
                meta = _yaml(path)
            except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
                self.skipped.append(f"run {path.parent.name}: skipped, its meta.yaml cannot be read ({_reason(exc)})")
                continue
            if meta.get("lifecycle_stage", "active") == "active":
                metas.append((meta, path.parent))
        for meta, run_dir in sorted(metas, key=lambda md: (_number(md[0].get("start_time")), md[1].name)):
            try:
                run = self._run(experiment, meta, run_dir)
            except (OSError, UnicodeDecodeError, ValueError, TypeError) as exc:
                self.skipped.append(f"run {run_dir.name}: skipped, it cannot be read ({_reason(exc)})")
                continue
            yield run

    def _run(self, experiment: MlflowExperiment, meta: dict[str, Any], run_dir: Path) -> MlflowRun:
        status = meta.get("status")
        run = MlflowRun(
            str(meta.get("run_id") or meta.get("run_uuid") or run_dir.name),
            experiment,
            meta.get("run_name"),
            _STATUS_NUMBERS.get(status, str(status)) if isinstance(status, int) else str(status),
            _optional_int(meta.get("start_time")),
            _optional_int(meta.get("end_time")),
            meta.get("artifact_uri"),
        )
        run.params = _key_files(run_dir / "params")
        run.tags = _key_files(run_dir / "tags")
        for key, text in _key_files(run_dir / "metrics").items():
            points = []
            for lineno, line in enumerate(text.splitlines(), start=1):
                parts = line.split()
                if not parts:
                    continue
                try:
                    if len(parts) not in (2, 3):
                        raise ValueError
                    points.append((int(parts[2]) if len(parts) > 2 else 0, int(parts[0]), float(parts[1])))
                except ValueError:
                    run.skipped.append(
                        f"run {run.id}: metric {key!r} line {lineno} ({line[:80]!r}) is not "
                        "'TIMESTAMP VALUE [STEP]'; that line was skipped"
                    )
            run.metrics[key] = sorted(points, key=lambda p: (p[0], p[1]))
        return run


def _reason(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _optional_int(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"a time of {value!r}, not milliseconds")
    return value


def _yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text()) or {}
    return data if isinstance(data, dict) else {}


def _key_files(folder: Path) -> dict[str, str]:
    """The file store keeps one file per key; a key with '/' is a nested path."""
    if not folder.is_dir():
        return {}
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def artifact_dir(run: MlflowRun) -> Path | None:
    """Where a run's artifacts are on this machine, for a local artifact location."""
    uri = run.artifact_uri
    if not uri:
        return None
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return Path(unquote(parsed.path if parsed.scheme else uri))
    return None  # s3://, mlflow-artifacts:, ... : not readable without MLflow's clients


def _sqlite(uri: str) -> MlflowSource:
    # SQLAlchemy's form, as MLflow takes it: sqlite:///relative.db, sqlite:////absolute/path.db
    return SqliteSource(Path(unquote(uri.split("://", 1)[1][1:])))


def _file(uri: str) -> MlflowSource:
    parsed = urlparse(uri)
    return FileSource(Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(uri))


_SOURCES: dict[str, Callable[[str], MlflowSource]] = {"sqlite": _sqlite, "file": _file, "": _file}


def open_source(uri: str) -> MlflowSource:
    """The reader for a tracking URI: ``sqlite:///mlflow.db``, ``file:///mlruns`` or a directory."""
    scheme = urlparse(uri).scheme if "://" in uri else ""
    builder = _SOURCES.get(scheme)
    if builder is None:
        raise InvalidInput(
            f"tracking URI {uri!r}: flightlog reads MLflow stores of scheme sqlite:// or file:// (or a directory); "
            f"for a tracking server, point --tracking-uri at the server's own backend store"
        )
    return builder(uri)
