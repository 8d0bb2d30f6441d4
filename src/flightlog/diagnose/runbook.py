"""The runbook: known causes and their fixes, as data.

Built-in entries ship in ``runbook.yaml`` next to this module; a team adds its own in
``flightlog.runbook.yaml`` (the working directory) or ``$FLIGHTLOG_HOME/runbook.yaml``. An
entry with the id of an earlier one replaces it (team entries win). An entry matches when
every condition it gives holds: the report has a finding of one of its ``category`` values
(confidence 0.4 or more), its ``exception`` regex finds the exception (type and message), its
``log`` regex finds a log line.

A team file that is not valid fails loudly, naming the file, the line and the field.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from flightlog.diagnose.taxonomy import CATEGORIES
from flightlog.errors import InvalidInput

__all__ = ["RunbookEntry", "load_runbook", "runbook_files", "match_runbook", "parse_runbook", "TEAM_FILE"]

TEAM_FILE = "flightlog.runbook.yaml"
_FIELDS = {"id", "title", "match", "advice", "links"}
_MATCH_FIELDS = {"category", "exception", "log"}
#: a finding must be at least this likely for an entry keyed on its category to show
CATEGORY_FLOOR = 0.4


@dataclass(frozen=True)
class RunbookEntry:
    id: str
    title: str
    advice: tuple[str, ...]
    categories: tuple[str, ...] = ()
    exception: re.Pattern[str] | None = None
    log: re.Pattern[str] | None = None
    links: tuple[str, ...] = ()
    source: str = "built-in"
    line: int | None = None

    def to_dict(self, matched: list[str]) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "advice": list(self.advice),
            "links": list(self.links),
            "source": self.source if self.line is None else f"{self.source}:{self.line}",
            "matched": matched,
        }


@dataclass
class _Ctx:
    path: str
    errors: list[str] = field(default_factory=list)

    def fail(self, node: yaml.Node, message: str) -> None:
        self.errors.append(f"{self.path}:{node.start_mark.line + 1}: {message}")


def config_files(
    home_name: str,
    local_name: str,
    home: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> list[Path]:
    """``FLIGHTLOG_HOME/<home_name>`` and ``<cwd>/<local_name>``, those that exist, in the order
    they apply (later wins): where the team's runbook and the diagnosis settings are found."""
    out = []
    if home is not None and (Path(home) / home_name).is_file():
        out.append(Path(home) / home_name)
    local = Path(cwd or os.getcwd()) / local_name
    if local.is_file() and local not in out:
        out.append(local)
    return out


def runbook_files(home: str | os.PathLike[str] | None = None, cwd: str | os.PathLike[str] | None = None) -> list[Path]:
    """Team runbooks that exist, in the order they apply (later wins)."""
    return config_files("runbook.yaml", TEAM_FILE, home, cwd)


def load_runbook(
    home: str | os.PathLike[str] | None = None, cwd: str | os.PathLike[str] | None = None
) -> list[RunbookEntry]:
    """The built-in entries, then the team's (an entry replaces an earlier one with its id)."""
    text = resources.files("flightlog.diagnose").joinpath("runbook.yaml").read_text(encoding="utf-8")
    entries = {e.id: e for e in parse_runbook(text, "built-in")}
    for path in runbook_files(home, cwd):
        try:
            team_text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInput(f"cannot read the runbook {path}: {exc.strerror or exc}") from None
        for e in parse_runbook(team_text, str(path)):
            entries.pop(e.id, None)
            entries[e.id] = e
    team = [e for e in entries.values() if e.source != "built-in"]
    return [*team, *(e for e in entries.values() if e.source == "built-in")]


def parse_runbook(text: str, path: str) -> list[RunbookEntry]:
    """Entries of one runbook file; InvalidInput lists every problem with its line and field."""
    ctx = _Ctx(path)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise InvalidInput(f"{path}{where}: not valid YAML: {getattr(exc, 'problem', None) or exc}") from None
    if root is None:
        return []
    if isinstance(root, yaml.MappingNode):  # {entries: [...]} is accepted too
        inner = _get(root, "entries")
        if inner is None:
            ctx.fail(root, "expected a list of entries (or a mapping with 'entries: [...]')")
            raise InvalidInput("\n".join(ctx.errors))
        root = inner
    if not isinstance(root, yaml.SequenceNode):
        ctx.fail(root, "expected a list of entries")
        raise InvalidInput("\n".join(ctx.errors))
    entries: list[RunbookEntry] = []
    seen: set[str] = set()
    for i, node in enumerate(root.value, 1):
        entry = _entry(ctx, node, i)
        if entry is None:
            continue
        if entry.id in seen:
            ctx.fail(node, f"entry {i}: id {entry.id!r} is used twice in this file")
        seen.add(entry.id)
        entries.append(entry)
    if ctx.errors:
        ordered = sorted(ctx.errors, key=lambda e: int(e[len(path) + 1 :].split(":", 1)[0] or 0))
        raise InvalidInput("invalid runbook:\n" + "\n".join(ordered))
    return entries


