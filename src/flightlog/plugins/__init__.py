"""The feature table: what each feature adds to flightlog, declared in one place.

A feature is a package with one module of hook implementations (``flightlog_cli_commands``,
``flightlog_api_operations``, ``flightlog_diagnosis_analyzers``, ... in `specs`); the CLI, the
server and the diagnosis engine read the table instead of importing features by hand.
Built-in features and third-party packages plug in the same way: a third-party package
names its module under the ``flightlog`` entry-point group (docs/plugins.md).
"""

from __future__ import annotations

from flightlog.plugins.specs import (
    PROJECT,
    CommandMode,
    CommandRef,
    Ref,
    RunAction,
    StoreMigrations,
    Watcher,
    hookimpl,
    hookspec,
)
from flightlog.plugins.table import Features, features, load_features

__all__ = [
    "PROJECT",
    "CommandMode",
    "CommandRef",
    "Features",
    "Ref",
    "RunAction",
    "StoreMigrations",
    "Watcher",
    "features",
    "hookimpl",
    "hookspec",
    "load_features",
]
