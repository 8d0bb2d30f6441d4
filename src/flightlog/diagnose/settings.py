"""Per-project diagnosis settings: the thresholds of :class:`~.evidence.Thresholds` and the
direction of metrics, from a small YAML file.

Where it is found (the later one wins, key by key): ``$FLIGHTLOG_HOME/diagnose.yaml``, then
``flightlog.diagnose.yaml`` in the working directory — the same places as the team runbook and
the alert rules. Settings under ``defaults`` apply to every project; those under
``projects.<name>`` to that project only::

    defaults:
      startup_s: 5                 # a project whose imports take seconds: start-up below 5 s is fine
    projects:
      vision:
        startup_s: 30
        queue_wait_s: 600
        higher_is_better: [dice, "val/*iou*"]    # metric names or globs (metric_regressed)
        lower_is_better: [wer]
        metric_regression: 0.05                  # report a final metric 5 % worse than the baseline's
        baseline: 3f2a9c                         # the run every diagnosis of the project compares with

A file that is not valid stops the diagnosis with every problem, naming the file and the key
(as the runbook does): a typo must not silently fall back to a default.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import yaml

from flightlog.diagnose.evidence import Thresholds
from flightlog.diagnose.runbook import config_files
from flightlog.errors import InvalidInput

__all__ = [
    "FILE_NAME",
    "HOME_FILE_NAME",
    "settings_files",
    "load_thresholds",
    "thresholds_for",
    "parse_settings",
    "pinned_baseline",
    "BASELINE_KEY",
]

FILE_NAME = "flightlog.diagnose.yaml"
HOME_FILE_NAME = "diagnose.yaml"
_FIELDS = {f.name: f for f in dataclasses.fields(Thresholds)}
#: not a threshold: the run (id or unique prefix) a project pins as every diagnosis's baseline
BASELINE_KEY = "baseline"
_SECTIONS = {"defaults", "projects"}


def settings_files(home: str | os.PathLike[str] | None = None, cwd: str | os.PathLike[str] | None = None) -> list[Path]:
    """The settings files that exist, in the order they apply (later wins)."""
    return config_files(HOME_FILE_NAME, FILE_NAME, home, cwd)


def load_thresholds(
    project: str | None, home: str | os.PathLike[str] | None = None, cwd: str | os.PathLike[str] | None = None
) -> Thresholds:
    """The thresholds for ``project``: the built-in defaults, then each file's ``defaults``,
    then each file's section for the project."""
    overrides = _merged(project, home, cwd)
    overrides.pop(BASELINE_KEY, None)
    return dataclasses.replace(Thresholds(), **overrides)


def pinned_baseline(
    project: str | None, home: str | os.PathLike[str] | None = None, cwd: str | os.PathLike[str] | None = None
) -> str | None:
    """The run the settings pin as ``project``'s baseline (``baseline: RUN``), None without one."""
    value = _merged(project, home, cwd).get(BASELINE_KEY)
    return str(value) if value else None


def _merged(
    project: str | None, home: str | os.PathLike[str] | None, cwd: str | os.PathLike[str] | None
) -> dict[str, Any]:
    """Every file's ``defaults``, then every file's section for ``project`` (later wins)."""
    overrides: dict[str, Any] = {}
    parsed = []
    for path in settings_files(home, cwd):
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"cannot read the diagnosis settings {path}: {exc.strerror or exc}") from exc
        parsed.append(parse_settings(text, str(path)))
    for doc in parsed:
        overrides.update(doc.get("defaults", {}))
    for doc in parsed:
        overrides.update(doc.get("projects", {}).get(project or "", {}))
    return overrides


def thresholds_for(reader: Any, project: str | None, cwd: str | os.PathLike[str] | None = None) -> Thresholds:
    """:func:`load_thresholds` with the home a reader (a Client, over a store or a server) uses."""
    from flightlog.diagnose.reader import reader_home

    return load_thresholds(project, reader_home(reader), cwd)


def parse_settings(text: str, source: str = "<settings>") -> dict[str, dict[str, Any]]:
    """``{"defaults": {...}, "projects": {name: {...}}}`` with values checked and converted;
    :class:`~flightlog.errors.InvalidInput` listing every problem otherwise."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"invalid diagnosis settings {source}: not valid YAML: {exc}") from exc
    if raw is None:
        return {}
    errors: list[str] = []
    if not isinstance(raw, dict):
        raise InvalidInput(f"invalid diagnosis settings {source}: expected a mapping with `defaults` and/or `projects`")
    out: dict[str, Any] = {"defaults": {}, "projects": {}}
    for key in raw:
        if key not in _SECTIONS:
            errors.append(f"{source}: unknown section {key!r} (sections: defaults, projects)")
    out["defaults"] = _section(raw.get("defaults") or {}, "defaults", source, errors)
    projects = raw.get("projects") or {}
    if not isinstance(projects, dict):
        errors.append(f"{source}: projects: expected a mapping of project name to settings")
        projects = {}
    for name, section in projects.items():
        out["projects"][str(name)] = _section(section or {}, f"projects.{name}", source, errors)
    if errors:
        raise InvalidInput("invalid diagnosis settings:\n" + "\n".join(errors), details={"errors": errors})
    return out


def _section(section: Any, where: str, source: str, errors: list[str]) -> dict[str, Any]:
    if not isinstance(section, dict):
        errors.append(f"{source}: {where}: expected a mapping of setting to value")
        return {}
    out: dict[str, Any] = {}
    for key, value in section.items():
        if key == BASELINE_KEY:
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                out[BASELINE_KEY] = str(value).strip()
            else:
                errors.append(f"{source}: {where}.{key}: expected a run id or unique prefix, got {value!r}")
            continue
        field = _FIELDS.get(str(key))
        if field is None:
            errors.append(
                f"{source}: {where}.{key}: unknown setting (settings: {', '.join(sorted([*_FIELDS, BASELINE_KEY]))})"
            )
            continue
        converted = _convert(value, field.default)
        if converted is None:
            kind = (
                "a list of metric names or globs"
                if isinstance(field.default, tuple)
                else ("a whole number" if isinstance(field.default, int) else "a number")
            )
            errors.append(f"{source}: {where}.{key}: expected {kind} (0 or more), got {value!r}")
            continue
        out[str(key)] = converted
    return out


def _convert(value: Any, default: Any) -> Any:
    """``value`` as the type of ``default``, or None when it is not one."""
    if isinstance(default, tuple):
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(x, str) and x for x in items):
            return None
        return tuple(items)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    if isinstance(default, int):
        return int(value) if float(value).is_integer() else None
    return float(value)
