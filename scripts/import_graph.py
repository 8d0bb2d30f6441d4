"""Print the figures of flightlog's package import graph: cycles, upward imports, hidden imports.

Why a script of our own next to import-linter: the contracts (``[tool.importlinter]`` in
pyproject.toml) say pass or fail, while a refactoring needs the figures to watch them fall —
how many cycles between packages, how many imports run up the layer order of
docs/architecture.md, and how many imports sit inside a function (where they hide a cycle from
a reader, though not from Python). It reads the source with ``ast`` only, so it runs on any
checkout without importing flightlog. A name a package loads lazily (``lazy_attributes``) counts
as a function-level import of the module it lives in: it is one, made on first use.

    python scripts/import_graph.py            # the figures
    python scripts/import_graph.py --list     # and each cycle and upward import
    python scripts/import_graph.py --json     # the same, as one JSON document
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tomllib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = "flightlog"

PUBLIC = "<public>"  # flightlog itself (its __init__, the public API) and __main__: on top of every layer


def read_layers(pyproject: Path) -> tuple[tuple[str, ...], ...]:
    """The layer order of the ``layers`` contract in pyproject.toml, lowest first.

    Read from the contract rather than written here again, so that the figures and the check
    cannot disagree. Each name in a row is a box: a package, or a top-level module (``models``,
    ``errors``), as import-linter counts them; ``flightlog`` itself (its ``__init__``, the public
    API, and ``__main__``) sits on top as ``<public>``."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    rows = [tuple(name.strip() for name in re.split(r"[|:]", row)) for row in reversed(contract["layers"])]
    return (*rows, (PUBLIC,))


LAYERS: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class Import:
    """One ``import`` of a flightlog module by another."""

    source: str  # the importing module
    target: str  # the imported module (or package)
    line: int
    in_function: bool
    guarded: bool  # under ``if TYPE_CHECKING:`` (no import at run time)


