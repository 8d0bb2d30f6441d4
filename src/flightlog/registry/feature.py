"""The model registry as a feature: `flightlog models`, `flightlog deploy`, `flightlog
deployments`, the ``/api/v1/models`` and ``/api/v1/deployments`` routes, its store tables and
the SDK's ``run.register_model``.

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): everything is named
lazily, so loading the table imports nothing of the registry but its migrations' text.
"""

from __future__ import annotations

from collections.abc import Sequence

from flightlog.plugins import CommandRef, StoreMigrations, hookimpl

__all__ = ["flightlog_cli_commands", "flightlog_store_migrations"]


@hookimpl
def flightlog_store_migrations() -> Sequence[StoreMigrations]:
    from flightlog.registry.migrations import MIGRATIONS

    return [MIGRATIONS]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [
        CommandRef("flightlog.registry.cli", "models_group", "models"),
        CommandRef("flightlog.registry.cli", "deploy_cmd", "deploy"),
        CommandRef("flightlog.registry.cli", "deployments_group", "deployments"),
    ]
