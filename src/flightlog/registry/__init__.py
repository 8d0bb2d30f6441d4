"""The model registry: registered models, versions from a run's artifact or checkpoint,
aliases with history, deployments' desired state, and registry events (docs/models.md).

A feature on the feature table (``registry/feature.py``): its tables come through the
``flightlog_store_migrations`` hook, its commands and routes through the CLI and API hooks.
``resolve(ref, client)`` is the one function every surface that takes a model path calls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flightlog.errors import InvalidInput
from flightlog.lazy import lazy_attributes
from flightlog.registry.refs import SCHEME, ModelRef, parse_ref
from flightlog.store.base import feature_store

if TYPE_CHECKING:
    from flightlog.registry.types import (
        AliasChange,
        Deployment,
        DeploymentChange,
        ModelVersion,
        RegisteredModel,
        RegistryEvent,
    )

__all__ = [
    "SCHEME",
    "AliasChange",
    "Deployment",
    "DeploymentChange",
    "ModelRef",
    "ModelVersion",
    "RegisteredModel",
    "Registry",
    "RegistryEvent",
    "is_model_ref",
    "parse_ref",
    "resolve",
]


# cost: the feature table imports this package in every run's process: its types wait for a use
__getattr__, __dir__ = lazy_attributes(
    __name__,
    {
        "AliasChange": ".types",
        "Deployment": ".types",
        "DeploymentChange": ".types",
        "ModelVersion": ".types",
        "RegisteredModel": ".types",
        "RegistryEvent": ".types",
    },
    eager=tuple(__all__),
)


def Registry(client: Any) -> Any:  # noqa: N802 - reads as the class it stands for
    """The registry of ``client``'s store: its own tables (SQLite, PostgreSQL), or a flightlog
    server's API when ``FLIGHTLOG_URL`` is set; both answer the same methods. Picked by the
    store's database (``store.backend``) from one table."""
    registry = feature_store(client.store, {"sqlite": _local, "postgresql": _local, "http": _remote}, client)
    if registry is None:
        raise InvalidInput(
            f"models are kept in the embedded store, in PostgreSQL or by a flightlog server; "
            f"{type(client.store).__name__} keeps none"
        )
    return registry


def _local(store: Any, client: Any) -> Any:
    # cost: the feature table imports this package in every run's process (registry/feature.py);
    # the stores, the service and the HTTP client are imported when a registry is asked for
    from flightlog.registry.service import LocalRegistry
    from flightlog.registry.stores import open_registry_store  # cost: as above

    return LocalRegistry(client, open_registry_store(store))


def _remote(store: Any, client: Any) -> Any:
    from flightlog.registry.remote import RemoteRegistry  # cost: as above

    return RemoteRegistry(client, store.http)


def is_model_ref(text: str) -> bool:
    """Whether a path a user gave is a model reference (``models:/…``) rather than a file."""
    return isinstance(text, str) and text.startswith(SCHEME)


def resolve(ref: str, client: Any, *, project: str | None = None) -> ModelVersion:
    """The version ``ref`` names (``models:/fraud@production``, ``fraud@production``,
    ``models:/fraud/3``, ``fraud/3``, or ``fraud`` for its latest), in ``project`` or the
    one project the model is found in (among those the caller's token may read).

    Raises `flightlog.errors.NotFound` for an unknown model, alias or version,
    `flightlog.registry.refs.AmbiguousModel` when several projects have the model and none is
    named (never a silent pick), and `flightlog.errors.InvalidInput` for a reference that is not one."""
    registry: Any = Registry(client)
    found: ModelVersion = registry.resolve(ref, project)
    return found
