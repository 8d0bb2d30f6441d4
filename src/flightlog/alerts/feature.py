"""Alerts as a feature: `flightlog alerts`, the ``/api/v1/alerts`` routes, the evaluation beside
a run of ``flightlog run`` and beside a server, the built-in rule kinds and notifiers, and the
check of a rules file named by ``--alerts``.

Its entry in the feature table (`flightlog.plugins`, docs/plugins.md): everything is named or
imported lazily, inside its hook, so loading the table imports nothing of alerting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flightlog.plugins import CommandRef, Watcher, hookimpl
from flightlog.plugins.operations import Operation

__all__ = [
    "flightlog_alert_rule_kinds",
    "flightlog_api_operations",
    "flightlog_check_alert_rules",
    "flightlog_cli_commands",
    "flightlog_notifiers",
    "flightlog_runner_start",
    "flightlog_server_start",
]


@hookimpl
def flightlog_cli_commands() -> list[CommandRef]:
    return [
        CommandRef("flightlog.alerts.cli", "alerts_group", "alerts"),
    ]


@hookimpl
def flightlog_api_operations() -> list[Operation]:
    # imported here: the API module needs Starlette (flightlog[server]), which the CLI does not
    from flightlog.alerts.api import OPERATIONS

    return list(OPERATIONS)


@hookimpl
def flightlog_check_alert_rules(path: str) -> bool:
    """`flightlog run --alerts FILE`, `flightlog server --alerts FILE`: the file must parse before
    anything starts (`RulesFileError` names each problem's line)."""
    from flightlog.alerts.config import load_config  # cost: a command given --alerts only

    load_config(path)
    return True


@hookimpl
def flightlog_runner_start(run: Any, options: Any) -> Watcher | None:
    """The live alert monitor beside a run of ``flightlog run`` (a NullMonitor without rules)."""
    # light: it imports the engine only when rules apply
    from flightlog.alerts.monitor import start_monitor

    return start_monitor(run, getattr(options, "alerts", None))


@hookimpl
def flightlog_server_start(home: Any, config: Any) -> Watcher | None:
    """The server's background evaluation of every run that reports to it, when a rules file is
    there (``flightlog server --alerts``, else the usual places); None without one."""
    from flightlog.alerts.service import start_alert_service  # cost: a server's start only

    return start_alert_service(home, config.store_uri, getattr(config, "alerts", None))


@hookimpl
def flightlog_alert_rule_kinds() -> list[Any]:
    from flightlog.alerts.kinds import KINDS  # only where rules are read

    return list(KINDS.values())


@hookimpl
def flightlog_notifiers() -> dict[str, Callable[[Any, int], Any]]:
    from flightlog.alerts.notifiers import NOTIFIER_KINDS  # only where rules are read

    return dict(NOTIFIER_KINDS)
