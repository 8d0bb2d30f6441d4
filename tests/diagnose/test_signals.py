"""Signals are identified by stable ids: code decides on the id, never on words a person reads."""

from __future__ import annotations

import ast
import re
from dataclasses import fields
from pathlib import Path

from flightlog.diagnose.patterns import EXCEPTION_RULES, LINE_RULES
from flightlog.diagnose.signals import SIGKILL, Signal, combine, exit_signals

_ID = re.compile(r"^[a-z0-9_]+(?::.+)?$")
_PACKAGE = Path(__file__).resolve().parents[2] / "src" / "flightlog" / "diagnose"


def test_signals_and_rules_carry_ids_not_labels() -> None:
    assert "id" in {f.name for f in fields(Signal)} and "label" not in {f.name for f in fields(Signal)}
    for rule in (*EXCEPTION_RULES, *LINE_RULES):
        assert _ID.match(rule.id), f"rule id {rule.id!r} is not a stable id"


def test_every_literal_signal_id_is_an_id() -> None:
    """Every Signal(...) built with a literal id in the package uses a slug, so renaming the
    words of a detail can never change how signals dedupe or what the code decides."""
    for path in _PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Signal" and len(node.args) >= 3:
                arg = node.args[2]
                if isinstance(arg, ast.Constant):
                    assert _ID.match(arg.value), f"{path.name}:{arg.lineno}: {arg.value!r}"


def test_no_decision_on_display_words() -> None:
    """No module compares a signal's words (``.detail``) or a former label with ``==``/``in``."""
    for path in _PACKAGE.glob("*.py"):
        text = path.read_text()
        assert ".label" not in text.replace("_RESOURCE_LABELS", ""), f"{path.name} still reads a signal label"


def test_same_id_counts_once() -> None:
    a = Signal("oom_killed", 0.3, SIGKILL, "exit", "exit code 137")
    b = Signal("oom_killed", 0.3, SIGKILL, "exit", "killed by SIGKILL (9)")
    assert combine([a, b])[0].confidence == 0.3
    ids = {s.id for s in exit_signals(exit_code=None, signal=9, timed_out=False, oom_killed=False)}
    assert ids == {SIGKILL}
