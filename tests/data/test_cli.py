"""`flightlog data …` on files: exit codes, one JSON document with --format json, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from flightlog.data.cli import data_group
from flightlog.errors import InvalidInput, NotFound

OLD = 1_700_000_000


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(data_group, list(args), catch_exceptions=True)


def _json(result: Result) -> object:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return json.loads(result.stdout)


@pytest.fixture
def tables(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    ref = pd.DataFrame({"amount": rng.gamma(2, 30, 4000), "country": rng.choice(["DE", "FR", "US"], 4000)})
    cur = pd.DataFrame(
        {
            "amount": rng.gamma(2, 30, 4000) * 100,
            "country": rng.choice(["DE", "FR", "US"], 4000, p=[0.8, 0.1, 0.1]),
        }
    )
    same = pd.DataFrame({"amount": rng.gamma(2, 30, 4000), "country": rng.choice(["DE", "FR", "US"], 4000)})
    out = {}
    for name, df in (("ref", ref), ("cur", cur), ("same", same)):
        out[name] = tmp_path / f"{name}.parquet"
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), out[name])
    return out


def test_manifest_json_and_text(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    for i in range(3):
        (root / f"{i}.jpg").write_bytes(b"x" * (10**i))
    r = _invoke("manifest", str(root), "--format", "json", "--no-cache")
    m = _json(r)
    assert r.exit_code == 0 and isinstance(m, dict)
    assert m["file_count"] == 3 and m["extensions"] == {".jpg": 3}
    text = _invoke("manifest", str(root), "--no-cache")
    assert text.exit_code == 0 and "3 files" in text.stdout and "size histogram" in text.stdout


def test_manifest_out_and_diff_of_files_and_directories(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for d, files in ((a, {"keep": b"1", "old": b"2"}), (b, {"keep": b"1", "new": b"3"})):
        d.mkdir()
        for k, v in files.items():
            (d / k).write_bytes(v)
            os.utime(d / k, (OLD, OLD))
    out = tmp_path / "a.json"
    assert _invoke("manifest", str(a), "--out", str(out), "--no-cache").exit_code == 0
    d = _json(_invoke("diff", str(out), str(b), "--format", "json"))
    assert isinstance(d, dict)
    assert d["counts"]["added"] == 1 and d["counts"]["removed"] == 1 and not d["identical"]
    text = _invoke("diff", str(out), str(b))
    assert "1 added, 1 removed" in text.stdout and "new" in text.stdout


def test_profile_writes_json_and_shows_a_table(tables: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "ref.profile.json"
    r = _invoke("profile", str(tables["ref"]), "--out", str(out))
    assert r.exit_code == 0 and "amount" in r.stdout and "4,000 rows" in r.stdout
    saved = json.loads(out.read_text())
    assert saved["row_count"] == 4000 and [c["name"] for c in saved["columns"]] == [
        "amount",
        "country",
    ]
    assert saved["created"].endswith("Z")
    only = _json(_invoke("profile", str(tables["ref"]), "--columns", "country", "--format", "json"))
    assert isinstance(only, dict) and [c["name"] for c in only["columns"]] == ["country"]


def test_drift_json_shape_and_exit_codes(tables: dict[str, Path], tmp_path: Path) -> None:
    ref_json = tmp_path / "ref.json"
    _invoke("profile", str(tables["ref"]), "--out", str(ref_json))
    moved = _invoke("drift", str(ref_json), str(tables["cur"]), "--format", "json")
    assert moved.exit_code == 0
    d = json.loads(moved.stdout)
    assert isinstance(d, dict) and d["dataset_drift"] is True and d["drift_share"] == 1.0
    assert [(c["column"], c["type"], c["test"]) for c in d["columns"]] == [
        ("amount", "numeric", "wasserstein"),
        ("country", "categorical", "jensenshannon"),
    ]
    for c in d["columns"]:
        assert set(c) == {
            "column",
            "type",
            "test",
            "statistic",
            "p_value",
            "threshold",
            "psi",
            "drifted",
        }
    gate = _invoke("drift", str(ref_json), str(tables["cur"]), "--format", "json", "--fail-on-drift")
    assert gate.exit_code == 1 and json.loads(gate.stdout)["dataset_drift"]
    calm = _invoke("drift", str(tables["ref"]), str(tables["same"]), "--fail-on-drift", "--format", "json")
    assert calm.exit_code == 0 and not json.loads(calm.stdout)["dataset_drift"]


def test_drift_thresholds_tests_and_html_report(tables: dict[str, Path], tmp_path: Path) -> None:
    report = tmp_path / "drift.html"
    r = _invoke(
        "drift", str(tables["ref"]), str(tables["cur"]),
        "--threshold", "jensenshannon=0.9", "--column-threshold", "amount=1e9", "--test", "country=chisquare",
        "--report", str(report),
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    # amount is calmed by its own threshold; country, forced to chi-square, still drifts.
    assert "dataset drift: 50% of columns drifted" in r.stdout and "chisquare" in r.stdout
    page = report.read_text()
    assert page.count("<svg") == 2 and "<script" not in page
    bad = _invoke("drift", str(tables["ref"]), str(tables["cur"]), "--threshold", "wasserstein")
    assert isinstance(bad.exception, InvalidInput) and "NAME=VALUE" in bad.exception.message


def test_validate_passes_and_fails_with_exit_codes(tmp_path: Path) -> None:
    data = tmp_path / "users.csv"
    pd.DataFrame({"id": [1, 2, 3], "age": [20, 230, 40], "email": ["a@x", "bad", "c@z"]}).to_csv(data, index=False)
    good = tmp_path / "good.yaml"
    good.write_text("row_count: {min: 3}\ncolumns:\n  id: {unique: true}\n")
    ok = _invoke("validate", str(data), "--expect", str(good))
    assert ok.exit_code == 0 and "passed" in ok.stdout
    strict = tmp_path / "strict.yaml"
    strict.write_text("columns:\n  age: {between: [0, 120]}\n  email: {matches_regex: '@', sensitive: true}\n")
    bad = _invoke("validate", str(data), "--expect", str(strict), "--format", "json")
    assert bad.exit_code == 1
    v = json.loads(bad.stdout)
    assert v["success"] is False and v["failed"] == 2
    by = {r["expectation"]: r for r in v["results"]}
    assert by["between"]["examples"] == [{"row": 1, "value": 230}]
    assert by["matches_regex"]["examples"] == [{"row": 1, "value": "<redacted>"}]
    text = _invoke("validate", str(data), "--expect", str(strict), "--sensitive", "age")
    assert text.exit_code == 1 and "FAILED" in text.stdout and "230" not in text.stdout


def test_validate_reports_a_broken_expectation_file_with_line_and_field(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    data.write_text("a\n1\n")
    exp = tmp_path / "e.yaml"
    exp.write_text("columns:\n  a:\n    betwen: [0, 1]\n")
    r = _invoke("validate", str(data), "--expect", str(exp))
    assert isinstance(r.exception, InvalidInput)
    assert r.exception.message.startswith(f"{exp}:3: columns.a.betwen: unknown field")


def test_cohorts_from_eval_files(tmp_path: Path) -> None:
    from flightlog.data import evaluate

    rng = np.random.default_rng(4)
    n = 3000
    g = rng.choice(["a", "b"], n, p=[0.8, 0.2])
    y = rng.integers(0, 2, n)
    base = evaluate(y, np.where(rng.random(n) < 0.8, y, 1 - y), cohorts={"g": g})
    right = np.where(g == "a", 0.95, 0.6)
    cur = evaluate(y, np.where(rng.random(n) < right, y, 1 - y), cohorts={"g": g})
    (tmp_path / "base.json").write_text(json.dumps(base))
    (tmp_path / "cur.json").write_text(json.dumps(cur))
    r = _invoke(
        "cohorts",
        str(tmp_path / "cur.json"),
        "--baseline",
        str(tmp_path / "base.json"),
        "--format",
        "json",
    )
    d = json.loads(r.stdout)
    assert r.exit_code == 0 and d["hidden_regression"] and d["regressions"][0]["value"] == "b"
    text = _invoke(
        "cohorts",
        str(tmp_path / "cur.json"),
        "--baseline",
        str(tmp_path / "base.json"),
        "--fail-on-regression",
    )
    assert text.exit_code == 1 and "1 cohort regressed" in text.stdout and "while the aggregate did not" in text.stdout


def test_unknown_run_id_is_not_found(home: Path, tables: dict[str, Path]) -> None:
    r = _invoke("drift", "feedbeef", str(tables["cur"]))
    assert isinstance(r.exception, NotFound) and "neither an existing file" in r.exception.message


def test_standalone_module_prints_errors_like_the_main_cli(tmp_path: Path) -> None:
    exp = tmp_path / "e.yaml"
    exp.write_text("rows: 1\n")
    data = tmp_path / "d.csv"
    data.write_text("a\n1\n")
    p = subprocess.run(
        [sys.executable, "-m", "flightlog.data.cli", "validate", str(data), "--expect", str(exp)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.startswith(f"error: {exp}:1: rows: unknown field")
