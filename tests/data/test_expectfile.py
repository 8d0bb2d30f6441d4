"""YAML and Python expectation files; mistakes are reported with file, line and field."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from flightlog.data import load_expectations, parse_expectations, validate
from flightlog.data.expectations import (
    Between,
    ColumnPresent,
    ColumnType,
    Freshness,
    InSet,
    MatchesRegex,
    NotNull,
    RowCount,
    Unique,
)
from flightlog.errors import InvalidInput, NotFound

FULL = """\
row_count: {min: 2, max: 1000}
freshness: {column: ts, max_age: 2d}
sensitive: [email]
columns:
  id: {type: integer, not_null: true, unique: true}
  age:
    between: [0, 120]
    max_null_share: 0.25
  country: {in_set: [US, DE]}
  email: {matches_regex: '@'}
  coupon: {present: false, type: string}
  note:
"""


def test_full_file_builds_every_expectation() -> None:
    suite = parse_expectations(FULL, name="e.yaml")
    kinds = [type(e) for e in suite]
    assert kinds == [
        RowCount, Freshness,
        ColumnPresent, ColumnType, NotNull, Unique,
        ColumnPresent, Between, NotNull,
        ColumnPresent, InSet,
        ColumnPresent, MatchesRegex,
        ColumnType,
        ColumnPresent,
    ]  # fmt: skip
    assert suite.sensitive == {"email"}
    assert suite.source == "e.yaml"
    coupon = [e for e in suite if e.column == "coupon"][0]
    assert coupon.optional


def test_bounds_as_mapping_and_dates() -> None:
    suite = parse_expectations("columns:\n  d: {between: {min: 2026-01-01}}\n  n: {between: {max: 5}}\n")
    d, n = [e for e in suite if isinstance(e, Between)]
    assert str(d.min) == "2026-01-01" and d.max is None
    assert n.max == 5


@pytest.mark.parametrize(
    ("text", "where", "says"),
    [
        (
            "columns:\n  age:\n    betwen: [0, 1]\n",
            "e.yaml:3: columns.age.betwen",
            "did you mean 'between'",
        ),
        (
            "columns:\n  age:\n    between: abc\n",
            "e.yaml:3: columns.age.between",
            "expected [min, max]",
        ),
        (
            "columns:\n  age:\n    between: [5, 1]\n",
            "e.yaml:3: columns.age.between",
            "greater than max",
        ),
        (
            "columns:\n  age: {not_null: yes please}\n",
            "e.yaml:2: columns.age.not_null",
            "true or false",
        ),
        (
            "columns:\n  age: {max_null_share: 2}\n",
            "e.yaml:2: columns.age.max_null_share",
            "between 0 and 1",
        ),
        (
            "columns:\n  e: {matches_regex: '(x'}\n",
            "e.yaml:2: columns.e.matches_regex",
            "invalid regex",
        ),
        ("columns:\n  e: {type: blob!}\n", "e.yaml:2: columns.e.type", "unknown type"),
        ("columns:\n  e: {in_set: []}\n", "e.yaml:2: columns.e.in_set", "non-empty list"),
        ("row_count: {min: 1.5}\n", "e.yaml:1: row_count.min", "an integer"),
        ("rows: 5\n", "e.yaml:1: rows", "unknown field"),
        ("freshness: {max_age: 1d}\n", "e.yaml:1: freshness", "needs a column"),
        (
            "freshness: {column: t, max_age: soon}\n",
            "e.yaml:1: freshness.max_age",
            "invalid max_age",
        ),
        ("columns: [a, b]\n", "e.yaml:1: columns", "expected a mapping"),
        ("columns:\n  a: {type: int\n", "e.yaml:3", "invalid YAML"),
    ],
)
def test_mistakes_name_file_line_and_field(text: str, where: str, says: str) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_expectations(text, name="e.yaml")
    assert info.value.message.startswith(where), info.value.message
    assert says in info.value.message


def test_empty_file_is_an_error() -> None:
    with pytest.raises(InvalidInput, match="empty"):
        parse_expectations("", name="e.yaml")


def test_load_yaml_and_python_files(tmp_path: Path) -> None:
    y = tmp_path / "e.yaml"
    y.write_text("columns:\n  x: {between: [0, 1]}\n")
    assert len(load_expectations(y)) == 2
    py = tmp_path / "checks.py"
    py.write_text(
        "from flightlog.data import Suite, Between, NotNull\n"
        "suite = Suite([Between('x', 0, 1), NotNull('x')], sensitive={'x'})\n"
    )
    suite = load_expectations(py)
    assert len(suite) == 2 and suite.sensitive == {"x"} and suite.source == str(py)
    lst = tmp_path / "lst.py"
    lst.write_text("from flightlog.data import Unique\nexpectations = [Unique('x')]\n")
    assert len(load_expectations(lst)) == 1
    nothing = tmp_path / "nothing.py"
    nothing.write_text("x = 1\n")
    with pytest.raises(InvalidInput, match="defines neither"):
        load_expectations(nothing)
    with pytest.raises(NotFound):
        load_expectations(tmp_path / "missing.yaml")


def test_optional_column_passes_when_absent_and_is_checked_when_present(tmp_path: Path) -> None:
    suite = parse_expectations("columns:\n  coupon: {present: false, in_set: [A, B]}\n")
    assert validate(pd.DataFrame({"x": [1]}), suite).success
    assert not validate(pd.DataFrame({"coupon": ["C"]}), suite).success


def test_validate_accepts_a_file_path(tmp_path: Path) -> None:
    y = tmp_path / "e.yaml"
    y.write_text(FULL)
    df = pd.DataFrame(
        {
            "id": [1, 2],
            "age": [3.0, 4.0],
            "country": ["US", "DE"],
            "email": ["a@b", "c@d"],
            "ts": pd.to_datetime(["2020-01-01T00:00:00", "2020-01-02T00:00:00"]),
        }
    )
    v = validate(df, y)
    assert v.suite == str(y)
    assert [r.expectation for r in v.failed] == ["freshness", "column_present"]
