"""Real workloads under `flightlog run` (and the SDK alone), diagnosed: nan_loss, loss_plateau, data_drift, cohort_regression, metric_regressed, healthy."""

from __future__ import annotations

import pytest

from tests.diagnose._workload_checks import check, outcomes_for
from tests.diagnose.harness import Outcome, discover

WORKLOADS = discover("nan_loss", "loss_plateau", "data_drift", "cohort_regression", "metric_regressed", "healthy")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    return outcomes_for(WORKLOADS, tmp_path_factory)


@pytest.mark.parametrize("workload_id", [w.id for w in WORKLOADS])
def test_top_finding(outcomes: dict[str, Outcome], workload_id: str) -> None:
    check(outcomes[workload_id])
