"""Reading a rules file as YAML while remembering where every value was written.

Errors about a rules file name the line and the field (``alerts.yaml:12: rules[1].op: ...``),
so the loader keeps, next to the plain Python value, a map from each value's path
(``("rules", 1, "op")``) to its line, taken from the YAML nodes' marks.

A rules file may come from any reader of a server (``POST /alerts/rules/check``), so the loader
is bounded before it builds anything: at most :data:`MAX_BYTES` of text, and at most
:data:`MAX_VALUES` values once aliases are expanded (an alias bomb of a few hundred bytes
expands to billions; an alias that refers to itself never ends). Merge keys and ordinary
anchors within that bound keep working.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from flightlog.errors import InvalidInput

__all__ = ["MAX_BYTES", "MAX_VALUES", "Path", "Problem", "RulesFileError", "Located", "load_located", "path_text"]

Path = tuple[str | int, ...]

MAX_BYTES = 256 << 10  # a rules file of a thousand rules is ~100 KiB; pure-Python YAML parses ~100 KiB/s
MAX_VALUES = 100_000  # values (mappings, lists, scalars) the document holds with its aliases expanded
# libyaml's parser where PyYAML has it (about ten times faster, and the time a check holds the
# interpreter is what every other request of the server waits on), else the pure-Python one
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
    """Parse one YAML document; syntax errors, duplicate keys, a document over :data:`MAX_BYTES`
    and aliases that expand past :data:`MAX_VALUES` become a :class:`RulesFileError`."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        raise RulesFileError(
            source,
            [
                Problem(
                    None,
                    (),
                    f"the file is {size} bytes; a rules file may hold at most {MAX_BYTES}: "
                    "split it, or drop what it repeats",
                )
            ],
        )
    try:
        loader = _Loader(text)
    except yaml.YAMLError as exc:  # e.g. a character YAML does not allow
        raise RulesFileError(source, [Problem(None, (), f"not valid YAML: {exc}")]) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return Located(None)
        _check_expansion(node)
        doc = Located(None)
        problems: list[Problem] = []
        doc.value = _build(loader, node, (), doc.lines, problems)
    except _TooBig as exc:
        raise RulesFileError(source, [Problem(None, (), str(exc))]) from None
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


class _TooBig(yaml.YAMLError):
    pass


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a node graph that expands past :data:`MAX_VALUES` values or refers to itself.

    The composer gives every alias the node of its anchor, so the graph is small even when its
    expansion is not; the expanded size of each node is computed once (children first, without
    recursion), which takes time in proportion to the text.
    """
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = _children(node)
        if done:
            on_path.discard(key)
            sizes[key] = total = 1 + sum(sizes[id(c)] for c in children)
            if total > MAX_VALUES:
                raise _TooBig(
                    f"with its aliases expanded the document holds over {MAX_VALUES} values: "
                    "write the rules out, or use fewer nested aliases"
                )
            continue
        if key in sizes:
            continue
        on_path.add(key)
        stack.append((node, True))
        for child in children:
            if id(child) in on_path:
                line = child.start_mark.line + 1
                raise _TooBig(f"an alias at line {line} refers to a value that contains it: it would never end")
            if id(child) not in sizes:
                stack.append((child, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _build(loader: Any, node: yaml.Node, path: Path, lines: dict[Path, int], problems: list[Problem]) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        written = sum(1 for key_node, _ in node.value if key_node.tag != "tag:yaml.org,2002:merge")
        loader.flatten_mapping(node)  # YAML merge keys (<<: *defaults): merged pairs first, in order of precedence
        merged = len(node.value) - written
        out: dict[str, Any] = {}
        from_merge: set[str] = set()
        for i, (key_node, value_node) in enumerate(node.value):
            key = loader.construct_object(key_node, deep=True) if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str) or not key:
                line = key_node.start_mark.line + 1
                problems.append(Problem(line, path, f"keys must be non-empty text, got {key!r}"))
                continue
            if key in out and key not in from_merge:  # a key written here overrides a merged one
                problems.append(Problem(key_node.start_mark.line + 1, (*path, key), "is given twice"))
                continue
            if i < merged:
                from_merge.add(key)
            else:
                from_merge.discard(key)
            out[key] = _build(loader, value_node, (*path, key), lines, problems)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, item, (*path, i), lines, problems) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)