def _get(node: yaml.MappingNode, key: str) -> yaml.Node | None:
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return v
    return None


def _entry(ctx: _Ctx, node: yaml.Node, index: int) -> RunbookEntry | None:
    if not isinstance(node, yaml.MappingNode):
        ctx.fail(node, f"entry {index}: expected a mapping with id, title, match and advice")
        return None
    data: dict[str, yaml.Node] = {}
    keys: dict[str, yaml.Node] = {}
    for k, v in node.value:
        name = k.value if isinstance(k, yaml.ScalarNode) else str(k)
        data[name], keys[name] = v, k
    label = f"entry {index}"
    ident = _scalar(ctx, data.get("id"), f"{label}: id", node)
    if ident:
        label = f"entry {ident!r}"
    for name, k in keys.items():
        if name not in _FIELDS:
            ctx.fail(k, f"{label}: unknown field {name!r} (fields: {', '.join(sorted(_FIELDS))})")
    title = _scalar(ctx, data.get("title"), f"{label}: title", node)
    advice = _strings(ctx, data.get("advice"), f"{label}: advice", node, required=True)
    links = _strings(ctx, data.get("links"), f"{label}: links", node, required=False)
    match = data.get("match")
    categories: tuple[str, ...] = ()
    exception = log = None
    if match is None:
        ctx.fail(node, f"{label}: match is required (category, exception and/or log)")
    elif not isinstance(match, yaml.MappingNode):
        ctx.fail(match, f"{label}: match must be a mapping with category, exception and/or log")
    else:
        fields = {}
        for k, v in match.value:
            name = k.value if isinstance(k, yaml.ScalarNode) else str(k)
            if name not in _MATCH_FIELDS:
                ctx.fail(k, f"{label}: unknown field match.{name} (use category, exception or log)")
            fields[name] = v
        if not fields:
            ctx.fail(match, f"{label}: match needs at least one of category, exception, log")
        if "category" in fields:
            categories = _strings(
                ctx, fields["category"], f"{label}: match.category", match, required=True, single_ok=True
            )
            for c in categories:
                if c not in CATEGORIES:
                    ctx.fail(
                        fields["category"],
                        f"{label}: match.category: unknown category {c!r} (use one of: {', '.join(CATEGORIES)})",
                    )
        exception = _regex(ctx, fields.get("exception"), f"{label}: match.exception")
        log = _regex(ctx, fields.get("log"), f"{label}: match.log")
    if not ident or not title or not advice:
        return None
    return RunbookEntry(
        ident,
        title,
        advice,
        categories,
        exception,
        log,
        links,
        ctx.path if ctx.path != "built-in" else "built-in",
        None if ctx.path == "built-in" else node.start_mark.line + 1,
    )


def _scalar(ctx: _Ctx, node: yaml.Node | None, what: str, parent: yaml.Node) -> str | None:
    if node is None:
        ctx.fail(parent, f"{what} is required")
        return None
    if not isinstance(node, yaml.ScalarNode) or not str(node.value).strip():
        ctx.fail(node, f"{what} must be a non-empty string")
        return None
    return str(node.value).strip()


def _strings(
    ctx: _Ctx, node: yaml.Node | None, what: str, parent: yaml.Node, *, required: bool, single_ok: bool = True
) -> tuple[str, ...]:
    if node is None:
        if required:
            ctx.fail(parent, f"{what} is required")
        return ()
    if isinstance(node, yaml.ScalarNode) and single_ok:
        return (str(node.value),) if str(node.value).strip() else ()
    if not isinstance(node, yaml.SequenceNode) or not all(isinstance(x, yaml.ScalarNode) for x in node.value):
        ctx.fail(node, f"{what} must be a string or a list of strings")
        return ()
    return tuple(str(x.value) for x in node.value if str(x.value).strip())


def _regex(ctx: _Ctx, node: yaml.Node | None, what: str) -> re.Pattern[str] | None:
    if node is None:
        return None
    if not isinstance(node, yaml.ScalarNode):
        ctx.fail(node, f"{what} must be a regular expression (a string)")
        return None
    try:
        return re.compile(str(node.value))
    except re.error as exc:
        ctx.fail(node, f"{what}: not a valid regular expression: {exc}")
        return None


def match_runbook(
    entries: list[RunbookEntry], *, findings: list[tuple[str, float]], exception: str | None, log_lines: list[str]
) -> list[dict[str, Any]]:
    """The entries that match a report, each with what it matched on."""
    likely = {c for c, conf in findings if conf >= CATEGORY_FLOOR}
    out = []
    for e in entries:
        matched: list[str] = []
        if e.categories:
            hit = [c for c in e.categories if c in likely]
            if not hit:
                continue
            matched.append(f"category {hit[0]}")
        if e.exception is not None:
            if not exception or not e.exception.search(exception):
                continue
            matched.append(f"exception {exception.splitlines()[0][:120]!r}")
        if e.log is not None:
            line = next((ln for ln in log_lines if e.log.search(ln)), None)
            if line is None:
                continue
            matched.append(f"log line {line.strip()[:120]!r}")
        out.append(e.to_dict(matched))
    return out
