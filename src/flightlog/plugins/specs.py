"""The hooks a feature may implement: one function each, every one optional.

Why pluggy (the plugin library of pytest and tox) and not a registry of our own: it checks
an implementation's arguments against the specification when the feature is registered,
calls every feature's implementation in a known order, and gives third-party packages the
same door as the built-in features (setuptools entry points).

A hook that returns things returns a sequence, so that one feature can add several; the
table (`table.Features`) flattens the answers of every feature. Heavy things stay lazy: a
command may be named by a `CommandRef` (module and attribute), imported only when the CLI
assembles itself, so a feature whose extra is not installed still lists its command and says
what to install.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

from flightlog.plugins.operations import Operation

if TYPE_CHECKING:
    import click

__all__ = [
    "PROJECT",
    "CommandMode",
    "CommandRef",
    "FeatureSpec",
    "Ref",
    "RunAction",
    "StoreMigrations",
    "Watcher",
    "hookimpl",
    "hookspec",
]

#: the pluggy project name, which is also the entry-point group third-party features use
PROJECT = "flightlog"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@dataclass(frozen=True)
class Ref:
    """A function named by where it lives, imported the first time the core calls it."""

    module: str
    attr: str

    def load(self) -> Callable[..., Any]:
        value: Callable[..., Any] = getattr(importlib.import_module(self.module), self.attr)
        return value


class Watcher(Protocol):
    """What a feature runs beside a run under ``flightlog run`` (`flightlog_runner_start`)."""

    def stop(self, final: bool = True) -> None: ...


@dataclass(frozen=True)
class CommandRef:
    """A click command named by where it lives, imported when the CLI assembles itself.

    ``name`` is what ``flightlog --help`` lists when the module cannot be imported because an
    extra is missing (the command then says which extra to install)."""

    module: str
    attr: str
    name: str


@dataclass(frozen=True)
class CommandMode:
    """A second subject for another feature's command, selected by an option of its own:
    ``flightlog diagnose --deployment ENDPOINT`` is the serving feature's mode of diagnose's
    command, so that diagnose never knows deployments (`flightlog_command_modes`).

    ``target`` is a click command (or a `CommandRef` to one) whose first option selects the mode
    (``--deployment``); its parameters join ``command``'s (those the command already has, such
    as ``--format``, are shared). With that option given, ``target`` runs instead of the
    command, and the command's own arguments are refused with ``conflict`` (``{option}`` is the
    mode's option, ``{given}`` the first of the command's own arguments given); without it, the
    mode's other options are refused. ``help`` is added to the command's help, and ``hint`` to
    the usage errors the command itself raises (so that they name the mode too)."""

    command: str
    target: click.Command | CommandRef
    conflict: str = "{option} does not go with {given}"
    help: str = ""
    hint: str = ""


@dataclass(frozen=True)
class StoreMigrations:
    """A feature's own tables in the run store's database (SQLite and PostgreSQL alike).

    ``sqlite`` and ``postgres`` are lists of migrations, each a list of statements applied in
    one transaction, numbered from 1 by position and mirroring each other one for one (as the
    core's do), so ``flightlog migrate-store`` copies rows without translating them. The store
    records the last one applied in ``meta`` under ``schema_version:<feature>``. ``tables``
    names every table they create, parents first: what ``migrate-store`` copies."""

    feature: str
    sqlite: Sequence[Sequence[str]]
    postgres: Sequence[Sequence[str]]
    tables: Sequence[str]


@dataclass(frozen=True)
class RunAction:
    """A method a feature adds to `flightlog.Run` (``run.register_model`` is the registry's):
    ``function(run, *args, **kwargs)``, looked up by ``name`` when the run method is called,
    so the SDK reaches the feature through the table, never by importing it."""

    name: str
    function: Callable[..., Any]


class FeatureSpec:
    """The hook specifications; a feature implements any of them with ``@hookimpl``."""

    @hookspec
    def flightlog_cli_commands(self) -> Sequence[click.Command | CommandRef]:  # type: ignore[empty-body]
        """Top-level ``flightlog`` commands and command groups this feature adds."""

    @hookspec
    def flightlog_api_operations(self) -> Sequence[Operation]:  # type: ignore[empty-body]
        """API operations (route, handler, role, OpenAPI text: `flightlog.plugins.operations.Operation`)
        this feature serves; paths are relative to ``/api/v1``."""

    @hookspec
    def flightlog_command_modes(self) -> Sequence[CommandMode]:  # type: ignore[empty-body]
        """Modes this feature adds to another feature's command (`CommandMode`: the serving
        feature's ``flightlog diagnose --deployment``)."""

    @hookspec
    def flightlog_diagnosis_analyzers(self) -> Sequence[Callable[[Any], Sequence[Any]]]:  # type: ignore[empty-body]
        """Analyzers ``flightlog diagnose`` runs after the built-in ones: each takes the
        diagnosis context (`flightlog.diagnose.engine.Context`: the run's evidence, its
        baseline) and returns findings (`flightlog.diagnose.findings.Finding`)."""

    @hookspec
    def flightlog_diagnosis_reports(self) -> Sequence[Callable[[Any, str], Mapping[str, Any] | None]]:  # type: ignore[empty-body]
        """Whole-run diagnosers: each takes (client, run id) and returns the complete report of a
        kind of run it knows (a pipeline: its failing step's cause), or None to let the next one,
        and then the analyzers, diagnose it. The first report given wins."""

    # ── questions the core asks a feature: the first feature that answers (not None) answers ──
    # (`Features.ask`; registration order, built-in features first). Each names its upward call,
    # so that a reader of the core sees what it asks of the features, and of whom.

    @hookspec
    def flightlog_classify_failure(
        self,
        exit_code: int | None,
        signal: int | None,
        timed_out: bool,
        oom_killed: bool,
        traceback_text: str | None,
        last_lines: Sequence[str],
        memory_share: float | None,
    ) -> tuple[str, float] | None:
        """The failure category of a process's exit and the confidence in it (the runner, at each
        exit; without an answer an exit is an unclassified ``code_error``)."""

    @hookspec
    def flightlog_ended_nonfinite(self, last_lines: Sequence[str]) -> tuple[str, str, str] | None:
        """``(key, value, line)`` when a run that exited 0 printed its training loss (or its
        gradient norm) non-finite to the end, from the last lines the runner holds (the runner, at
        a succeeded exit whose last lines name a NaN or an infinity; its closing line says it)."""

    @hookspec
    def flightlog_judge_ranks(self, client: Any, run_id: str, end_reason: str | None) -> Mapping[str, Any] | None:
        """The verdict on a failed distributed attempt: which rank caused it and how (the
        runner, at the failed exit of a job whose ranks it saw; without an answer the quick
        classification of the exit stands). ``end_reason`` is how the runner saw the attempt end
        (``oom_killed`` at its memory limit, ``timeout``, ``signal``, ``exit``): the run's own
        record of it is written only after the verdict."""

    @hookspec
    def flightlog_diagnose_run(
        self, client: Any, run_id: str, baseline_id: str | None, auto_baseline: bool
    ) -> Mapping[str, Any] | None:
        """A run's diagnosis report (``Client.diagnose``, ``flightlog diagnose``)."""

    @hookspec
    def flightlog_compare_runs(self, client: Any, run_id: str, baseline_id: str | None) -> Mapping[str, Any] | None:
        """What changed from a baseline to a run (``Client.compare``, ``flightlog compare``)."""

    @hookspec
    def flightlog_rightsize(self, client: Any, run: str, project: str | None) -> Mapping[str, Any] | None:
        """Resource requests from the peaks of a run or of the runs of one name (``Client.rightsize``)."""

    @hookspec
    def flightlog_check_alert_rules(self, path: str) -> bool | None:
        """Read the alert rules file at ``path`` and raise on any problem in it; True when it is
        good (``flightlog run --alerts``, ``flightlog server --alerts``: before anything starts)."""

    @hookspec
    def flightlog_data_manifest(self, path: Any, cache_dir: Any, exclude: Sequence[str]) -> Mapping[str, Any] | None:
        """A dataset's manifest: its files, sizes and hashes (``run.log_input``)."""

    @hookspec
    def flightlog_data_profile(self, data: Any) -> Mapping[str, Any] | None:
        """A table's profile as ``Profile.to_dict()`` writes it (``run.log_profile`` given data)."""

    @hookspec
    def flightlog_cohort_evaluate(
        self, y_true: Any, y_pred: Any, cohorts: Any, metrics: Sequence[str] | None, sample_size: int
    ) -> Mapping[str, Any] | None:
        """Per-cohort evaluation metrics and a bounded sample of predictions (``run.log_eval``)."""

    @hookspec
    def flightlog_load_model(self, ref: str, options: Mapping[str, Any]) -> Any:
        """The registered model ``ref`` names, loaded (``flightlog.models.load(ref, **options)``)."""

    @hookspec
    def flightlog_download_model(self, ref: str, options: Mapping[str, Any]) -> Any:
        """The local path of the model ``ref`` names, downloaded and checked
        (``flightlog.models.download(ref, **options)``)."""

    @hookspec
    def flightlog_run_goodput(self, client: Any, run: Any) -> Mapping[str, Any] | None:
        """A finished run's goodput (``flightlog runs show``'s goodput line; without an answer
        the line is left out): ``run`` is its `RunInfo`."""

    @hookspec
    def flightlog_run_start(self, run_id: str, project: str) -> None:
        """A run started, in the process that owns it (the SDK's ``init`` of a new or resumed run,
        or ``flightlog run``); never in a workload attached to a runner's run."""

    @hookspec
    def flightlog_run_end(self, run_id: str, status: str) -> None:
        """The owner of a run stored its final ``status`` (after ``finish``, before its writer closes)."""

    @hookspec
    def flightlog_record_kinds(self) -> Sequence[str]:  # type: ignore[empty-body]
        """The record kinds (``run``, ``logs``, ``evidence``, ``artifact``, ...) this feature wants
        `flightlog_record` called with. A feature that names none is never called per record."""

    @hookspec
    def flightlog_record(self, run_id: str, record: Mapping[str, Any]) -> None:
        """A record of a kind this feature asked for (`flightlog_record_kinds`) was written by this
        process. Called on the writer's background thread, after the record reached the journal:
        never on the workload's own thread."""

    @hookspec
    def flightlog_runner_start(self, run: Any, options: Any) -> Watcher | None:
        """``flightlog run`` started ``run`` (a `flightlog.Run`) with ``options`` (its
        `RunnerOptions`); a feature that watches the run beside the workload (live alert
        evaluation) returns a `Watcher`, stopped once the run's final status is stored."""

    @hookspec
    def flightlog_server_start(self, store: Any, home: Any, config: Any) -> Watcher | None:
        """A flightlog server started over ``store`` (its `ServerStore`; ``home`` its home
        directory, ``config`` its `ServerConfig`); a feature that works in the background while
        it serves (the registry's event delivery, alerts' evaluation) returns a `Watcher`,
        stopped when the server shuts down."""

    @hookspec
    def flightlog_listing_fields(self) -> Mapping[str, Callable[[Any], Any]]:  # type: ignore[empty-body]
        """Fields the runs listing (``GET /api/v1/runs``) adds to every row: name -> function of the
        run's `RunInfo` (cheap: it runs once per row)."""

    @hookspec
    def flightlog_metrics_text(self) -> Sequence[Callable[[Any, str | None], str]]:  # type: ignore[empty-body]
        """Text the server's ``/metrics`` appends when per-run metrics are on
        (``--export-run-metrics``): each function takes (store, project or None) and returns
        Prometheus exposition text."""

    @hookspec
    def flightlog_alert_rule_kinds(self) -> Sequence[Any]:  # type: ignore[empty-body]
        """Alert rule kinds (`flightlog.alerts.kinds.Kind`s, each with its ``name``) rules may use."""

    @hookspec
    def flightlog_notifiers(self) -> Mapping[str, Callable[[Any, int], Any]]:  # type: ignore[empty-body]
        """Alert notifier kinds by name: each parses its ``notifiers:`` entry (the entry's fields, its
        index) into a `flightlog.alerts.notifiers.Notifier`."""

    @hookspec
    def flightlog_store_migrations(self) -> Sequence[StoreMigrations]:  # type: ignore[empty-body]
        """The feature's own store tables and their migrations (`StoreMigrations`): the SQLite and
        PostgreSQL stores apply them when they open, after the core's schema."""

    @hookspec
    def flightlog_run_actions(self) -> Sequence[RunAction]:  # type: ignore[empty-body]
        """Actions the SDK's `Run` offers on behalf of this feature (`RunAction`)."""
