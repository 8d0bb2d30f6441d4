"""The ``triage`` rule kind on real runs, replayed with `flightlog alerts test`: a failure of a
new cause fires, one of a known cause does not, and the cause reaching its count does."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

import flightlog
from tests.helpers import cli, cli_json

pytestmark = pytest.mark.embedded_only("alerts test reads the embedded store of the home it is given")

RULES = """
rules:
  - name: new-cause
    kind: triage
    count: 0
  - name: growing-cause
    kind: triage
    new: false
    count: 3
    window: 1h
"""


def lookup(i: int) -> None:
    {}[f"user_{i}"]


def _failed(i: int, name: str = "etl") -> str:
    run = flightlog.init(project="t", name=name, quiet=True, resources=False, console=False)
    try:
        lookup(i)
    except KeyError as exc:
        run.fail(exc)
    return run.id


def _fired(home: Path, rules: Path, run: str) -> dict[str, list[dict[str, Any]]]:
    doc = cli_json(home, "alerts", "test", str(rules), "--run", run, "--interval", "0.05s")
    assert doc["errors"] == []
    out: dict[str, list[dict[str, Any]]] = {}
    for alert in doc["alerts"]:
        out.setdefault(alert["rule"], []).append(alert)
    return out


def test_a_new_cause_fires_once_and_a_growing_one_at_its_count(home: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(textwrap.dedent(RULES))
    first, second, third = _failed(101), _failed(20202, name="other"), _failed(3)
    fired = _fired(home, rules, first)
    assert set(fired) == {"new-cause"}
    [alert] = fired["new-cause"]
    assert alert["labels"]["project"] == "t" and len(alert["labels"]["signature"]) == 12
    assert "KeyError: <value>" in alert["summary"] and "user_101" not in alert["summary"]
    assert _fired(home, rules, second) == {}  # the same cause (another job's run): neither new nor at 3
    fired = _fired(home, rules, third)
    assert set(fired) == {"growing-cause"}
    [alert] = fired["growing-cause"]
    assert alert["value"] == 3
    assert alert["evidence"]["runs"] == [third, second, first]


def test_a_rule_that_can_never_fire_is_refused(home: Path, tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - name: never\n    kind: triage\n    new: false\n    count: 0\n")
    proc = cli(home, "alerts", "rules", "check", str(rules), check=False)
    assert proc.returncode != 0
    assert "count must be at least 1" in proc.stderr + proc.stdout