def package_of(module: str) -> str:
    """The box of the layer diagram a module belongs to: its package, or the top-level module itself."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] == "__main__":
        return PUBLIC
    return parts[1]


def layer_index(package: str) -> int:
    for index, names in enumerate(LAYERS):
        if package in names:
            return index
    raise KeyError(f"{package!r} is in no layer of the layers contract (pyproject.toml)")


def modules(src: Path) -> dict[str, Path]:
    """Every module of the package under ``src``, by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted((src / ROOT).rglob("*.py")):
        rel = path.relative_to(src).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str, path: Path, known: set[str]) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"

    def target_of(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    module_dicts = {
        target.id: stmt.value
        for stmt in tree.body
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict)
        for target in stmt.targets
        if isinstance(target, ast.Name)
    }

    def lazy_homes(call: ast.Call) -> Iterator[str]:
        """The modules a ``lazy_attributes(__name__, {...})`` call imports when a name is used."""
        if len(call.args) < 2:
            return
        table = call.args[1]
        if isinstance(table, ast.Name):
            table = module_dicts.get(table.id, table)
        if not isinstance(table, ast.Dict):
            return
        for value in table.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                home = value.value
                if home.startswith("."):
                    base = module if is_package else module.rpartition(".")[0]
                    home = base + home
                yield home

    def visit(node: ast.AST, in_function: bool, guarded: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id == "lazy_attributes":
                for home in lazy_homes(child):
                    if home.split(".")[0] == ROOT and (target := target_of(home)):
                        yield Import(module, target, child.lineno, True, guarded)  # imported when used
            func = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            guard = guarded or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == ROOT and (target := target_of(alias.name)):
                        yield Import(module, target, child.lineno, in_function, guarded)
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(module, is_package, child)
                if base.split(".")[0] != ROOT:
                    continue
                for alias in child.names:
                    target = target_of(f"{base}.{alias.name}") or target_of(base)
                    if target:
                        yield Import(module, target, child.lineno, in_function, guarded)
            yield from visit(child, func, guard)

    yield from visit(tree, False, False)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def strong(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                strong(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(edges):
        if node not in index:
            strong(node)
    return sorted(found)


def two_cycles(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs of packages that import each other, the plainest cycle."""
    return sorted((a, b) for a in edges for b in edges[a] if a < b and a in edges.get(b, ()))


def read_exceptions(pyproject: Path) -> list[tuple[re.Pattern[str], re.Pattern[str]]]:
    """The layers contract's ``ignore_imports``, as (importer, imported) patterns."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")

    def pattern(expr: str) -> re.Pattern[str]:
        parts = [".+" if p == "**" else "[^.]+" if p == "*" else re.escape(p) for p in expr.strip().split(".")]
        return re.compile(r"\.".join(parts) + "$")

    return [(pattern(a), pattern(b)) for a, b in (line.split("->") for line in contract.get("ignore_imports", []))]


def measure(src: Path, pyproject: Path) -> dict[str, object]:
    global LAYERS
    found = modules(src)
    known = set(found)
    LAYERS = read_layers(pyproject)
    exceptions = read_exceptions(pyproject)
    # one import per (importer, imported, where): `from x import a, b` is one import of x
    unique = {
        (imp.source, imp.target, imp.in_function, imp.guarded): imp
        for name, path in found.items()
        for imp in _imports(name, path, known)
    }
    imports = list(unique.values())
    runtime = [imp for imp in imports if not imp.guarded]
    package_edges: dict[str, set[str]] = defaultdict(set)
    allowed_edges: dict[str, set[str]] = defaultdict(set)  # without the contract's exceptions
    upward: list[Import] = []
    public: list[Import] = []
    for imp in runtime:
        a, b = package_of(imp.source), package_of(imp.target)
        if a == b:
            continue
        package_edges[a].add(b)
        listed = any(x.match(imp.source) and y.match(imp.target) for x, y in exceptions)
        if imp.target == ROOT:
            public.append(imp)  # `import flightlog` inside the package: outside the layers, as for import-linter
            continue
        if not listed and imp.source != ROOT:
            allowed_edges[a].add(b)
        if layer_index(b) > layer_index(a):
            upward.append(imp)
    hidden = [imp for imp in runtime if imp.in_function]
    cross_hidden = [imp for imp in hidden if package_of(imp.source) != package_of(imp.target)]
    package_cycles = cycles(package_edges)
    unlisted = [
        imp
        for imp in upward
        if imp.source != ROOT and not any(a.match(imp.source) and b.match(imp.target) for a, b in exceptions)
    ]
    remaining_cycles = cycles(allowed_edges)
    return {
        "modules": len(found),
        "imports": len(runtime),
        "packages": len({package_of(name) for name in found}),
        "package_cycles": package_cycles,
        "package_pairs_in_cycles": two_cycles(package_edges),
        "package_cycles_without_the_exceptions": remaining_cycles,
        "imports_of_the_public_api_inside_the_package": [f"{i.source}:{i.line}" for i in sorted(public, key=_key)],
        "upward_imports": [f"{i.source}:{i.line} -> {i.target}" for i in sorted(upward, key=_key)],
        "upward_imports_not_in_the_contract": [
            f"{i.source}:{i.line} -> {i.target}" for i in sorted(unlisted, key=_key)
        ],
        "exceptions_in_the_layers_contract": len(exceptions),
        "function_level_imports": len(hidden),
        "function_level_imports_across_packages": len(cross_hidden),
    }


def _key(imp: Import) -> tuple[str, int]:
    return (imp.source, imp.line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parent.parent / "src")
    parser.add_argument(
        "--pyproject",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "pyproject.toml",
        help="where the layers contract is (to measure another checkout against this one's layers)",
    )
    parser.add_argument("--list", action="store_true", help="list each cycle and upward import")
    parser.add_argument("--json", action="store_true", help="one JSON document")
    args = parser.parse_args(argv)
    figures = measure(args.src, args.pyproject)
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    cyc = figures["package_cycles"]
    pairs = figures["package_pairs_in_cycles"]
    up = figures["upward_imports"]
    assert isinstance(cyc, list) and isinstance(pairs, list) and isinstance(up, list)
    print(f"modules:                               {figures['modules']}")
    print(f"imports between flightlog modules:     {figures['imports']}")
    print(f"packages (layer-diagram boxes):        {figures['packages']}")
    print(f"package cycles (strong components):    {len(cyc)}  ({sum(len(c) for c in cyc)} packages in them)")
    print(f"package pairs importing each other:    {len(pairs)}")
    remaining = figures["package_cycles_without_the_exceptions"]
    public = figures["imports_of_the_public_api_inside_the_package"]
    assert isinstance(remaining, list) and isinstance(public, list)
    print(f"  cycles left without the exceptions:  {len(remaining)}")
    print(f"`import flightlog` inside the package: {len(public)}")
    print(f"upward imports (against the layers):   {len(up)}")
    unlisted = figures["upward_imports_not_in_the_contract"]
    assert isinstance(unlisted, list)
    print(f"  of them not listed in the contract:  {len(unlisted)}")
    print(f"exceptions in the layers contract:     {figures['exceptions_in_the_layers_contract']}")
    print(f"function-level imports:                {figures['function_level_imports']}")
    print(f"  of them across packages:             {figures['function_level_imports_across_packages']}")
    if args.list:
        for component in cyc:
            print("cycle:", " <-> ".join(component))
        for a, b in pairs:
            print(f"pair:  {a} <-> {b}")
        for line in up:
            print("up:   ", line)
        for line in unlisted:
            print("unlisted:", line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
