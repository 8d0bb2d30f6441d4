"""Profiles of every supported source, streamed; merging shards equals the whole."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from flightlog.data import Profile, merge_profiles, profile
from flightlog.errors import InvalidInput

QS = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)


def _frame(n: int = 5000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.normal(40, 12, n)
    age[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame(
        {
            "age": age,
            "clicks": rng.poisson(3, n),
            "country": rng.choice(["US", "DE", "FR", "JP"], n, p=[0.4, 0.3, 0.2, 0.1]),
            "active": rng.random(n) < 0.7,
            "ts": pd.to_datetime("2026-01-01") + pd.to_timedelta(rng.integers(0, 86400 * 30, n), unit="s"),
        }
    )


def test_pandas_profile_has_types_counts_and_statistics() -> None:
    df = _frame()
    p = profile(df)
    assert p.row_count == 5000
    assert [c.name for c in p] == ["age", "clicks", "country", "active", "ts"]
    age = p["age"]
    assert (age.kind, age.type) == ("numeric", "double")
    assert age.null_count == int(df["age"].isna().sum())
    assert age.null_share == pytest.approx(df["age"].isna().mean())
    assert age.numeric is not None
    assert age.numeric.mean == pytest.approx(df["age"].mean())
    assert age.numeric.std == pytest.approx(df["age"].std())
    assert age.numeric.min == pytest.approx(df["age"].min())
    assert age.numeric.max == pytest.approx(df["age"].max())
    q = age.numeric.quantiles(QS)
    exact = np.quantile(df["age"].dropna(), QS, method="lower")
    for key, want in zip(q, exact, strict=True):
        assert abs(q[key] - want) <= 0.01 * abs(want)  # type: ignore[operator]
    clicks = p["clicks"]
    assert clicks.type == "int64" and clicks.numeric is not None
    assert clicks.numeric.min == df["clicks"].min() and isinstance(clicks.numeric.min, int)
    country = p["country"]
    assert country.kind == "categorical" and country.categorical is not None
    assert country.categorical.cardinality == 4
    top = country.categorical.top(2)
    assert top[0]["value"] == "US" and top[0]["count"] == int((df["country"] == "US").sum())
    assert p["active"].kind == "categorical"
    ts = p["ts"]
    assert ts.kind == "datetime" and ts.datetime is not None
    assert ts.datetime.to_dict()["max"] == df["ts"].max().strftime("%Y-%m-%dT%H:%M:%S.000Z")


def test_polars_arrow_numpy_and_dict_sources() -> None:
    df = _frame(500)
    pl_p = profile(pl.from_pandas(df))
    arrow_p = profile(pa.Table.from_pandas(df, preserve_index=False))
    assert pl_p.row_count == arrow_p.row_count == 500
    assert pl_p["country"].categorical.counts == arrow_p["country"].categorical.counts  # type: ignore[union-attr]
    one = profile(np.arange(100.0))
    assert [c.name for c in one] == ["value"] and one["value"].numeric.count == 100  # type: ignore[union-attr]
    two = profile(np.ones((10, 3)))
    assert [c.name for c in two] == ["0", "1", "2"]
    rec = profile(np.array([(1, 2.5)], dtype=[("a", "i4"), ("b", "f8")]))
    assert [c.name for c in rec] == ["a", "b"]
    assert profile({"x": [1, 2, 3]})["x"].numeric.mean == 2  # type: ignore[union-attr]


def test_mixed_object_column_is_profiled_as_text() -> None:
    p = profile(pd.DataFrame({"m": [1, "a", None, 2.5]}))
    assert p["m"].kind == "categorical" and p["m"].null_count == 1


def test_nan_and_inf_are_counted_not_averaged() -> None:
    p = profile(pa.table({"x": pa.array([1.0, float("nan"), float("inf"), 3.0, None])}))
    x = p["x"]
    assert x.null_count == 1
    assert x.numeric is not None
    assert (x.numeric.count, x.numeric.nan_count, x.numeric.inf_count) == (2, 1, 1)
    assert x.numeric.mean == 2.0


def test_files_of_every_format_give_the_same_profile(tmp_path: Path) -> None:
    df = _frame(3000).drop(columns=["ts"])
    table = pa.Table.from_pandas(df, preserve_index=False)
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=700)
    pacsv.write_csv(table, tmp_path / "d.csv")
    df.to_json(tmp_path / "d.jsonl", orient="records", lines=True)
    profiles = {fmt: profile(tmp_path / f"d.{fmt}", batch_rows=512) for fmt in ("parquet", "csv", "jsonl")}
    for p in profiles.values():
        assert p.row_count == 3000
        assert p["age"].null_count == int(df["age"].isna().sum())
        assert p["country"].categorical.counts == profiles["parquet"]["country"].categorical.counts  # type: ignore[union-attr]
        assert p["clicks"].numeric.mean == pytest.approx(df["clicks"].mean())  # type: ignore[union-attr]


def test_directory_of_parquet_files(tmp_path: Path) -> None:
    for i in range(3):
        pq.write_table(pa.table({"x": np.arange(i * 10, i * 10 + 10)}), tmp_path / f"part-{i}.parquet")
    p = profile(tmp_path)
    assert p.row_count == 30 and p["x"].numeric.max == 29  # type: ignore[union-attr]


def test_csv_column_that_changes_type_late_is_widened(tmp_path: Path) -> None:
    path = tmp_path / "late.csv"
    with path.open("w") as f:
        f.write("id,score,code\n")
        for i in range(50_000):
            f.write(f"{i},{i % 7},{i % 3}\n")
        f.write("50000,2.5,X9\n")
    p = profile(path)
    assert p.row_count == 50_001
    assert p["score"].type == "double" and p["score"].numeric.max == 6  # type: ignore[union-attr]
    assert p["code"].kind == "categorical" and p["code"].categorical.cardinality == 4  # type: ignore[union-attr]


def test_json_lines_with_late_fields_and_mixed_kinds(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = [json.dumps({"a": i, "b": "x"}) for i in range(30_000)]
    lines.append(json.dumps({"a": 1.5, "b": "y", "late": 3}))
    lines.append(json.dumps({"a": 2, "b": 7}))
    path.write_text("\n".join(lines) + "\n")
    p = profile(path)
    assert p.row_count == 30_002
    assert p["late"].null_count == 30_001 and p["late"].numeric.count == 1  # type: ignore[union-attr]
    assert p["b"].kind == "categorical"
    assert set(p["b"].categorical.counts) == {"x", "y", "7"}  # type: ignore[union-attr]


def test_unknown_file_type_and_missing_file_are_clear_errors(tmp_path: Path) -> None:
    (tmp_path / "notes.docx").write_text("x")
    with pytest.raises(InvalidInput, match="cannot tell the format"):
        profile(tmp_path / "notes.docx")
    with pytest.raises(InvalidInput, match="no such file"):
        profile(tmp_path / "nope.csv")
    with pytest.raises(InvalidInput, match="cannot profile a set"):
        profile({1, 2})


def test_high_cardinality_column_keeps_top_values_and_estimates_distinct() -> None:
    rng = np.random.default_rng(5)
    ids = np.concatenate([np.array([f"id{i}" for i in range(20_000)]), np.array(["hot"] * 3000)])
    rng.shuffle(ids)
    p = profile(pa.table({"id": ids}), max_categories=500, batch_rows=4096)
    cat = p["id"].categorical
    assert cat is not None and not cat.exact
    assert abs(cat.cardinality - 20_001) <= 0.05 * 20_001
    assert cat.top(1)[0]["value"] == "hot"
    assert cat.top(1)[0]["count"] >= 3000 - cat.error
    assert len(cat.counts) <= 500


def test_shards_merge_to_the_profile_of_the_whole(tmp_path: Path) -> None:
    df = _frame(20_000, seed=3)
    whole = profile(df)
    shards = [profile(df.iloc[i : i + 5000]) for i in range(0, 20_000, 5000)]
    merged = merge_profiles(shards)
    assert merged.row_count == whole.row_count
    for c in whole:
        m = merged[c.name]
        assert (m.count, m.null_count, m.type, m.kind) == (c.count, c.null_count, c.type, c.kind)
        if c.numeric is not None:
            assert m.numeric is not None
            assert (m.numeric.count, m.numeric.min, m.numeric.max) == (
                c.numeric.count,
                c.numeric.min,
                c.numeric.max,
            )
            assert m.numeric.mean == pytest.approx(c.numeric.mean, rel=1e-12)
            assert m.numeric.std == pytest.approx(c.numeric.std, rel=1e-9)
            # Quantile sketches merge exactly: identical estimates, not merely close ones.
            assert m.numeric.sketch == c.numeric.sketch
            assert m.numeric.quantiles(QS) == c.numeric.quantiles(QS)
        if c.categorical is not None:
            assert m.categorical is not None
            assert m.categorical.counts == c.categorical.counts
        if c.datetime is not None:
            assert m.datetime is not None
            assert (m.datetime.min, m.datetime.max) == (c.datetime.min, c.datetime.max)


def test_file_shards_merge_like_the_whole_file(tmp_path: Path) -> None:
    df = _frame(9000, seed=9).drop(columns=["ts"])
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "all.parquet")
    for i, part in enumerate(df.iloc[j : j + 3000] for j in range(0, 9000, 3000)):
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), tmp_path / f"s{i}.parquet")
    whole = profile(tmp_path / "all.parquet")
    merged = merge_profiles(profile(tmp_path / f"s{i}.parquet") for i in range(3))
    assert merged["age"].numeric.sketch == whole["age"].numeric.sketch  # type: ignore[union-attr]
    assert merged["country"].categorical.counts == whole["country"].categorical.counts  # type: ignore[union-attr]


def test_merge_with_a_column_missing_on_one_side_counts_nulls() -> None:
    a = profile(pd.DataFrame({"x": [1.0, 2.0], "y": ["a", "b"]}))
    b = profile(pd.DataFrame({"x": [3.0]}))
    m = a + b
    assert m.row_count == 3
    assert (m["y"].count, m["y"].null_count) == (3, 1)
    with pytest.raises(InvalidInput, match="cannot merge"):
        a.merge(profile(pd.DataFrame({"x": ["text"]})))


def test_round_trip_through_json_is_lossless() -> None:
    p = profile(_frame(2000))
    back = Profile.from_dict(json.loads(json.dumps(p.to_dict())))
    assert back.to_dict() == json.loads(json.dumps(p.to_dict()))
    assert back["age"].numeric.sketch == p["age"].numeric.sketch  # type: ignore[union-attr]


def test_profile_dict_is_small() -> None:
    rng = np.random.default_rng(0)
    table = pa.table({f"c{i}": rng.normal(i, 1 + i, 200_000) for i in range(5)})
    size = len(json.dumps(profile(table).to_dict()))
    assert size < 5 * 20_000  # a few KB per numeric column


def test_newer_profile_version_is_refused() -> None:
    with pytest.raises(InvalidInput, match="newer"):
        Profile.from_dict({"version": 99, "row_count": 0, "columns": []})
    with pytest.raises(InvalidInput, match="not a flightlog profile"):
        Profile.from_dict({"rows": 1})


def test_pandas_categoricals_and_arrow_dictionaries_are_categories() -> None:
    df = pd.DataFrame({"size": pd.Categorical(["S", "M", "M", None]), "code": pd.Categorical([1, 2, 2, 2])})
    p = profile(df)
    assert p["size"].kind == p["code"].kind == "categorical"
    assert p["size"].categorical.counts == {"M": 2, "S": 1} and p["size"].null_count == 1  # type: ignore[union-attr]
    assert p["code"].categorical.counts == {2: 3, 1: 1}  # type: ignore[union-attr]


def test_progress_bar_draws_on_stderr_when_asked(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("a\n" + "\n".join(str(i) for i in range(1000)) + "\n")
    p = profile(path, show_progress=True)
    captured = capsys.readouterr()
    assert p.row_count == 1000 and captured.out == ""
