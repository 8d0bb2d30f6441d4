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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import click

    from flightlog.diagnose.engine import Context
    from flightlog.diagnose.findings import Finding
    from flightlog.server.operations import Operation

__all__ = ["PROJECT", "CommandRef", "FeatureSpec", "StoreMigrations", "hookimpl", "hookspec"]

#: the pluggy project name, which is also the entry-point group third-party features use
PROJECT = "flightlog"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@dataclass(frozen=True)
class CommandRef:
    """A click command named by where it lives, imported when the CLI assembles itself.

    ``name`` is what ``flightlog --help`` lists when the module cannot be imported because an
    extra is missing (the command then says which extra to install)."""

    module: str
    attr: str
    name: str


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


class FeatureSpec:
    """The hook specifications; a feature implements any of them with ``@hookimpl``."""

    @hookspec
    def flightlog_cli_commands(self) -> Sequence[click.Command | CommandRef]:  # type: ignore[empty-body]
        """Top-level ``flightlog`` commands and command groups this feature adds."""

    @hookspec
    def flightlog_api_operations(self) -> Sequence[Operation]:  # type: ignore[empty-body]
        """API operations (route, handler, role, OpenAPI text: `flightlog.server.operations.Operation`)
        this feature serves; paths are relative to ``/api/v1``."""

    @hookspec
    def flightlog_diagnosis_analyzers(self) -> Sequence[Callable[[Context], list[Finding]]]:  # type: ignore[empty-body]
        """Analyzers ``flightlog diagnose`` runs after the built-in ones: each takes the
        diagnosis `Context` (the run's evidence, its baseline) and returns findings."""

    @hookspec
    def flightlog_run_start(self, run_id: str, project: str) -> None:
        """A run started (declared; not called yet: the runner and the SDK move onto the table next)."""

    @hookspec
    def flightlog_run_end(self, run_id: str, status: str) -> None:
        """A run ended with ``status`` (declared; not called yet, like `flightlog_run_start`)."""

    @hookspec
    def flightlog_record(self, record: Mapping[str, Any]) -> None:
        """A record of a kind this feature asked for arrived (declared; not called yet)."""

    @hookspec
    def flightlog_alert_rule_kinds(self) -> Mapping[str, Any]:  # type: ignore[empty-body]
        """Alert rule kinds by name (declared; alerts/ reads its own kinds until it moves onto the table)."""

    @hookspec
    def flightlog_notifiers(self) -> Mapping[str, Any]:  # type: ignore[empty-body]
        """Alert notifiers by name (declared; alerts/ reads its own notifiers until it moves onto the table)."""

    @hookspec
    def flightlog_store_migrations(self) -> Sequence[StoreMigrations]:  # type: ignore[empty-body]
        """The feature's own store tables and their migrations (`StoreMigrations`): the SQLite and
        PostgreSQL stores apply them when they open, after the core's schema."""
