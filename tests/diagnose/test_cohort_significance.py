"""Statistics before headlines (issue #29, item 5): a cohort difference is reported with its
sample sizes and a test suited to it — two proportions for a rate with its counts (accuracy,
precision, recall), a bootstrap interval otherwise (F1, AUC, MAE, RMSE) — and one that is not
significant at the sizes seen is a hint below 0.5, never a headline. Real evaluations logged by
the SDK in child processes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from flightlog.client import Client
from flightlog.data.cohorts import compare_cohorts, evaluate
from tests.helpers import run_script

COIN_FLIPS = """
import numpy as np
import flightlog

rng = np.random.default_rng({seed})
n = 400
region = rng.choice(["US", "FR", "DE", "IT"], n)
y = rng.integers(0, 2, n)
pred = rng.integers(0, 2, n)  # coin flips: no cohort is better or worse than another
run = flightlog.init(project="churn", name="coin")
run.log_eval(y, pred, cohorts={{"region": region}})
run.finish()
print(run.id)
"""

REGION_WORSE = """
import numpy as np
import flightlog

rng = np.random.default_rng({seed})
n = 2000
region = rng.choice(["US", "FR", "DE"], n, p=[0.6, 0.3, 0.1])
y = rng.integers(0, 2, n)
correct = np.where(region == "DE", rng.random(n) < {de}, rng.random(n) < {rest})
pred = np.where(correct, y, 1 - y)
run = flightlog.init(project="churn", name="region")
run.log_eval(y, pred, cohorts={{"region": region}})
run.finish()
print(run.id)
"""

MAE = """
import numpy as np
import flightlog

rng = np.random.default_rng({seed})
n = 3000
device = rng.choice(["ios", "android", "web"], n)
y = rng.normal(50, 10, n)
noise = np.where(device == "web", {web}, 2.0)
pred = y + rng.normal(0, 1, n) * noise
run = flightlog.init(project="eta", name="mae")
run.log_eval(y, pred, cohorts={{"device": device}})
run.finish()
print(run.id)
"""


def _id(home: Path, code: str) -> str:
    return run_script(home, code).stdout.split()[-1]


def _cohort(report: dict) -> dict | None:
    return next((f for f in report["findings"] if f["category"] == "cohort_regression"), None)


@pytest.mark.embedded_only("the same evaluation evidence over either transport")
def test_a_cohort_difference_of_coin_flips_is_a_hint_with_its_sizes_and_test(home: Path) -> None:
    base = _id(home, COIN_FLIPS.format(seed=100))
    run = _id(home, COIN_FLIPS.format(seed=6))  # the aggregate "improved", recall of IT fell 10 points
    with Client(home) as c:
        report = c.diagnose(run, baseline=base)
    finding = _cohort(report)
    assert finding is not None and finding["confidence"] < 0.5, report["findings"]
    assert not any(f["confidence"] >= 0.5 for f in report["findings"]), report["findings"]
    details = " ".join(e["detail"] for e in finding["evidence"])
    assert "not significant" in finding["summary"], finding["summary"]
    assert "two proportions" in details and "p=" in details and "n=" in details, details


@pytest.mark.embedded_only("the same evaluation evidence over either transport")
def test_a_real_cohort_regression_leads_with_its_test(home: Path) -> None:
    base = _id(home, REGION_WORSE.format(seed=13, de=0.88, rest=0.88))
    run = _id(home, REGION_WORSE.format(seed=3, de=0.62, rest=0.93))
    with Client(home) as c:
        report = c.diagnose(run, baseline=base)
    top = report["findings"][0]
    assert top["category"] == "cohort_regression" and top["confidence"] >= 0.5, report["findings"]
    details = " ".join(e["detail"] for e in top["evidence"])
    assert "region=DE" in details and "two proportions" in details, details


@pytest.mark.embedded_only("the same evaluation evidence over either transport")
def test_an_error_metric_is_tested_with_a_bootstrap_interval(home: Path) -> None:
    base = _id(home, MAE.format(seed=1, web=2.0))
    run = _id(home, MAE.format(seed=2, web=3.5))
    with Client(home) as c:
        report = c.diagnose(run, baseline=base)
    finding = _cohort(report)
    assert finding is not None and finding["confidence"] >= 0.3, report["findings"]
    details = " ".join(e["detail"] for e in finding["evidence"])
    assert "device=web" in details and "bootstrap" in details, details


def test_compare_cohorts_gives_each_difference_its_test() -> None:
    rng = np.random.default_rng(0)
    n = 4000
    group = rng.choice(["a", "b"], n)
    y = rng.integers(0, 2, n)
    good = np.where(rng.random(n) < 0.9, y, 1 - y)
    worse = np.where((group == "b") & (rng.random(n) < 0.3), 1 - y, good)
    cmp = compare_cohorts(evaluate(y, worse, cohorts={"group": group}), evaluate(y, good, cohorts={"group": group}))
    rows = {(r["value"], r["metric"]): r for r in cmp["regressions"]}
    acc = rows[("b", "accuracy")]
    assert acc["test"]["method"] == "two_proportions"
    assert acc["test"]["significant"] is True and acc["test"]["p_value"] < 1e-6
    assert acc["test"]["n"] == acc["count"] and acc["test"]["baseline_n"] == acc["baseline_count"]
    lo, hi = acc["test"]["interval"]
    assert lo < acc["delta"] < hi < 0
    f1 = rows[("b", "f1")]
    assert f1["test"]["method"] == "bootstrap" and f1["test"]["significant"] is True
    assert cmp["significant_regressions"] >= 2
