"""Alerts as a feature: `flightlog alerts`.

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): what it adds to the
CLI, named lazily so that nothing heavy is imported before it is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flightlog.plugins import CommandRef, Ref, Watcher, hookimpl

__all__ = [
    "flightlog_cli_commands",
    "flightlog_services",
    "flightlog_runner_start",
    "flightlog_alert_rule_kinds",
    "flightlog_notifiers",
]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [
        CommandRef("flightlog.alerts.cli", "alerts_group", "alerts"),
    ]


@hookimpl
def flightlog_services() -> dict[str, Ref]:
    # `flightlog run --alerts FILE`: the file must parse before the workload starts
    return {"check_alert_rules": Ref("flightlog.alerts.config", "load_config")}


@hookimpl
def flightlog_runner_start(run: Any, options: Any) -> Watcher | None:
    """The live alert monitor beside a run of ``flightlog run`` (a NullMonitor without rules)."""
    # light: it imports the engine only when rules apply
    from flightlog.alerts.monitor import start_monitor

    return start_monitor(run, getattr(options, "alerts", None))


@hookimpl
def flightlog_alert_rule_kinds() -> list[Any]:
    from flightlog.alerts.kinds import KINDS  # only where rules are read

    return list(KINDS.values())


@hookimpl
def flightlog_notifiers() -> dict[str, Callable[[Any, int], Any]]:
    from flightlog.alerts.notifiers import NOTIFIER_KINDS  # only where rules are read

    return dict(NOTIFIER_KINDS)
