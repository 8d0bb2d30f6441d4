"""Copying MLflow runs into flightlog: params, tags, metric histories, artifacts, status and
times, through the same idempotent ingest every writer uses.

Each MLflow run keeps its id, and its records are written by one writer whose id is derived
from it (``mlflow-<run id>``) with sequence numbers from 1, so importing the same store twice
changes nothing: the second time every run is counted as already imported.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flightlog.config import home_from_env
from flightlog.errors import FlightlogError, InvalidInput
from flightlog.ids import RUN_ID_RE
from flightlog.importers.mlflow_sources import MlflowRun, MlflowSource, artifact_dir
from flightlog.redaction import redact_user_strings
from flightlog.schema import envelope, record
from flightlog.schema.values import encode_series

__all__ = ["ImportSummary", "import_runs", "STATUS_MAP"]

#: MLflow status → (flightlog status, end_reason, exit code); see DESIGN's table of endings
STATUS_MAP: dict[str, tuple[str, str | None, int | None]] = {
    "FINISHED": ("succeeded", "exit", 0),
    "FAILED": ("failed", "exit", None),
    "KILLED": ("killed", "signal", None),
    "RUNNING": ("running", None, None),
    "SCHEDULED": ("queued", None, None),
}


@dataclass
class ImportSummary:
    experiments: int = 0
    runs: int = 0
    already_imported: int = 0
    params: int = 0
    tags: int = 0
    metric_points: int = 0
    artifacts: int = 0
    artifact_bytes: int = 0
    run_ids: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: what was not imported, each with its reason: runs that cannot be read, malformed metric
    #: lines, artifacts outside the source store; the command exits 1 when any
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def import_runs(
    client: Any,
    source: MlflowSource,
    *,
    experiment: str | None = None,
    project: str | None = None,
    artifacts: bool = True,
    allow_external_artifacts: bool = False,
) -> ImportSummary:
    """Copy every active run of the store (or of one experiment, by name or id) into ``client``'s store.

    What cannot be read (a run, a metric line) is skipped and listed in ``skipped``; the rest
    is imported. Params, tags and names are redacted as the SDK redacts them. Artifacts are
    copied only from inside the source store (``source.directory``, under the run's own
    ``<run id>/artifacts`` folder): a run whose ``artifact_uri`` points elsewhere on disk, or a
    symbolic link out of its folder, is skipped unless ``allow_external_artifacts``.
    """
    experiments = source.experiments()
    if experiment is not None:
        chosen = [e for e in experiments if experiment in (e.name, e.id)]
        if not chosen:
            names = ", ".join(repr(e.name) for e in experiments) or "none"
            raise InvalidInput(f"no MLflow experiment named {experiment!r}; the store has: {names}")
        experiments = chosen
    summary = ImportSummary()
    for exp in experiments:
        seen = False
        for run in source.runs(exp):
            if not seen:
                summary.experiments += 1  # an experiment with runs (MLflow's empty "Default" is not counted)
                seen = True
            summary.skipped.extend(run.skipped)
            bounds = None if allow_external_artifacts else source.directory
            _import_one(client, run, project or exp.name, artifacts, bounds, summary)
    summary.skipped[:0] = source.skipped
    return summary


def _import_one(
    client: Any, run: MlflowRun, project: str, with_artifacts: bool, bounds: Path | None, summary: ImportSummary
) -> None:
    if not RUN_ID_RE.match(run.id):
        summary.skipped.append(f"run {run.id!r}: skipped, not a valid run id")
        return
    status, end_reason, exit_code = STATUS_MAP.get(run.status, ("crashed", "lost", None))
    started = run.start_time / 1000 if run.start_time is not None else time.time()
    ended = run.end_time / 1000 if run.end_time is not None else None
    fields: dict[str, Any] = {
        "project": project,
        "name": run.name or run.tags.get("mlflow.runName"),
        "status": status,
        "created": started,
        "started": started,
        "ended": ended,
        "end_reason": end_reason,
        "attempt": 1,
    }
    if exit_code is not None:
        fields["exit_code"] = exit_code
    parent = run.tags.get("mlflow.parentRunId")
    if parent:
        fields["parent_id"] = parent
    at = ended or started
    records: list[dict[str, Any]] = [record("run", t=started, **fields)]
    records.append(
        record(
            "context",
            t=started,
            data={
                "imported_from": "mlflow",
                "mlflow_run_id": run.id,
                "mlflow_experiment_id": run.experiment.id,
                "mlflow_experiment": run.experiment.name,
                "mlflow_artifact_uri": run.artifact_uri,
            },
        )
    )
    if run.params:
        records.append(record("params", t=started, data=dict(run.params)))
    if run.tags:
        records.append(record("tags", t=started, data=dict(run.tags)))
    if run.metrics:
        series = {}
        for name, points in run.metrics.items():
            steps, times, values = array("q"), array("d"), array("d")
            for step, timestamp, value in points:
                steps.append(step)
                times.append(timestamp / 1000)
                values.append(value)
            series[name] = encode_series(steps, times, values)
        records.append(record("metrics", t=at, attempt=1, series=series))
    files = _artifact_files(run, bounds, summary) if with_artifacts else []
    copied: list[tuple[str, Path]] = []
    for rel, path in files:
        try:
            sha, size, uri = client.artifact_store.put_file(path)
        except (OSError, FlightlogError) as exc:
            reason = exc.message if isinstance(exc, FlightlogError) else str(exc)
            summary.skipped.append(f"run {run.id}: artifact {rel} skipped, it cannot be copied ({reason})")
            continue
        copied.append((rel, path))
        records.append(
            record(
                "artifact",
                t=at,
                role="output",
                kind="file",
                path=rel,
                source=str(path),
                size=size,
                sha256=sha,
                uri=uri,
                attempt=1,
            )
        )
    files = copied
    writer = f"mlflow-{run.id}"
    for seq, rec in enumerate(records, start=1):
        envelope(rec, run.id, writer, seq)
        redact_user_strings(rec, home_from_env())  # params, tags, names and the context, as the SDK redacts them
    result = client.store.ingest(records)
    if result.skipped:
        summary.warnings.append(f"run {run.id}: the store refused {len(result.skipped)} record(s): {result.skipped[0]}")
    if result.applied == 0 and result.duplicates:
        summary.already_imported += 1
        return
    summary.runs += 1
    summary.run_ids.append(run.id)
    summary.params += len(run.params)
    summary.tags += len(run.tags)
    summary.metric_points += sum(len(p) for p in run.metrics.values())
    summary.artifacts += len(files)
    summary.artifact_bytes += sum(p.stat().st_size for _, p in files)


def _artifact_files(run: MlflowRun, bounds: Path | None, summary: ImportSummary) -> list[tuple[str, Path]]:
    """The run's artifact files, relative path and location. With ``bounds`` (the source
    store's directory), only from the run's own ``<run id>/artifacts`` folder inside it, and
    without following a symbolic link out of that folder: a store handed over by someone else
    must not make the import copy ``~/.aws/credentials`` into a store the whole team reads."""
    folder = artifact_dir(run)
    if folder is None:
        if run.artifact_uri:
            summary.warnings.append(
                f"run {run.id}: artifacts at {run.artifact_uri} are not on a local path; copied without them"
            )
        return []
    if not folder.is_dir():
        return []
    real = folder.resolve()
    if bounds is not None and not (real.is_relative_to(bounds) and real.parts[-2:] == (run.id, "artifacts")):
        summary.skipped.append(
            f"run {run.id}: artifacts skipped: its artifact_uri {run.artifact_uri} is outside the MLflow store "
            f"({bounds}); pass --allow-external-artifacts to copy them"
        )
        return []
    files = []
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        rel = p.relative_to(folder).as_posix()
        if bounds is not None and not p.resolve().is_relative_to(real):
            summary.skipped.append(
                f"run {run.id}: artifact {rel} skipped: a symbolic link out of the run's artifact "
                "folder; pass --allow-external-artifacts to copy it"
            )
            continue
        files.append((rel, p))
    return files
