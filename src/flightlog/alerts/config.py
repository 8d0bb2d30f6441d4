"""A rules file: settings, rules and notifiers, read and checked in one pass; and where it is
found (``--alerts FILE``, else ``flightlog.alerts.yaml`` in the working directory, else
``FLIGHTLOG_HOME/alerts.yaml``).

    settings:
      interval: 5s              # how often live evaluation runs (runner, server, alerts watch)
      group_by: [run]           # alerts of one run go out in one notification
      repeat_interval: 4h       # re-notify alerts still firing after this long
      send_resolved: true
      external_url: https://flightlog.example.com   # links: {external_url}/runs/{id}
    rules: [...]                # see flightlog.alerts.rules and the kinds
    notifiers: [...]            # see flightlog.alerts.notifiers
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flightlog.alerts.discovery import FILE_NAME, HOME_FILE_NAME, discover
from flightlog.alerts.kinds import rule_kinds
from flightlog.alerts.notifiers import Notifier, notifier_kinds
from flightlog.alerts.rules import NAME_RE, RESERVED_LABELS, Rule
from flightlog.alerts.schema import Fields
from flightlog.alerts.templates import Template
from flightlog.alerts.types import SEVERITIES
from flightlog.alerts.yamlsource import Located, Problem, RulesFileError, load_located
from flightlog.errors import InvalidInput, NotFound
from flightlog.query import parse_filter

__all__ = [
    "Settings",
    "AlertConfig",
    "load_config",
    "parse_config",
    "parse_notifiers",
    "discover",
    "FILE_NAME",
    "HOME_FILE_NAME",
]


@dataclass(frozen=True)
class Settings:
    interval: float = 5.0
    group_by: tuple[str, ...] = ("run",)
    repeat_interval: float = 4 * 3600.0
    send_resolved: bool = True
    external_url: str | None = None
    lookback: float = 600.0  # a server that starts late still judges runs that ended this recently


@dataclass
class AlertConfig:
    source: str
    settings: Settings = field(default_factory=Settings)
    rules: list[Rule] = field(default_factory=list)
    notifiers: list[Notifier] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def rule(self, name: str) -> Rule | None:
        return next((r for r in self.rules if r.name == name), None)

    def missing_env(self) -> list[str]:
        return sorted({n for nt in self.notifiers for n in nt.references() if n not in os.environ})


def load_config(path: str | os.PathLike[str]) -> AlertConfig:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotFound(f"no rules file at {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read the rules file {p}: {exc}") from None
    return parse_config(text, str(path))


def parse_config(text: str, source: str = "<rules>") -> AlertConfig:
    doc = load_located(text, source)
    problems: list[Problem] = []
    if doc.value is None:
        doc.value = {}
    top = Fields(doc, (), problems)
    config = AlertConfig(source)
    if top.ok:
        config.settings = _settings(doc, problems) if top.has("settings") else Settings()
        top.raw("settings")
        config.rules = _rules(doc, top.raw("rules"), problems)
        config.notifiers = _notifiers(doc, top.raw("notifiers"), problems)
        top.finish()
    errors = [p for p in problems if not p.warning]
    if errors:
        raise RulesFileError(source, errors)
    config.warnings = [p for p in problems if p.warning]
    return config


def _settings(doc: Located, problems: list[Problem]) -> Settings:
    f = Fields(doc, ("settings",), problems)
    defaults = Settings()
    group_by = f.text_list("group_by")
    url = f.text("external_url")
    if url is not None and not url.startswith(("http://", "https://")):
        f.fail("external_url", "must be an http(s) URL, e.g. https://flightlog.example.com")
        url = None
    settings = Settings(
        interval=f.duration("interval", default=defaults.interval) or defaults.interval,
        group_by=tuple(group_by) if group_by else defaults.group_by,
        repeat_interval=f.duration("repeat_interval", default=defaults.repeat_interval) or defaults.repeat_interval,
        send_resolved=f.flag("send_resolved", default=True),
        external_url=url.rstrip("/") if url else None,
        lookback=f.duration("lookback", default=defaults.lookback) or defaults.lookback,
    )
    f.finish()
    return settings


def _items(doc: Located, raw: Any, key: str, problems: list[Problem]) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(Problem(doc.line((key,)), (key,), "must be a list (each item starting with '- ')"))
        return []
    return raw


def _rules(doc: Located, raw: Any, problems: list[Problem]) -> list[Rule]:
    rules: list[Rule] = []
    seen: dict[str, int] = {}
    for i, _ in enumerate(_items(doc, raw, "rules", problems)):
        path = ("rules", i)
        f = Fields(doc, path, problems)
        if not f.ok:
            continue
        name = f.text("name", required=True)
        if name is not None and not NAME_RE.match(name):
            f.fail("name", f"{name!r} is not a valid rule name: letters, digits, '_', '-', '.', ':' (at most 100)")
            name = None
        if name is not None:
            if name in seen:
                f.fail("name", f"{name!r} is also the name of rules[{seen[name]}]: rule names must be unique")
            seen[name] = i
        kinds = rule_kinds()  # the feature table's (alerts' own and any other feature's)
        kind_name = f.choice("kind", tuple(kinds), required=True)
        severity = f.choice("severity", SEVERITIES, default="warning") or "warning"
        labels = f.string_map("labels")
        for key in labels:
            if key in RESERVED_LABELS:
                f.fail(("labels", key), f"{key!r} is set by flightlog; choose another label name")
        projects = f.text_list("project")
        filter_ = f.text("filter")
        if filter_ is not None:
            try:
                parse_filter(filter_)
            except InvalidInput as exc:
                f.fail("filter", exc.message)
                filter_ = None
        send_resolved = f.flag("send_resolved", default=True) if f.has("send_resolved") else None
        description = f.text("description")
        kind = kinds.get(kind_name or "")
        spec = kind.parse(f) if kind is not None else None
        summary_text = f.text("summary")
        template = None
        if kind is not None:
            try:
                template = Template.parse(summary_text or kind.default_summary, kind.fields)
            except InvalidInput as exc:
                f.fail("summary", exc.message)
        f.finish(() if kind is not None else f.data.keys())
        if name is None or kind is None or spec is None or template is None:
            continue
        rules.append(
            Rule(
                name,
                kind.name,
                severity,
                spec,
                template,
                labels,
                tuple(projects) if projects else None,
                filter_,
                send_resolved,
                description,
                doc.line(path),
            )
        )
    return rules


def _notifiers(doc: Located, raw: Any, problems: list[Problem]) -> list[Notifier]:
    return [n for n, _ in parse_notifiers(doc, raw, problems)]


def parse_notifiers(
    doc: Located,
    raw: Any,
    problems: list[Problem],
    *,
    kinds: tuple[str, ...] | None = None,
    extra: Callable[[Fields, str | None], Any] | None = None,
) -> list[tuple[Notifier, Any]]:
    """The ``notifiers:`` list of a document, each entry checked, names unique. ``kinds`` limits
    which notifier kinds it may use; ``extra(fields, kind)`` reads fields of the caller's own
    before the notifier's parser does (the registry's ``events:``, ``models:``, ``secret:``),
    and its answer comes paired with the notifier."""
    out: list[tuple[Notifier, Any]] = []
    names: set[str] = set()
    for i, _ in enumerate(_items(doc, raw, "notifiers", problems)):
        f = Fields(doc, ("notifiers", i), problems)
        if not f.ok:
            continue
        parsers = notifier_kinds()  # the feature table's (alerts' own and any other feature's)
        kind = f.choice("kind", kinds or tuple(parsers), required=True)
        more = None if extra is None else extra(f, kind)
        if kind is None or kind not in parsers:
            f.finish(f.data.keys())
            continue
        notifier = parsers[kind](f, i)
        f.finish()
        if notifier is None:
            continue
        if notifier.name in names:
            f.fail("name", f"{notifier.name!r} names another notifier too: notifier names must be unique")
            continue
        names.add(notifier.name)
        out.append((notifier, more))
    return out
