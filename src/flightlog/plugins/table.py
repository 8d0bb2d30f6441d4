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
import sys
from collections.abc import Callable, Iterable
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from flightlog.errors import MissingExtra
from flightlog.notices import notice
from flightlog.plugins.operations import Operation
from flightlog.plugins.specs import (
    PROJECT,
    CommandMode,
    CommandRef,
    FeatureSpec,
    RunAction,
    StoreMigrations,
)

if TYPE_CHECKING:
    import click

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
    "flightlog.export.feature",
    "flightlog.registry.feature",
    "flightlog.serving.feature",
    "flightlog.mlflow_server.feature",
    "flightlog.triage.feature",
)


class Features:
    """The table: every registered feature's answers to each hook, flattened."""

    def __init__(self, manager: pluggy.PluginManager) -> None:
        self.manager = manager
        self.hook = manager.hook
        self._record_kinds: frozenset[str] | None = None
        self._listing_fields: dict[str, Callable[..., Any]] | None = None

    @property
    def names(self) -> list[str]:
        """The registered features, built-in first, in registration order."""
        return [name for name, _ in self.manager.list_name_plugin()]

    def cli_commands(self) -> list[click.Command | CommandRef]:
        return self._collect("flightlog_cli_commands")

    def api_operations(self) -> list[Operation]:
        return self._collect("flightlog_api_operations")

    def command_modes(self, command: str) -> list[CommandMode]:
        """The modes features add to the command named ``command`` (`CommandMode`)."""
        return [m for m in self._collect("flightlog_command_modes") if m.command == command]

    def diagnosis_analyzers(self) -> list[Callable[..., Any]]:
        return self._collect("flightlog_diagnosis_analyzers")

    def store_migrations(self) -> list[StoreMigrations]:
        return self._collect("flightlog_store_migrations")

    def run_action(self, name: str) -> RunAction | None:
        """The first feature's action of that name (`RunAction`), or None when none offers it."""
        return next((a for a in self._collect("flightlog_run_actions") if a.name == name), None)

    def diagnosis_reports(self) -> list[Callable[..., Any]]:
        return self._collect("flightlog_diagnosis_reports")

    def alert_rule_kinds(self) -> list[Any]:
        return self._collect("flightlog_alert_rule_kinds")

    def notifiers(self) -> dict[str, Callable[..., Any]]:
        return self._merge("flightlog_notifiers")

    def listing_fields(self) -> dict[str, Callable[..., Any]]:
        if self._listing_fields is None:  # asked once per row of a listing: computed once
            self._listing_fields = self._merge("flightlog_listing_fields")
        return self._listing_fields

    def metrics_text(self) -> list[Callable[..., str]]:
        return self._collect("flightlog_metrics_text")

    def ask(self, hook: str, /, **kwargs: Any) -> Any:
        """The answer to one of the core's questions (``flightlog_classify_failure``,
        ``flightlog_diagnose_run``, ...: the hooks that take arguments and answer one thing):
        the first feature's, in registration order (built-in features first), that is not
        None; None when no feature answers. An implementation's error is the caller's: it
        propagates, as the function the core calls would raise it."""
        for impl in getattr(self.hook, hook).get_hookimpls():  # registration order
            answer = impl.function(**{arg: kwargs[arg] for arg in impl.argnames})
            if answer is not None:
                return answer
        return None

    def need(self, hook: str, /, *, needed_by: str, install: str, **kwargs: Any) -> Any:
        """`ask`, where an answer is needed: `MissingExtra` saying that ``needed_by`` needs a
        feature and what to ``install`` when none answers (a feature absent from this installation)."""
        answer = self.ask(hook, **kwargs)
        if answer is None:
            raise MissingExtra(
                f"{needed_by} needs a flightlog feature that is not installed here "
                f"(none answers {hook}): install {install}"
            )
        return answer

    @property
    def record_kinds(self) -> frozenset[str]:
        """The record kinds some feature wants `flightlog_record` for (empty: never called)."""
        if self._record_kinds is None:
            self._record_kinds = frozenset(self._collect("flightlog_record_kinds"))
        return self._record_kinds

    def call(self, hook: str, /, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call every feature's implementation of a hook with arguments, each on its own: one
        that raises is reported on stderr (and to ``on_error`` when given) and the others still
        run. Returns (feature, answer) for the answers that are not None. Never raises."""
        on_error = kwargs.pop("_on_error", None)
        answers: list[tuple[str, Any]] = []
        try:
            impls = getattr(self.hook, hook).get_hookimpls()
        except Exception as exc:  # noqa: BLE001 - the table itself must never break a run
            _report(f"the feature table cannot call {hook}: {type(exc).__name__}: {exc}", on_error)
            return answers
        for impl in impls:
            try:
                answer = impl.function(**{arg: kwargs[arg] for arg in impl.argnames})
            except Exception as exc:  # noqa: BLE001 - a feature's hook never reaches the user's code
                _report(f"the feature {impl.plugin_name!r} failed in {hook}: {type(exc).__name__}: {exc}", on_error)
                continue
            if answer is not None:
                answers.append((impl.plugin_name, answer))
        return answers

    def implemented(self, hook: str) -> bool:
        """Whether any registered feature implements ``hook`` (so that a caller can skip the work
        of forming its arguments)."""
        return bool(getattr(self.hook, hook).get_hookimpls())

    def _merge(self, hook: str) -> dict[str, Any]:
        """Every feature's answer to an argument-less hook that returns names, merged; the first
        feature to give a name keeps it (built-in features register first: core names win)."""
        merged: dict[str, Any] = {}
        for impl in getattr(self.hook, hook).get_hookimpls():  # registration order
            try:
                answer = impl.function()
                for key, value in dict(answer or {}).items():
                    merged.setdefault(key, value)
            except Exception as exc:  # noqa: BLE001 - a broken feature is reported and left out
                _warn(f"{impl.plugin_name!r} ({hook})", exc)
        return merged

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


def _report(message: str, on_error: Callable[[str], None] | None) -> None:
    stream = getattr(sys.stderr, "flightlog_passthrough", sys.stderr)  # past the SDK's console capture
    try:
        stream.write(f"flightlog: warning: {message}\n")
        stream.flush()
    except (OSError, ValueError):
        pass
    if on_error is not None:
        try:
            on_error(message)
        except Exception:  # noqa: BLE001 - reporting a failure must not fail in turn
            pass


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
        # installed packages' entry points (importlib.metadata is loaded anyway: pluggy imports it)
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
