"""The layer rule of docs/architecture.md holds: the import contracts pass, and the figures behind them.

`make lint` runs the same check; here it also guards a branch whose tests run without lint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))


def test_the_import_contracts_are_kept() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # Every contract pyproject.toml declares is checked and kept (none skipped, none broken).
    declared = len(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"])
    assert declared >= 6
    assert f"Contracts: {declared} kept, 0 broken." in result.stdout


def test_no_package_cycle_or_unlisted_upward_import_is_left() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_graph.py"), "--json"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["package_cycles_without_the_exceptions"] == []
    assert figures["upward_imports_not_in_the_contract"] == []


def _function_level_imports() -> dict[str, int]:
    """Per module of src/flightlog, how many imports of a ``flightlog.`` module sit inside a
    function without a comment (on the line or the one above) saying why they are there."""
    import ast

    counts: dict[str, int] = {}
    src = ROOT / "src"
    for path in sorted((src / "flightlog").rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        found = 0
        for func in ast.walk(ast.parse(text)):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(func):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom) and node.level == 0
                    else []
                )
                if not any(n == "flightlog" or n.startswith("flightlog.") for n in names):
                    continue
                here, above = lines[node.lineno - 1], lines[node.lineno - 2] if node.lineno > 1 else ""
                if "#" not in here and not above.strip().startswith("#"):
                    found += 1
        if found:
            counts[str(path.relative_to(src))] = found
    return counts


def test_no_new_uncommented_function_level_import_of_flightlog() -> None:
    """A function-level import of a flightlog module hides a cycle or an upward import from a
    reader unless its comment says why it is there (an optional extra, a cost at `import`);
    tests/function_imports.json holds the ones not yet sorted out, and it may only shrink."""
    baseline: dict[str, int] = json.loads((ROOT / "tests" / "function_imports.json").read_text())
    grown = {
        module: (count, baseline.get(module, 0))
        for module, count in _function_level_imports().items()
        if count > baseline.get(module, 0)
    }
    assert grown == {}, (
        "uncommented function-level imports of flightlog modules (module: (now, allowed)); import "
        f"at the top, or say beside the import why it must wait: {grown}"
    )


# ── the contracts name every package ────────────────────────────────────────


def _contracts() -> dict[str, dict[str, object]]:
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


def _boxes() -> set[str]:
    """flightlog's packages and top-level modules: what the layers contract orders."""
    here = ROOT / "src" / "flightlog"
    packages = {p.parent.name for p in here.glob("*/__init__.py")}
    modules = {p.stem for p in here.glob("*.py") if p.stem not in ("__init__", "__main__")}
    return packages | modules


