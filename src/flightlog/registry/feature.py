"""The model registry as a feature: `flightlog models`, `flightlog deploy`, `flightlog
deployments`, the ``/api/v1/models`` and ``/api/v1/deployments`` routes, its store tables and
the SDK's ``run.register_model``.

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): everything is named
lazily, so loading the table imports nothing of the registry but its migrations' text.
"""

from __future__ import annotations

from collections.abc import Sequence

from flightlog.plugins import StoreMigrations, hookimpl

__all__ = ["flightlog_store_migrations"]


@hookimpl
def flightlog_store_migrations() -> Sequence[StoreMigrations]:
    from flightlog.registry.migrations import MIGRATIONS

    return [MIGRATIONS]
