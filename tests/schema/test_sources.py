"""The schema is the only place records are formed, and the wire format page is generated from it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from flightlog.schema import known_kinds

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "flightlog"


def record_literals(tree: ast.AST) -> list[int]:
    """Lines of ``{"k": "<kind>", ...}`` and ``dict(k="<kind>", ...)`` in ``tree``."""
    known = set(known_kinds())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and key.value == "k"
                    and isinstance(value, ast.Constant)
                    and value.value in known
                ):
                    found.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            for kw in node.keywords:
                if kw.arg == "k" and isinstance(kw.value, ast.Constant) and kw.value.value in known:
                    found.append(node.lineno)
    return found


def test_the_ast_walk_finds_a_record_literal() -> None:
    tree = ast.parse('rec = {"t": 1.0, "k": "metrics"}\nother = dict(k="note", text="x")\ncursor = {"k": same}\n')
    assert record_literals(tree) == [1, 2]


def test_no_record_is_built_as_a_dict_literal_outside_the_schema() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if (SRC / "schema") in path.parents:
            continue
        for line in record_literals(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            offenders.append(f"{path.relative_to(ROOT)}:{line}")
    assert offenders == [], "form records with flightlog.schema.record(kind, ...): " + ", ".join(offenders)


def test_the_wire_format_page_is_generated_from_the_schema() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_wire_docs.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    page = (ROOT / "docs" / "wire-format.md").read_text(encoding="utf-8")
    for tag, cls in known_kinds().items():
        assert f"| `{tag}` | `{cls.__name__}` |" in page and f"### {cls.__name__}\n" in page
