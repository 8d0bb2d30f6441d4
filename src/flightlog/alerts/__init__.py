"""Alerts worth waking up for: rules as data, Prometheus-like states, silences, notifiers.

    from flightlog.alerts import load_config, replay_run
    config = load_config("flightlog.alerts.yaml")          # RulesFileError names line and field
    result = replay_run(flightlog.Client(), config, "3f2a9c")   # what would have fired, when

Live evaluation runs in ``flightlog run`` (``start_monitor``), in the server and in
``flightlog alerts watch``; the user guide is docs/alerting.md. Names are imported on first
use, so that the runner pays nothing for alerting when no rules file is there.
"""

from __future__ import annotations

from flightlog.lazy import lazy_attributes

__all__ = [
    "AlertConfig",
    "Settings",
    "load_config",
    "parse_config",
    "discover",
    "Rule",
    "Alert",
    "Signal",
    "Silence",
    "RulesFileError",
    "AlertEngine",
    "AlertStore",
    "MemoryAlertStore",
    "open_alert_store",
    "Notification",
    "webhook_payload",
    "replay_run",
    "start_monitor",
    "KINDS",
    "NOTIFIER_KINDS",
]

_WHERE = {
    "AlertConfig": ".config",
    "Settings": ".config",
    "load_config": ".config",
    "parse_config": ".config",
    "discover": ".config",
    "Rule": ".rules",
    "Alert": ".types",
    "Signal": ".types",
    "Silence": ".silences",
    "RulesFileError": ".yamlsource",
    "AlertEngine": ".engine",
    "AlertStore": ".stores",
    "MemoryAlertStore": ".stores",
    "open_alert_store": ".stores",
    "Notification": ".payload",
    "webhook_payload": ".payload",
    "replay_run": ".replay",
    "start_monitor": ".monitor",
    "KINDS": ".kinds",
    "NOTIFIER_KINDS": ".notifiers",
}


__getattr__, __dir__ = lazy_attributes(__name__, _WHERE, eager=tuple(__all__))