def _builtin_features() -> set[str]:
    """The packages of the built-in features (`plugins.table.BUILTIN`), read from its source."""
    import ast

    tree = ast.parse((ROOT / "src" / "flightlog" / "plugins" / "table.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "BUILTIN":
            assert isinstance(node.value, ast.Tuple)
            return {str(ast.literal_eval(e)).split(".")[1] for e in node.value.elts}
    raise AssertionError("plugins/table.py has no BUILTIN")


def test_every_package_is_in_the_layers_and_the_extras_contracts() -> None:
    """A package added without a place in the contracts would be checked by none of them (as
    serving, registry, triage and mlflow_server once were): each contract that lists packages
    lists all of them, but for the ones it is about."""
    contracts = _contracts()
    layers = contracts["layers"]["layers"]
    assert isinstance(layers, list)
    named = [name.strip() for row in layers for name in str(row).split("#")[0].replace("|", ":").split(":")]
    assert sorted(set(named)) == sorted(_boxes()), "every package and top-level module has one layer"
    assert len(named) == len(set(named)), "a box in two layers"
    for contract, own in (("server-extra", {"server"}), ("data-extra", {"data"})):
        sources = {str(m).removeprefix("flightlog.") for m in contracts[contract]["source_modules"]}  # type: ignore[union-attr]
        assert sources == _boxes() - own, f"{contract}: list every package and module but {sorted(own)}"
    # the faces find the features through the table: every built-in feature but the faces and
    # the runner (core: `flightlog run` is the CLI's as much as a feature's)
    forbidden = {str(m).removeprefix("flightlog.") for m in contracts["feature-table"]["forbidden_modules"]}  # type: ignore[union-attr]
    assert forbidden == _builtin_features() - {"server", "runner", "cli"}


def test_the_contracts_grant_at_most_three_exceptions_each_with_its_reason() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    granted: list[str] = []
    for contract in _contracts().values():
        granted.extend(str(line) for line in contract.get("ignore_imports", []))  # type: ignore[attr-defined]
    assert len(set(granted)) <= 3, granted
    lines = text.splitlines()
    for rule in set(granted):
        where = next(i for i, line in enumerate(lines) if f'"{rule}"' in line)
        said = "#" in lines[where] or lines[where - 1].strip().startswith("#")
        assert said, f"the exception {rule!r} has no reason beside it (a comment on its line or the one above)"


# ── one naming scheme per feature package ───────────────────────────────────

#: what a feature package's module does, and the name it has for it (docs/architecture.md, *A feature's modules*)
ROLES = {
    "click commands": ("cli.py", "cli/"),
    "API operations (OPERATIONS)": ("api.py", "api/"),
    "terminal output (rich)": ("render.py", "cli.py", "progress.py"),
    "alert rule kinds (Kind)": ("alertkinds.py", "alertkinds/", "kinds/"),
    "store tables (StoreMigrations)": ("migrations.py",),
}


def _roles(path: Path) -> set[str]:
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    roles: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(n == "rich" or n.startswith("rich.") for n in names):
                roles.add("terminal output (rich)")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                func = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(func, ast.Attribute) and func.attr in ("command", "group"):
                    roles.add("click commands")
    for statement in tree.body:
        if not isinstance(statement, ast.Assign | ast.AnnAssign):
            continue
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        if any(isinstance(t, ast.Name) and t.id == "OPERATIONS" for t in targets):
            roles.add("API operations (OPERATIONS)")
        for call in ast.walk(statement):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name):
                if call.func.id == "Kind":
                    roles.add("alert rule kinds (Kind)")
                elif call.func.id == "StoreMigrations":
                    roles.add("store tables (StoreMigrations)")
    return roles


def _named_for(rel: str, names: tuple[str, ...]) -> bool:
    parts = rel.split("/")
    return any(parts[-1] == n if not n.endswith("/") else n[:-1] in parts[:-1] for n in names)


def test_every_feature_package_names_its_parts_one_way() -> None:
    """`triage/` is the model: ``feature.py`` (its entry in the feature table), ``cli.py``,
    ``api.py``, ``render.py`` beside its logic; its rule kinds in ``alertkinds``, its tables'
    migrations in ``migrations.py``. A module that does one of these jobs under another name
    (``views.py``, ``goodput_api.py``, ``alerts_routes.py``) is where a reader does not look."""
    src = ROOT / "src" / "flightlog"
    misplaced: list[str] = []
    for package in sorted(_builtin_features() - {"server"}):  # the server is the face, not a feature
        assert (src / package / "feature.py").is_file(), f"{package}/ has no feature.py"
        for path in sorted((src / package).rglob("*.py")):
            rel = path.relative_to(src / package).as_posix()
            for role in _roles(path):
                if not _named_for(rel, ROLES[role]):
                    misplaced.append(f"{package}/{rel}: {role} belong in {' or '.join(ROLES[role])}")
    assert misplaced == []


def test_each_built_in_feature_has_one_entry_in_the_table() -> None:
    import ast

    tree = ast.parse((ROOT / "src" / "flightlog" / "plugins" / "table.py").read_text())
    entries = next(
        [str(ast.literal_eval(e)) for e in node.value.elts]  # type: ignore[attr-defined]
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "BUILTIN"
    )
    assert all(e.endswith(".feature") for e in entries), entries
    assert len({e.split(".")[1] for e in entries}) == len(entries), "one feature.py per package"


def test_the_layer_table_of_the_architecture_page_is_the_contract() -> None:
    """docs/architecture.md's table of layers, read bottom first, names the boxes of each row of
    the ``layers`` contract, row for row: the page a contributor reads is the rule that is checked."""
    import re

    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text[text.index("| layer (bottom first) |") :]
    table = table[: table.index("\n\n")]
    boxes = _boxes()
    rows: list[set[str]] = []
    for line in table.splitlines()[2:]:
        cells = line.split("|")
        names = {n.rstrip("/").removesuffix(".py") for n in re.findall(r"`([^`]+)`", cells[2])}
        named = names & boxes
        if named:
            rows.append(named)
    layers = _contracts()["layers"]["layers"]
    assert isinstance(layers, list)
    contract = [{n.strip() for n in str(row).split("#")[0].replace("|", ":").split(":")} for row in reversed(layers)]
    assert rows == contract
