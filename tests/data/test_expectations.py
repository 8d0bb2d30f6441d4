"""Every expectation type passes on good data and fails on bad data, with examples."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from flightlog.data import (
    Between,
    ColumnPresent,
    ColumnType,
    Freshness,
    InSet,
    MatchesRegex,
    NotNull,
    RowCount,
    Suite,
    Unique,
    validate,
)
from flightlog.data.expectations import Expectation
from flightlog.errors import InvalidInput

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC).timestamp()


def _good() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [1, 2, 3, 4],
            "age": [20.0, 35.5, 61.0, 18.0],
            "country": ["US", "DE", "US", "FR"],
            "email": ["a@x.io", "b@y.io", "c@z.io", "d@w.io"],
            "ts": pd.to_datetime(
                [
                    "2026-11-30T08:00:00",
                    "2026-11-29T00:00:00",
                    "2026-11-30T11:00:00",
                    "2026-11-28T00:00:00",
                ]
            ),
        }
    )


def _bad() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [1, 2, 2, None],
            "age": [20.0, -3.0, 150.0, float("nan")],
            "country": ["US", "XX", "US", None],
            "email": ["a@x.io", "nope", "c@z.io", "also nope"],
            "ts": pd.to_datetime(["2026-01-01", "2026-02-01", None, "2025-12-31"]),
        }
    )


def _one(data: object, e: Expectation):  # type: ignore[no-untyped-def]
    v = validate(data, [e])
    assert len(v.results) == 1
    return v.results[0]


CASES: list[tuple[Expectation, int]] = [
    (ColumnPresent("id"), 0),
    (ColumnType("id", "integer"), 0),
    (NotNull("id"), 1),
    (Between("age", 0, 120), 2),
    (InSet("country", ["US", "DE", "FR"]), 1),
    (Unique("id"), 1),
    (MatchesRegex("email", r"^[^@\s]+@[^@\s]+$"), 2),
    (Freshness("ts", "24h", now=NOW), 0),
]


@pytest.mark.parametrize(
    ("expectation", "bad_count"),
    CASES,
    ids=lambda x: x.name if isinstance(x, Expectation) else None,
)
def test_each_expectation_passes_on_good_data_and_fails_on_bad(expectation: Expectation, bad_count: int) -> None:
    ok = _one(_good(), expectation)
    assert ok.success, ok
    bad = _one(_bad() if expectation.name != "column_present" else _bad().drop(columns=["id"]), expectation)
    assert not bad.success, bad
    if bad_count:
        assert bad.unexpected_count == bad_count
        assert bad.examples, "a failed value check shows offending examples"


def test_column_type_fails_on_another_type() -> None:
    r = _one(pd.DataFrame({"age": ["20", "30"]}), ColumnType("age", "number"))
    assert not r.success and r.observed == "string"
    assert _one(pd.DataFrame({"n": [1, 2]}), ColumnType("n", "int64")).success
    with pytest.raises(InvalidInput, match="unknown type"):
        ColumnType("n", "integerish!")


def test_row_count_range() -> None:
    assert _one(_good(), RowCount(1, 10)).success
    r = _one(_good(), RowCount(min=5))
    assert not r.success and r.observed == "4 rows"
    assert not _one(_good(), RowCount(max=3)).success
    with pytest.raises(InvalidInput):
        RowCount()


def test_null_share_limit() -> None:
    df = pd.DataFrame({"x": [1.0, None, 3.0, 4.0, float("nan")]})
    assert not _one(df, NotNull("x")).success
    assert _one(df, NotNull("x", max_share=0.4)).success
    r = _one(df, NotNull("x", max_share=0.2))
    assert not r.success and r.unexpected_share == pytest.approx(0.4)
    assert [e["row"] for e in r.examples] == [1, 4]


def test_examples_name_rows_and_values() -> None:
    r = _one(_bad(), Between("age", 0, 120))
    assert r.examples == [{"row": 1, "value": -3.0}, {"row": 2, "value": 150.0}]


def test_nan_is_never_between_bounds() -> None:
    """pandas turns NaN into null; in Arrow and numpy data NaN is a value, and out of range."""
    r = _one(pa.table({"x": [1.0, float("nan"), None]}), Between("x", 0, 2))
    assert not r.success and r.examples == [{"row": 1, "value": "nan"}]


def test_unique_examples_come_from_a_second_pass_over_a_file(tmp_path: Path) -> None:
    ids = np.arange(100_000)
    ids[77_777] = 12
    pq.write_table(pa.table({"id": ids}), tmp_path / "ids.parquet", row_group_size=10_000)
    r = _one(tmp_path / "ids.parquet", Unique("id"))
    assert not r.success and r.unexpected_count == 1
    assert r.examples == [{"row": 12, "value": 12}, {"row": 77_777, "value": 12}]


def test_between_for_dates_and_open_bounds() -> None:
    df = _good()
    assert _one(df, Between("ts", "2026-11-01", "2026-12-01")).success
    r = _one(df, Between("ts", min=dt.date(2026, 11, 29)))
    assert not r.success and r.examples == [{"row": 3, "value": "2026-11-28T00:00:00.000Z"}]
    assert _one(df, Between("age", max=61)).success
    with pytest.raises(InvalidInput, match="must be numbers"):
        _one(df, Between("age", "a", "b"))


def test_in_set_compares_across_kinds() -> None:
    assert _one(pd.DataFrame({"code": ["1", "2"]}), InSet("code", [1, 2, 3])).success
    assert _one(pd.DataFrame({"flag": [True, False]}), InSet("flag", [True, False])).success


def test_regex_errors_are_caught_early() -> None:
    with pytest.raises(InvalidInput, match="invalid regex"):
        MatchesRegex("x", "(unclosed")
    with pytest.raises(InvalidInput, match="RE2"):
        MatchesRegex("x", r"(a)\1")


def test_freshness_accepts_text_and_epoch_columns() -> None:
    text = pd.DataFrame({"t": ["2026-11-30T10:00:00Z", "2026-11-01T00:00:00Z"]})
    assert _one(text, Freshness("t", "3h", now=NOW)).success
    r = _one(text, Freshness("t", "1h", now=NOW))
    assert not r.success and "2h00m old" in r.observed
    assert _one(pd.DataFrame({"t": [NOW - 60]}), Freshness("t", 120, now=NOW)).success
    with pytest.raises(InvalidInput, match="holds no times"):
        _one(pd.DataFrame({"t": ["soon"]}), Freshness("t", "1h", now=NOW))


def test_checks_on_a_missing_column_fail_unless_optional() -> None:
    r = _one(_good(), Between("missing", 0, 1))
    assert not r.success and "missing" in r.observed
    e = Between("missing", 0, 1)
    e.optional = True
    assert _one(_good(), e).success


def test_sensitive_columns_are_redacted() -> None:
    suite = Suite([MatchesRegex("email", "@"), InSet("country", ["US"])], sensitive={"email"})
    v = validate(_bad(), suite)
    email, country = v.results
    assert email.redacted and {e["value"] for e in email.examples} == {"<redacted>"}
    assert [e["row"] for e in email.examples] == [1, 3]
    assert not country.redacted and country.examples[0]["value"] == "XX"
    v2 = validate(_bad(), [InSet("country", ["US"])], sensitive=["country"])
    assert v2.results[0].examples[0]["value"] == "<redacted>"


def test_validation_summary_dict() -> None:
    v = validate(_bad(), [RowCount(min=1), Unique("id"), NotNull("email")])
    d = v.to_dict()
    assert (d["success"], d["evaluated"], d["passed"], d["failed"], d["row_count"]) == (
        False,
        3,
        2,
        1,
        4,
    )
    assert d["time"].endswith("Z") and d["source"] == "<pandas.DataFrame>"


def test_validation_streams_large_csv(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    with path.open("w") as f:
        f.write("id,score\n")
        for i in range(200_000):
            f.write(f"{i},{i % 100}\n")
        f.write("200000,500\n")
    v = validate(path, [Between("score", 0, 99), Unique("id"), RowCount(200_001, 200_001)])
    between, unique, rows = v.results
    assert not between.success and between.examples == [{"row": 200_000, "value": 500}]
    assert unique.success and rows.success


def test_non_expectations_are_refused() -> None:
    with pytest.raises(InvalidInput, match="not an expectation"):
        Suite(["age > 0"])  # type: ignore[list-item]
