"""The layer rule of docs/architecture.md holds: the import contracts pass, and the figures behind them.

`make lint` runs the same check; here it also guards a branch whose tests run without lint.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
    assert "Contracts: 6 kept, 0 broken." in result.stdout


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
