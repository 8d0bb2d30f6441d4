"""``flightlog.Client``: read (and annotate) runs, through one interface for every transport.

The one public reading surface. It reads through a :class:`~flightlog.store.base.StoreReader`
(the embedded SQLite store, PostgreSQL, or a server over HTTP with ``FLIGHTLOG_URL``: the same
methods, the same results) and returns ``models.py`` objects; the CLI, diagnosis, alerts and
every API module of the server go through it (:meth:`Client.over` wraps a store already open,
the server's: ``ctx.client``). A run's lineage is computed once, here (:meth:`Client.lineage`,
which the server's ``/runs/{run}/lineage`` answers with too). Its read
methods never write: reconciling the store with this host's journals (dead owners' runs
``crashed``) is one explicit call, :meth:`Client.reconcile`, made when a Client opens.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from flightlog.config import Settings
from flightlog.errors import InvalidInput, NotFound
from flightlog.journal.reconcile import reconcile as reconcile_journals
from flightlog.logevents import level_code
from flightlog.models import (
    Artifact,
    LogEvent,
    LogQuery,
    MetricHistory,
    MetricSummary,
    Note,
    RankInfo,
    RunInfo,
    StageSummary,
)
from flightlog.plugins import features
from flightlog.store.artifacts import LocalArtifactStore, open_artifact_store
from flightlog.store.base import Store, ingest_one
from flightlog.store.registry import open_store
from flightlog.timefmt import parse_time
from flightlog.transport import SCHEMES  # noqa: F401 - the transport registers these (http, https) when imported

__all__ = ["Client"]

RunRef = str | RunInfo | Any  # a run id, a prefix, a RunInfo, or a flightlog.Run

#: artifact records that stand for a directory (the SDK's ``dir``) or a deleted path, never a file
#: of one; a manifest (an MLflow model's ``model``) is told by the files recorded under its path
_DIRECTORY_KINDS = frozenset({"dir", "deleted"})


def _run_id(ref: RunRef) -> str:
    if isinstance(ref, str):
        return ref
    run_id = getattr(ref, "id", None)
    if not isinstance(run_id, str):
        raise InvalidInput(f"expected a run id or a run, got {type(ref).__name__}")
    return run_id


class Client:
    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        *,
        store: str | None = None,
        settings: Settings | None = None,
        reconcile: bool = True,
    ) -> None:
        overrides: dict[str, Any] = {}
        if home is not None:
            overrides["home"] = home  # the store follows unless FLIGHTLOG_STORE names another
        if store is not None:
            overrides["store_uri"] = store
        self._open(settings or Settings.from_env(**overrides))
        if reconcile:  # before the first read: a listing then shows a dead owner's run crashed
            self.reconcile()
        # metric histories come back as numpy arrays: import numpy with the Client (as the HTTP
        # transport's module does) rather than inside the first read, which it would make ~40 ms
        import numpy  # noqa: F401

    @classmethod
    def for_lookups(cls, settings: Settings, store: Store | None = None) -> Client:
        """A Client for looking runs up (the SDK's ``init(id=...)``, each pipeline step's runner):
        without the numpy import that makes the first metric read fast and costs 0.1–0.2 s.
        ``store``: an open store to read through, which :meth:`close` leaves open (the SDK's own
        connection, which it ships through next)."""
        client = cls.__new__(cls)
        client._open(settings, store)
        return client

    @classmethod
    def over(cls, store: Store, *, home: str | os.PathLike[str] | None = None) -> Client:
        """A Client over a store already open (the server's, for every API module): the same
        methods, over that store, without reconciling this host's journals (the server does
        not: the journals live on the writers' machines); :meth:`close` leaves the store open,
        and so does dropping the Client. ``home``: where the team's runbook and caches live
        (FLIGHTLOG_HOME's place; by default the one the environment names). Costs a read of the
        environment, no store or file access: a server makes one and keeps it
        (``AppState.client``)."""
        settings = Settings.from_env(home=home) if home is not None else Settings.from_env()
        return cls.for_lookups(settings, store)

    def _open(self, settings: Settings, store: Store | None = None) -> None:
        self.settings = settings
        self._owns_store = store is None
        self.store: Store = open_store(settings.store_uri) if store is None else store
        # a remote store brings its own (uploads, downloads on demand); else the local directory
        remote: LocalArtifactStore | None = getattr(self.store, "artifact_store", None)
        self.artifact_store = remote or open_artifact_store(settings.home, settings.artifacts)

    def close(self) -> None:
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ── runs ────────────────────────────────────────────────────────────────
    def runs(
        self,
        project: str | None = None,
        filter: str | None = None,
        order_by: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[RunInfo]:
        """Runs matching a filter (see docs/filters.md), e.g. ``params.lr > 0.01 and status = 'failed'``."""
        if limit is not None and limit < 0:
            raise InvalidInput("limit must be 0 or more")
        return self.store.search_runs(project=project, filter=filter, order_by=order_by, limit=limit, offset=offset)

    def run(self, ref: RunRef, *, exact: bool = False) -> RunInfo:
        """A run by id or unique id prefix (``exact=True``: the whole id only)."""
        run_id = _run_id(ref)
        info = self.store.get_run(run_id)
        if exact and info.id != run_id:
            raise NotFound(f"no run with id {run_id!r}")
        return info

    def projects(self) -> list[dict[str, Any]]:
        return self.store.projects()

    def delete_runs(self, refs: Sequence[RunRef]) -> int:
        ids = [self.run(r).id for r in refs]
        return self.store.delete_runs(ids)

    def reconcile(self, *, force: bool = False) -> dict[str, Any]:
        """Settle this host's runs whose owner process died: ship their journals, mark what is
        still unfinished ``crashed`` (``end_reason: lost``). A Client does it when it opens
        (``reconcile=False`` opts out); the read methods never write. Cheap when nothing
        changed (a marker beside the journals; ``flightlog.journal.reconcile``). Returns what
        it did: ``skipped``, ``checked``, ``synced``, ``crashed``, ``errors``."""
        report = reconcile_journals(self.settings.home, self.store, store_key=self.settings.store_uri, force=force)
        return report.to_dict()

    # ── events ──────────────────────────────────────────────────────────────
    def metrics(self, run: RunRef) -> dict[str, MetricSummary]:
        return self.store.metric_summaries(self._ref(run))

    def metric_history(self, run: RunRef, name: str, *, rank: int | None = None) -> MetricHistory:
        """Every point of one metric, in step order, as numpy arrays ``steps``, ``values``, ``times``.

        In a distributed run the points of one rank: ``rank``, else the lowest rank that logged
        the metric (rank 0, as a rule), never every rank's points interleaved."""
        if rank is not None:
            _check_rank(rank)
        return self.store.metric_history(self._ref(run), name, rank)

    def logs(
        self,
        run: RunRef,
        level: str | int | None = None,
        grep: str | None = None,
        since: str | float | None = None,
        limit: int | None = None,
        *,
        until: str | float | None = None,
        tail: bool = False,
        stream: str | Sequence[str] | None = None,
        component: str | None = None,
        attempt: int | None = None,
        stage: str | None = None,
        rank: int | None = None,
    ) -> list[LogEvent]:
        """Log events; ``level="warning"`` means warning and above; ``since`` takes ``10m`` or ISO
        times; ``rank`` keeps one rank's events of a distributed run."""
        if rank is not None:
            _check_rank(rank)
        query = LogQuery(
            min_level=_level(level),
            grep=_grep(grep),
            since=_time_arg(since, "since"),
            until=_time_arg(until, "until"),
            streams=(stream,) if isinstance(stream, str) else tuple(stream) if stream else None,
            component=component,
            attempt=attempt,
            stage=stage,
            limit=limit,
            tail=tail,
            rank=rank,
        )
        return self.store.logs(self._ref(run), query)

    def stages(self, run: RunRef, *, rank: int | None = None) -> list[StageSummary]:
        """The run's stages (count, total, min, max, spans kept); with ``rank``, only what that
        rank's processes timed (a distributed run: each rank times its own stages)."""
        if rank is not None:
            _check_rank(rank)
        return self.store.stages(self._ref(run), rank)

    def resources(self, run: RunRef, since: float | None = None, *, rank: int | None = None) -> list[dict[str, Any]]:
        """Resource samples, oldest first: every process's, or with ``rank`` that rank's only."""
        if rank is not None:
            _check_rank(rank)
        return self.store.resource_samples(self._ref(run), since, rank)

    def ranks(self, run: RunRef, *, all_attempts: bool = False) -> list[RankInfo]:
        """The ranks of a distributed run, by rank: identity (rank, local rank, world size, node,
        host, pid, restart), ``state`` (running, succeeded, failed, stopped, killed, lost, hung),
        heartbeat, last step, exit code or signal, first error. The current attempt's newest
        restart of each rank, unless ``all_attempts``; empty for a run of one process."""
        return self.store.ranks(self._ref(run), all_attempts=all_attempts)

    # ── metadata ────────────────────────────────────────────────────────────
    def context(self, run: RunRef) -> dict[str, Any]:
        return self.store.context(self._ref(run))

    def notes(self, run: RunRef) -> list[Note]:
        return self.store.notes(self._ref(run))

    def add_note(self, run: RunRef, text: str, author: str | None = None) -> None:
        if not text.strip():
            raise InvalidInput("a note needs some text")
        self._write(self.run(run).id, "note", text=text, author=author)

    def edit_run(
        self,
        run: RunRef,
        *,
        name: str | None = None,
        description: str | None = None,
        tags: dict[str, Any] | None = None,
        remove_tags: Sequence[str] = (),
    ) -> RunInfo:
        """Rename, retag or describe a run after the fact (any status); returns the run as it now is.

        ``description=""`` removes the description; ``remove_tags`` keys the run lacks are ignored."""
        from flightlog.store.edits import edit_run

        run_id = self.run(run).id
        edit_run(
            self.store, run_id, origin="client", name=name, description=description, tags=tags, remove_tags=remove_tags
        )
        return self.run(run_id, exact=True)

    def artifacts(self, run: RunRef) -> list[Artifact]:
        return self.store.artifacts(self._ref(run))

    def artifact_file(self, artifact: Artifact) -> Path:
        if not artifact.uri:
            raise NotFound(f"artifact {artifact.path} was recorded without its content (source: {artifact.source})")
        return self.artifact_store.path_of(artifact.uri)

    def download_artifact(self, run: RunRef, path: str, dest: str | os.PathLike[str]) -> Path:
        """Copy the artifact ``path`` of ``run`` to ``dest`` and return where it went.

        ``dest`` is the file to write, or an existing directory to write into (under the
        artifact's own name, as ``cp`` does). An artifact that is a directory — a directory the
        SDK logged, a model an MLflow client logged — comes down as a directory of its files."""
        arts = self.artifacts(run)
        wanted = path.strip("/")
        latest: dict[str, Artifact] = {}
        for a in arts:  # the last record of each path is the artifact now
            latest[a.path] = a
        target = Path(dest)
        if target.is_dir():
            target = target / PurePosixPath(wanted).name
        exact = latest.get(wanted)
        if exact is not None and exact.kind == "deleted":
            raise NotFound(f"artifact {wanted!r} of run {exact.run_id[:12]} was deleted")
        below = {p[len(wanted) + 1 :]: a for p, a in latest.items() if p.startswith(wanted + "/") and a.uri}
        parents = {rel[:i] for rel in below for i, ch in enumerate(rel) if ch == "/"}  # nested directories' own records
        below = {rel: a for rel, a in below.items() if rel not in parents and a.kind not in _DIRECTORY_KINDS}
        if exact is not None and exact.uri and not below:  # a file (even one its writer called "model")
            return self.artifact_store.copy_out(exact.uri, target)
        if below:  # a directory: the SDK's, or an MLflow model recorded with its manifest
            root = target.resolve()
            for rel, a in sorted(below.items()):
                out = (root / rel).resolve()
                if not out.is_relative_to(root):  # recorded paths never climb; a damaged record must not either
                    raise InvalidInput(f"artifact {a.path!r} of run {a.run_id[:12]} would be written outside {root}")
                self.artifact_store.copy_out(str(a.uri), out)
            return target
        if exact is not None:
            raise NotFound(f"artifact {exact.path} was recorded without its content (source: {exact.source})")
        names = ", ".join(a.path for a in arts[:20]) or "none"
        raise NotFound(f"run has no artifact {path!r}; its artifacts: {names}")

    def log_artifact(
        self,
        run: RunRef,
        path: str | os.PathLike[str],
        *,
        name: str | None = None,
        role: str = "output",
        kind: str | None = None,
    ) -> dict[str, Any]:
        """Attach a file to an existing run (e.g. a report made after it ended)."""
        run_id = self.run(run).id  # a record needs the whole id
        source = Path(path).resolve()
        if not source.is_file():
            raise InvalidInput(f"{path} is not a file")
        sha, size, uri = self.artifact_store.put_file(source)
        record = {
            "role": role,
            "kind": kind or "file",
            "path": name or source.name,
            "source": str(source),
            "size": size,
            "sha256": sha,
            "uri": uri,
        }
        self._write(run_id, "artifact", **record)
        return record

    def lineage(self, run: RunRef, *, visible: Callable[[list[str]], list[str]] | None = None) -> dict[str, Any]:
        """Inputs with the runs that produced them; outputs with the runs that used them (by
        content digest); the run's parent and children. Computed here only: the server's
        ``/runs/{run}/lineage`` answers with this too.

        ``visible``: of some run ids, those the reader may name (a server's token of one project
        sees its project's runs only); by default every one."""
        info = self.run(run)
        keep = visible or (lambda ids: ids)
        arts = self.store.artifacts(info.id)
        digests = sorted({a.sha256 for a in arts if a.sha256})
        related = [a for a in self.store.artifacts_by_digest(digests) if a.run_id != info.id]
        if visible is not None:
            allowed = set(keep(sorted({a.run_id for a in related})))
            related = [a for a in related if a.run_id in allowed]

        def linked(a: Artifact, role: str) -> list[str]:
            return sorted({r.run_id for r in related if r.sha256 == a.sha256 and r.role == role})

        return {
            "run": info.id,
            "parent": info.parent_id,
            "children": keep(self.store.children(info.id)),
            "inputs": [
                {"artifact": a.to_dict(), "produced_by": linked(a, "output")} for a in arts if a.role == "input"
            ],
            "outputs": [{"artifact": a.to_dict(), "used_by": linked(a, "input")} for a in arts if a.role == "output"],
        }

    def evidence(self, run: RunRef, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        return self.store.evidence(self._ref(run), kind, name)

    def log_evidence(self, run: RunRef, kind: str, name: str, data: dict[str, Any]) -> None:
        self._write(self.run(run).id, "evidence", kind=kind, name=name, data=data)

    # ── diagnosis ───────────────────────────────────────────────────────────
    def diagnose(self, run: RunRef, baseline: RunRef | None = None, *, auto_baseline: bool = True) -> dict[str, Any]:
        """Likely causes of a failed or slow run, with evidence and next steps (docs/troubleshooting.md).

        Without ``baseline`` one is chosen (a pinned run, else the most recent successful run
        of the same name, else the best comparable run; the report says which and why);
        ``auto_baseline=False`` turns that off."""
        report: dict[str, Any] = features().need(
            "flightlog_diagnose_run",
            needed_by="Client.diagnose",
            install="flightlog (its diagnose feature)",
            client=self,
            run_id=_run_id(run),
            baseline_id=None if baseline is None else _run_id(baseline),
            auto_baseline=auto_baseline,
        )
        return report

    def compare(self, run: RunRef, baseline: RunRef | None = None) -> dict[str, Any]:
        """What changed from ``baseline`` to ``run``: params, code, packages, environment, inputs, stages, peaks, metrics.

        Without ``baseline``, the one a diagnosis would choose (docs/troubleshooting.md), and
        the document says which and why; NotFound, saying why, when none qualifies."""
        comparison: dict[str, Any] = features().need(
            "flightlog_compare_runs",
            needed_by="Client.compare",
            install="flightlog (its diagnose feature)",
            client=self,
            run_id=_run_id(run),
            baseline_id=None if baseline is None else _run_id(baseline),
        )
        return comparison

    def rightsize(self, run_or_name: RunRef, *, project: str | None = None) -> dict[str, Any]:
        """Memory and CPU requests with headroom from the peaks of a run's attempts or of the runs of one name."""
        requests: dict[str, Any] = features().need(
            "flightlog_rightsize",
            needed_by="Client.rightsize",
            install="flightlog (its diagnose feature)",
            client=self,
            run=_run_id(run_or_name),
            project=project,
        )
        return requests

    def _ref(self, run: RunRef) -> str:
        """A run's id for a store call, without reading the run: a run object already knows it,
        and the store resolves a prefix cheaply (reading the whole run, every metric summary
        included, once per call made reading N metrics cost N² summaries)."""
        if isinstance(run, str):
            return self.store.resolve(run)
        return _run_id(run)

    def _write(self, run_id: str, kind: str, /, **payload: Any) -> None:
        ingest_one(self.store, run_id, kind, origin="client", **payload)


def _check_rank(rank: Any) -> None:
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise InvalidInput(f"rank must be a whole number from 0, not {rank!r}")


def _level(level: str | int | None) -> int | None:
    if level is None:
        return None
    code = level_code(level, default=-1)
    if code < 0:
        raise InvalidInput(f"unknown log level {level!r}: use debug, info, warning, error or critical")
    return code


def _grep(pattern: str | None) -> str | None:
    if pattern is None:
        return None
    from flightlog.query.regex import compile_grep

    compile_grep(pattern, what="--grep")
    return pattern


def _time_arg(value: str | float | None, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    return parse_time(value, what=what)
