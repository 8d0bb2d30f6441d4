"""Reading a rules file as YAML while remembering where every value was written.

Errors about a rules file name the line and the field (``alerts.yaml:12: rules[1].op: ...``),
so the loader keeps, next to the plain Python value, a map from each value's path
(``("rules", 1, "op")``) to its line, taken from the YAML nodes' marks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from flightlog.errors import InvalidInput

__all__ = ["Path", "Problem", "RulesFileError", "Located", "load_located", "path_text"]

Path = tuple[str | int, ...]


def path_text(path: Path) -> str:
    """``("rules", 1, "op")`` → ``rules[1].op``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


@dataclass(frozen=True)
class Problem:
    line: int | None
    path: Path
    message: str
    warning: bool = False

    def render(self, source: str) -> str:
        where = f"{source}:{self.line}" if self.line else source
        return f"{where}: {path_text(self.path)}: {self.message}"

    def to_dict(self, source: str) -> dict[str, Any]:
        return {"file": source, "line": self.line, "field": path_text(self.path), "message": self.message}


class RulesFileError(InvalidInput):
    """A rules file that cannot be used, with every problem found (line and field each)."""

    code = "invalid_rules"

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        self.source = source
        self.problems = sorted(problems, key=lambda p: p.line or 0)  # stable: the order found within a line
        lines = [p.render(source) for p in self.problems]
        head = lines[0] if len(lines) == 1 else f"{source}: {len(lines)} problems:\n  " + "\n  ".join(lines)
        super().__init__(head, details={"problems": [p.to_dict(source) for p in self.problems]})


@dataclass
class Located:
    """A YAML document as plain Python values plus the line of every path in it."""

    value: Any
    lines: dict[Path, int] = field(default_factory=dict)

    def line(self, path: Path) -> int | None:
        """The line of ``path``, else of its nearest written parent."""
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return None
            path = path[:-1]


def load_located(text: str, source: str) -> Located:
    """Parse one YAML document; syntax errors and duplicate keys become a :class:`RulesFileError`."""
    try:
        loader = yaml.SafeLoader(text)
    except yaml.YAMLError as exc:  # e.g. a character YAML does not allow
        raise RulesFileError(source, [Problem(None, (), f"not valid YAML: {exc}")]) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return Located(None)
        doc = Located(None)
        problems: list[Problem] = []
        doc.value = _build(loader, node, (), doc.lines, problems)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        detail = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise RulesFileError(source, [Problem(line, (), f"not valid YAML: {detail}")]) from None
    except yaml.YAMLError as exc:
        raise RulesFileError(source, [Problem(None, (), f"not valid YAML: {exc}")]) from None
    except RecursionError:
        raise RulesFileError(source, [Problem(None, (), "not valid YAML: nested too deeply")]) from None
    finally:
        loader.dispose()
    if problems:
        raise RulesFileError(source, problems)
    return doc


def _build(loader: yaml.SafeLoader, node: yaml.Node, path: Path, lines: dict[Path, int], problems: list[Problem]) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # YAML merge keys (<<: *defaults)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str) or not key:
                line = key_node.start_mark.line + 1
                problems.append(Problem(line, path, f"keys must be non-empty text, got {key!r}"))
                continue
            if key in out:
                problems.append(Problem(key_node.start_mark.line + 1, (*path, key), "is given twice"))
                continue
            out[key] = _build(loader, value_node, (*path, key), lines, problems)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, item, (*path, i), lines, problems) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)
