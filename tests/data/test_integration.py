"""Data evidence on real runs: the SDK logs it, the CLI reads and writes it through the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import flightlog
from flightlog.cli.main import cli
from flightlog.data import Between, NotNull, Profile, profile, validate
from flightlog.errors import InvalidInput

OLD = 1_700_000_000


def _flightlog(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return r.exit_code, r.stdout


def _dataset(root: Path, files: dict[str, int]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, size in files.items():
        p = root / name
        p.write_bytes(os.urandom(size))
        os.utime(p, (OLD, OLD))
    return root


@pytest.fixture
def two_runs(home: Path, tmp_path: Path) -> tuple[str, str]:
    """A baseline run and a run on refreshed data: more small files, shifted values, one worse cohort."""
    rng = np.random.default_rng(8)
    n = 4000
    region = rng.choice(["EU", "US", "APAC"], n, p=[0.45, 0.45, 0.1])
    y = rng.integers(0, 2, n)

    def preds(acc: dict[str, float]) -> np.ndarray:
        return np.where(rng.random(n) < np.vectorize(acc.get)(region), y, 1 - y)

    v1 = _dataset(tmp_path / "v1", {f"img{i}.jpg": 50_000 for i in range(20)})
    a = flightlog.init(project="data", name="train")
    a.log_input(v1, name="images")
    a.log_profile("features", profile(pd.DataFrame({"amount": rng.gamma(2, 30, n), "region": region})))
    a.log_eval(y, preds({"EU": 0.8, "US": 0.8, "APAC": 0.85}), cohorts={"region": region})
    a.finish()

    v2 = _dataset(
        tmp_path / "v2",
        {**{f"img{i}.jpg": 50_000 for i in range(20)}, **{f"t{i}.jpg": 900 for i in range(200)}},
    )
    b = flightlog.init(project="data", name="train")
    b.log_input(v2, name="images")
    b.log_profile("features", profile(pd.DataFrame({"amount": rng.gamma(2, 30, n) * 100, "region": region})))
    b.log_eval(y, preds({"EU": 0.92, "US": 0.92, "APAC": 0.6}), cohorts={"region": region})
    b.finish()
    return a.id, b.id


def test_diff_of_two_runs_input_manifests(two_runs: tuple[str, str]) -> None:
    a, b = two_runs
    code, out = _flightlog("data", "diff", a[:8], b[:8], "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["counts"]["added"] == 200 and d["small_files"]["detected"]


def test_drift_between_runs_is_stored_with_an_html_report(two_runs: tuple[str, str]) -> None:
    a, b = two_runs
    code, out = _flightlog("data", "drift", a, b, "--profile", "features", "--run", b, "--format", "json")
    d = json.loads(out)
    # amount moved (×100), region did not: half of the columns drifted, which meets the 50 % default.
    assert code == 0 and d["dataset_drift"] is True and d["drift_share"] == 0.5
    assert [c["column"] for c in d["columns"] if c["drifted"]] == ["amount"]
    client = flightlog.Client()
    stored = client.evidence(b, kind="drift")
    assert stored[-1]["name"] == "drift" and stored[-1]["data"] == d
    reports = [x for x in client.artifacts(b) if x.kind == "report"]
    assert [x.path for x in reports] == ["drift.html"] and reports[0].sha256
    gate, _ = _flightlog("data", "drift", a, b, "--profile", "features", "--fail-on-drift", "--format", "json")
    assert gate == 1
    lenient = ("--threshold", "drift_share=0.75", "--fail-on-drift", "--format", "json")
    assert _flightlog("data", "drift", a, b, "--profile", "features", *lenient)[0] == 0


def test_cohort_regression_between_runs(two_runs: tuple[str, str]) -> None:
    a, b = two_runs
    code, out = _flightlog("data", "cohorts", b, "--baseline", a, "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["hidden_regression"] and d["regressions"][0]["value"] == "APAC"
    assert d["run"] == b and d["baseline"] == a


def test_validation_and_profile_stored_on_a_run(home: Path, tmp_path: Path) -> None:
    run = flightlog.init(project="data", name="etl")
    run.finish()
    data = tmp_path / "users.csv"
    pd.DataFrame({"id": [1, 2, 2], "email": ["a@x", "b@y", "nope"]}).to_csv(data, index=False)
    exp = tmp_path / "e.yaml"
    exp.write_text("columns:\n  id: {unique: true}\n  email: {matches_regex: '@', sensitive: true}\n")
    code, out = _flightlog("data", "validate", str(data), "--expect", str(exp), "--run", run.id[:6], "--format", "json")
    assert code == 1 and json.loads(out)["failed"] == 2
    code, _ = _flightlog("data", "profile", str(data), "--run", run.id, "--name", "users")
    assert code == 0
    client = flightlog.Client()
    v = client.evidence(run.id, kind="validation")[-1]
    assert v["name"] == "users.csv" and v["data"]["success"] is False
    assert "nope" not in json.dumps(v["data"])  # sensitive values never reach the store
    p = client.evidence(run.id, kind="profile", name="users")[-1]
    assert p["data"]["row_count"] == 3


def test_sdk_validation_result_and_real_cli_process(home: Path, tmp_path: Path) -> None:
    run = flightlog.init(project="data", name="gate")
    df = pd.DataFrame({"label": [1, None, 0], "age": [3, 250, 7]})
    result = validate(df, [NotNull("label"), Between("age", 0, 120)])
    run.log_evidence("validation", "train", result.to_dict())
    run.log_profile("train", profile(df))
    run.finish()
    ref = tmp_path / "ref.json"
    p = subprocess.run(
        [sys.executable, "-m", "flightlog", "data", "drift", run.id, run.id, "--profile", "train", "--format", "json"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "FLIGHTLOG_HOME": str(home)},
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["drift_share"] == 0.0
    missing = subprocess.run(
        [sys.executable, "-m", "flightlog", "data", "drift", run.id, run.id, "--profile", "nope"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "FLIGHTLOG_HOME": str(home)},
    )  # fmt: skip
    assert (
        missing.returncode == 1
        and missing.stderr.startswith("error: run ")
        and "names on this run: train" in missing.stderr
    )
    assert not ref.exists()


def test_log_profile_takes_the_table_itself_and_refuses_what_is_no_table(home: Path) -> None:
    """Given the data rather than its profile, ``run.log_profile`` profiles it: what is kept is a
    profile live drift and ``data drift`` can read, never the raw columns under its name."""
    run = flightlog.init(project="data", name="train")
    run.log_profile("columns", {"age": [31.0, 45.0, 28.0, None], "plan": ["a", "b", "a", "a"]})
    run.log_profile("frame", pd.DataFrame({"age": [1.0, 2.0]}))
    with pytest.raises(InvalidInput, match="cannot profile a int"):
        run.log_profile("nothing", 42)
    run.finish()
    client = flightlog.Client()
    kept = {e["name"]: e["data"] for e in client.evidence(run.id, kind="profile")}
    assert set(kept) == {"columns", "frame"}
    assert kept["columns"]["row_count"] == 4 and kept["frame"]["row_count"] == 2
    assert Profile.from_dict(kept["columns"])["age"].null_share == 0.25
