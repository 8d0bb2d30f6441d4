"""The plugin manager: the built-in features and the installed third-party ones, loaded once.

Built-in features are listed by module name in ``BUILTIN`` (their entry points, kept here so
that a source checkout works without reinstalling); third-party ones come from the
``flightlog`` entry-point group. Nothing is imported for a feature until the table is first
asked for, and each feature module is small: it names its commands (`CommandRef`) and imports
its operations or analyzers only inside the hook that returns them.

A feature that fails to load (a broken or outdated third-party package) is reported on stderr
and left out: one bad plugin never stops ``flightlog`` itself.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable, Iterable
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from flightlog.notices import notice
from flightlog.plugins.specs import PROJECT, CommandRef, FeatureSpec

if TYPE_CHECKING:
    import click

    from flightlog.server.operations import Operation

__all__ = ["BUILTIN", "Features", "features", "load_features"]

#: the built-in features, in the order their commands and routes are assembled
BUILTIN: tuple[str, ...] = (
    "flightlog.runner.feature",
    "flightlog.data.feature",
    "flightlog.server.feature",
    "flightlog.diagnose.feature",
    "flightlog.alerts.feature",
    "flightlog.importers.feature",
    "flightlog.sweeps.feature",
    "flightlog.pipeline.feature",
)


class Features:
    """The table: every registered feature's answers to each hook, flattened."""

    def __init__(self, manager: pluggy.PluginManager) -> None:
        self.manager = manager
        self.hook = manager.hook

    @property
    def names(self) -> list[str]:
        """The registered features, built-in first, in registration order."""
        return [name for name, _ in self.manager.list_name_plugin()]

    def cli_commands(self) -> list[click.Command | CommandRef]:
        return self._collect("flightlog_cli_commands")

    def api_operations(self) -> list[Operation]:
        return self._collect("flightlog_api_operations")

    def diagnosis_analyzers(self) -> list[Callable[..., Any]]:
        return self._collect("flightlog_diagnosis_analyzers")

    def _collect(self, hook: str) -> list[Any]:
        """Every feature's answer to an argument-less hook, flattened in registration order.

        Each implementation is called on its own, not through pluggy's all-or-nothing call,
        so that one feature whose hook raises is reported and left out while the others
        still count."""
        items: list[Any] = []
        for impl in getattr(self.hook, hook).get_hookimpls():  # registration order
            try:
                answer = impl.function()
                items.extend(answer or ())
            except Exception as exc:  # noqa: BLE001 - a broken feature is reported and left out
                _warn(f"{impl.plugin_name!r} ({hook})", exc)
        return items


def _warn(what: str, exc: BaseException) -> None:
    notice(f"warning: the feature {what} was left out: {type(exc).__name__}: {exc}")


def load_features(*, builtin: Iterable[str] = BUILTIN, entry_points: bool = True) -> Features:
    """A fresh table: the ``builtin`` feature modules, then the installed third-party features."""
    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(FeatureSpec)
    for module_name in builtin:
        try:
            manager.register(importlib.import_module(module_name), name=module_name)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module_name.startswith(exc.name):
                _warn(repr(module_name), exc)  # else: that feature's package is not in this build
        except Exception as exc:  # noqa: BLE001 - a broken feature is reported and left out
            _warn(repr(module_name), exc)
    if entry_points:
        for ep in importlib.metadata.entry_points(group=PROJECT):
            if manager.has_plugin(ep.name) or manager.is_blocked(ep.name):
                continue
            try:
                plugin = ep.load()
                manager.register(plugin, name=ep.name if isinstance(plugin, ModuleType) else None)
            except Exception as exc:  # noqa: BLE001 - a broken third-party package never stops flightlog
                _warn(f"{ep.name!r} ({ep.value})", exc)
    return Features(manager)


@cache
def features() -> Features:
    """This process's table, loaded on first use."""
    return load_features()
