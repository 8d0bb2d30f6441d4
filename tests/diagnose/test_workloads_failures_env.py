"""Real workloads under `flightlog run` (and the SDK alone), diagnosed: oom_killed, missing_file, dependency_error, service_unavailable, credentials_error, bad_parameter."""

from __future__ import annotations

import pytest

from tests.diagnose._workload_checks import check, outcomes_for
from tests.diagnose.harness import Outcome, discover

WORKLOADS = discover(
    "oom_killed", "missing_file", "dependency_error", "service_unavailable", "credentials_error", "bad_parameter"
)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    return outcomes_for(WORKLOADS, tmp_path_factory)


@pytest.mark.parametrize("workload_id", [w.id for w in WORKLOADS])
def test_top_finding(outcomes: dict[str, Outcome], workload_id: str) -> None:
    check(outcomes[workload_id])
