"""A KeyError that names several columns: each column is named, in the summary and the next step."""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from flightlog.client import Client
from flightlog.diagnose.failures import parse_missing_keys
from tests.helpers import cli


def _message(func: Callable[[], object]) -> str:
    """The KeyError's message as a traceback prints it (what the diagnosis reads)."""
    try:
        func()
    except KeyError as exc:
        return traceback.format_exception_only(exc)[-1].split(": ", 1)[1].strip()
    raise AssertionError("expected a KeyError")


def _frame() -> object:
    import pandas as pd

    return pd.DataFrame({"customer": [1, 2], "plan": ["a", "b"]})


@pytest.mark.parametrize(
    ("func", "expected"),
    [
        (
            lambda: _frame()[["customer", "tenure", "amount"]],
            ["tenure", "amount"],
        ),  # "['tenure', 'amount'] not in index"
        (lambda: _frame()[["tenure", "amount"]], ["tenure", "amount"]),  # None of [Index([...])] are in the [columns]
        (lambda: _frame().groupby("plan")[["tenure", "amount"]], ["tenure", "amount"]),  # Columns not found: ...
        (lambda: _frame()["tenure"], ["tenure"]),
        (lambda: {"a": 1}["missing key"], ["missing key"]),
    ],
)
def test_every_key_of_a_real_keyerror(func: Callable[[], object], expected: list[str]) -> None:
    keys = parse_missing_keys(_message(func))
    assert sorted(keys) == sorted(expected) and len(keys) == len(expected)  # a groupby names them in set order


SCRIPT = """
import pandas as pd
df = pd.DataFrame({"customer": [1, 2], "plan": ["a", "b"]})
features = df[["customer", "tenure", "amount"]]
"""


@pytest.mark.embedded_only("the summary is built the same way over either transport")
def test_diagnosis_names_each_missing_column(home: Path) -> None:
    script = home.parent / "features.py"
    script.write_text(SCRIPT)
    proc = cli(home, "run", "--project", "churn", "--", sys.executable, str(script), check=False)
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        report = c.diagnose(run)
    top = report["findings"][0]
    assert top["category"] == "data_error"
    assert "2 columns or keys are not in the input: 'tenure' and 'amount'" in top["summary"]
    assert "['tenure', 'amount'] not in index'" not in top["summary"]  # no strange single column name
    assert any("'tenure' and 'amount' under another name" in step for step in top["next_steps"])
