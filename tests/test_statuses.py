"""The statuses and their groups are defined once, in flightlog.statuses, and nowhere else.

A second copy drifts: a status added to one list and not the other is a run that a listing
counts and diagnosis ignores. The AST walk below finds any tuple, list or set literal in `src/`
made only of status names, the shape every copy had.
"""

from __future__ import annotations

import ast
from pathlib import Path

from flightlog import models, query, statuses
from flightlog.alerts import lookup

SRC = Path(__file__).resolve().parents[1] / "src" / "flightlog"
HOME = SRC / "statuses.py"


def _status_literals(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
            words = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(words) == len(node.elts) and set(words) <= set(statuses.STATUSES):
                found.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: {tuple(words)}")
    return found


def test_no_status_group_is_written_out_outside_the_statuses_module() -> None:
    copies = [hit for path in sorted(SRC.rglob("*.py")) if path != HOME for hit in _status_literals(path)]
    assert copies == [], "use a group of flightlog.statuses instead of:\n" + "\n".join(copies)


def test_the_walk_finds_a_written_out_group() -> None:
    assert len(_status_literals(HOME)) >= 5  # the module's own groups are the shape it looks for


def test_every_group_holds_statuses_only_and_the_terminal_ones_partition_the_lifecycle() -> None:
    groups = {name: getattr(statuses, name) for name in statuses.__all__ if name.endswith("_STATUSES")}
    for name, group in groups.items():
        assert set(group) <= set(statuses.STATUSES), name
    assert set(statuses.ACTIVE_STATUSES) | statuses.TERMINAL_STATUSES == set(statuses.STATUSES)
    assert not set(statuses.ACTIVE_STATUSES) & statuses.TERMINAL_STATUSES
    assert {"succeeded", *statuses.UNSUCCESSFUL_STATUSES} == statuses.TERMINAL_STATUSES
    assert set(statuses.FAILED_STATUSES) <= set(statuses.UNSUCCESSFUL_STATUSES)


def test_the_old_names_are_the_same_objects() -> None:
    assert models.STATUSES is statuses.STATUSES and models.TERMINAL_STATUSES is statuses.TERMINAL_STATUSES
    assert query.STATUSES is statuses.STATUSES
    assert lookup.FAILED_STATUSES is statuses.FAILED_STATUSES


def test_sql_list_is_an_in_list_in_lifecycle_order() -> None:
    assert statuses.sql_list(statuses.ACTIVE_STATUSES) == "('created','queued','running')"
    assert statuses.sql_list(statuses.TERMINAL_STATUSES) == "('succeeded','failed','stopped','killed','crashed')"
