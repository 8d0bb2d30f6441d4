"""The model registry as a feature: `flightlog models`, `flightlog deploy`, `flightlog
deployments`, the ``/api/v1/models`` and ``/api/v1/deployments`` routes, its store tables and
the SDK's ``run.register_model``.

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): everything is named
lazily, so loading the table imports nothing of the registry but its migrations' text (at
the top here: a store may ask for it on any thread, the shipper's too, and a thread must not import).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flightlog.plugins import CommandRef, RunAction, StoreMigrations, hookimpl
from flightlog.registry.migrations import MIGRATIONS

__all__ = [
    "flightlog_api_operations",
    "flightlog_cli_commands",
    "flightlog_download_model",
    "flightlog_load_model",
    "flightlog_run_actions",
    "flightlog_server_start",
    "flightlog_store_migrations",
]


@hookimpl
def flightlog_store_migrations() -> Sequence[StoreMigrations]:
    return [MIGRATIONS]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [
        CommandRef("flightlog.registry.cli", "models_group", "models"),
        CommandRef("flightlog.registry.cli", "deploy_cmd", "deploy"),
        CommandRef("flightlog.registry.cli", "deployments_group", "deployments"),
    ]


def _register_model(run: Any, path: str, name: str, **options: Any) -> Any:
    """``run.register_model``: through the run's own store (or its server, in remote mode)."""
    # cost: run.register_model only; loading the table imports no feature
    from flightlog.client import Client

    # the registry package itself: imported on a call, not when the table loads
    from flightlog.registry import Registry

    client = Client.for_lookups(run.settings)
    try:
        return Registry(client).register(run.id, path, name, **options)
    finally:
        client.close()


@hookimpl
def flightlog_run_actions() -> list[RunAction]:
    return [RunAction("register_model", _register_model)]


@hookimpl
def flightlog_load_model(ref: str, options: Mapping[str, Any]) -> Any:
    """``flightlog.models.load``: where MLflow users look for it, answered by the registry."""
    from flightlog.registry.loading import load  # cost: a model's load only

    return load(ref, **options)


@hookimpl
def flightlog_download_model(ref: str, options: Mapping[str, Any]) -> Any:
    """``flightlog.models.download``."""
    from flightlog.registry.loading import download  # cost: a model's download only

    return download(ref, **options)


@hookimpl
def flightlog_api_operations() -> list[Any]:
    # imported here: the API module needs Starlette (flightlog[server]), which the CLI does not
    from flightlog.registry.api import OPERATIONS

    return list(OPERATIONS)


@hookimpl
def flightlog_server_start(store: Any) -> Any:
    """The server delivers pending registry events in the background (registry/events.py), so an
    event a CLI wrote into the server's database is sent too; None for a store without tables."""
    # cost: a server's start only; the table loads this module in every run's process
    from flightlog.registry.events import EventPump

    # cost: as above
    from flightlog.registry.stores import sql_store_of

    registry = sql_store_of(store)
    return None if registry is None else EventPump(registry).start()
