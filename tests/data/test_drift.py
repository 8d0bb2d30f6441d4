"""Each drift test detects a shifted distribution and stays quiet on a resample of the same one."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from flightlog.data import Thresholds, drift, profile
from flightlog.errors import InvalidInput

SEED = 20261130


def _numeric(n: int, shift: float, rng: np.random.Generator) -> pd.DataFrame:
    return pd.DataFrame({"x": rng.normal(10 + shift, 2, n)})


def _categorical(n: int, probs: list[float], rng: np.random.Generator) -> pd.DataFrame:
    cats = ["red", "green", "blue", "black"][: len(probs)]
    return pd.DataFrame({"c": rng.choice(cats, n, p=probs)})


# (test, reference sample, resample of the same distribution, shifted sample)
CASES = {
    "ks": (
        lambda r: _numeric(400, 0, r),
        lambda r: _numeric(500, 0, r),
        lambda r: _numeric(500, 1.0, r),
    ),
    "wasserstein": (
        lambda r: _numeric(50_000, 0, r),
        lambda r: _numeric(40_000, 0, r),
        lambda r: _numeric(40_000, 0.5, r),
    ),
    "chisquare": (
        lambda r: _categorical(600, [0.5, 0.3, 0.2], r),
        lambda r: _categorical(600, [0.5, 0.3, 0.2], r),
        lambda r: _categorical(600, [0.35, 0.3, 0.35], r),
    ),
    "z": (
        lambda r: _categorical(800, [0.7, 0.3], r),
        lambda r: _categorical(800, [0.7, 0.3], r),
        lambda r: _categorical(800, [0.6, 0.4], r),
    ),
    "jensenshannon": (
        lambda r: _categorical(30_000, [0.4, 0.3, 0.2, 0.1], r),
        lambda r: _categorical(30_000, [0.4, 0.3, 0.2, 0.1], r),
        lambda r: _categorical(30_000, [0.2, 0.2, 0.3, 0.3], r),
    ),
}


@pytest.mark.parametrize("test", list(CASES))
def test_detects_a_shift_and_stays_quiet_on_a_resample(test: str) -> None:
    rng = np.random.default_rng(SEED)
    make_ref, make_same, make_shifted = CASES[test]
    ref = profile(make_ref(rng))
    same = drift(ref, profile(make_same(rng))).columns[0]
    moved = drift(ref, profile(make_shifted(rng))).columns[0]
    assert same.test == moved.test == test
    assert not same.drifted, same
    assert moved.drifted, moved
    if test in ("ks", "chisquare", "z"):
        assert same.p_value is not None and same.p_value >= 0.05
        assert moved.p_value is not None and moved.p_value < 0.05
        assert same.threshold == 0.05
    else:
        assert same.p_value is None and moved.p_value is None
        assert same.statistic < 0.1 <= moved.statistic
        assert same.threshold == 0.1
    # PSI is reported alongside; it grows with the shift (and is noisy on small samples).
    assert same.psi is not None and moved.psi is not None and same.psi < moved.psi


def test_wasserstein_is_normed_by_the_reference_std() -> None:
    rng = np.random.default_rng(SEED)
    a = profile(pd.DataFrame({"x": rng.normal(0, 1, 20_000)}))
    b = profile(pd.DataFrame({"x": rng.normal(0.3, 1, 20_000)}))
    scaled_a = profile(pd.DataFrame({"x": rng.normal(0, 1000, 20_000)}))
    scaled_b = profile(pd.DataFrame({"x": rng.normal(300, 1000, 20_000)}))
    d1 = drift(a, b).columns[0].statistic
    d2 = drift(scaled_a, scaled_b).columns[0].statistic
    assert d1 == pytest.approx(0.3, abs=0.05) and d2 == pytest.approx(d1, abs=0.05)


def test_thresholds_can_be_overridden_globally_and_per_column() -> None:
    rng = np.random.default_rng(SEED)
    ref = profile(pd.DataFrame({"x": rng.normal(0, 1, 5000), "y": rng.normal(0, 1, 5000)}))
    cur = profile(pd.DataFrame({"x": rng.normal(0.2, 1, 5000), "y": rng.normal(0.2, 1, 5000)}))
    default = drift(ref, cur)
    assert [c.drifted for c in default.columns] == [True, True]
    relaxed = drift(ref, cur, thresholds={"wasserstein": 0.5})
    assert [c.drifted for c in relaxed.columns] == [False, False]
    one = drift(ref, cur, column_thresholds={"y": 0.5})
    assert [c.drifted for c in one.columns] == [True, False] and one.columns[1].threshold == 0.5
    small = drift(ref, cur, thresholds=Thresholds(sample_limit=10_000))
    assert {c.test for c in small.columns} == {"ks"}
    with pytest.raises(InvalidInput, match="unknown drift threshold"):
        drift(ref, cur, thresholds={"wassertein": 0.5})


def test_a_test_can_be_forced_per_column() -> None:
    rng = np.random.default_rng(SEED)
    ref = profile(pd.DataFrame({"x": rng.normal(0, 1, 5000), "c": rng.choice(["a", "b", "c"], 5000)}))
    cur = profile(pd.DataFrame({"x": rng.normal(0.5, 1, 5000), "c": rng.choice(["a", "b", "c"], 5000)}))
    r = drift(ref, cur, tests={"x": "ks", "c": "chisquare"})
    x, c = r.columns
    assert (x.test, c.test) == ("ks", "chisquare")
    assert x.drifted and x.p_value is not None and x.p_value < 1e-10  # sketch-based KS on 5,000 values
    assert not c.drifted
    with pytest.raises(InvalidInput, match="does not apply"):
        drift(ref, cur, tests={"x": "chisquare"})
    with pytest.raises(InvalidInput, match="unknown drift test"):
        drift(ref, cur, tests={"x": "anderson"})


def test_dataset_verdict_comes_from_the_share_of_drifted_columns() -> None:
    rng = np.random.default_rng(SEED)
    cols = {f"c{i}": rng.normal(0, 1, 3000) for i in range(4)}
    ref = profile(pd.DataFrame(cols))
    moved = {
        k: v + (1.0 if k in ("c0",) else 0.0) for k, v in {f"c{i}": rng.normal(0, 1, 3000) for i in range(4)}.items()
    }
    one = drift(ref, profile(pd.DataFrame(moved)))
    assert one.drift_share == 0.25 and not one.dataset_drift
    moved2 = {k: v + (1.0 if k in ("c0", "c1") else 0.0) for k, v in moved.items()}
    two = drift(ref, profile(pd.DataFrame(moved2)))
    assert two.drift_share == 0.5 and two.dataset_drift
    assert not drift(ref, profile(pd.DataFrame(moved2)), thresholds={"drift_share": 0.75}).dataset_drift


def test_a_column_that_turned_from_numbers_to_text_is_a_schema_change() -> None:
    ref = profile(pd.DataFrame({"price": [1.5, 2.5, 3.5], "qty": [1, 2, 3], "old": ["a", "b", "c"]}))
    cur = profile(pd.DataFrame({"price": ["1.5", "n/a", "3.5"], "qty": [1, 2, 3], "new": [1, 2, 3]}))
    r = drift(ref, cur)
    changes = {s["column"]: s for s in r.schema_changes}
    assert changes["price"] == {
        "column": "price",
        "change": "type",
        "reference": "double",
        "current": "string",
        "drifted": True,
    }
    assert changes["old"]["change"] == "removed" and changes["old"]["drifted"]
    assert changes["new"]["change"] == "added" and not changes["new"]["drifted"]
    assert [c.column for c in r.columns] == ["qty"]
    assert r.drift_share == pytest.approx(2 / 3) and r.dataset_drift


def test_int_to_float_is_reported_but_still_tested() -> None:
    ref = profile(pd.DataFrame({"n": [1, 2, 3] * 50}))
    cur = profile(pd.DataFrame({"n": [1.0, 2.0, 3.0] * 50}))
    r = drift(ref, cur)
    assert r.schema_changes[0]["change"] == "type" and not r.schema_changes[0]["drifted"]
    assert r.columns[0].test == "ks" and not r.columns[0].drifted


def test_json_has_exactly_the_documented_column_fields() -> None:
    rng = np.random.default_rng(SEED)
    ref = profile(pd.DataFrame({"x": rng.normal(0, 1, 300), "c": rng.choice(["a", "b", "c"], 300)}))
    d = json.loads(json.dumps(drift(ref, ref).to_dict()))
    assert {"dataset_drift", "drift_share", "columns"} <= d.keys()
    assert isinstance(d["dataset_drift"], bool) and isinstance(d["drift_share"], float)
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
        assert c["type"] in ("numeric", "categorical")
        assert c["test"] in ("ks", "wasserstein", "chisquare", "jensenshannon", "z")


def test_drift_accepts_frames_and_profile_dicts() -> None:
    rng = np.random.default_rng(SEED)
    a = pd.DataFrame({"x": rng.normal(0, 1, 200)})
    r = drift(a, profile(a).to_dict())
    assert r.columns[0].statistic == 0 and not r.dataset_drift


def test_empty_and_all_null_columns_are_skipped() -> None:
    ref = profile(pd.DataFrame({"x": [None, None], "y": [1.0, 2.0]}))
    cur = profile(pd.DataFrame({"x": [None, None], "y": [1.0, 2.0]}))
    assert [c.column for c in drift(ref, cur).columns] == ["y"]
