"""examples/serving end to end: the rollout driver as a real subprocess on a fresh store (it
trains, registers, deploys, runs replicas under uvicorn, sends traffic, restarts them on v2),
then what the store holds afterwards, read back as a user would."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from flightlog import Client, serving
from flightlog.registry import Registry
from flightlog.serving.histogram import LatencyHistogram
from tests.helpers import child_env

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "serving"
REQUESTS = 160  # per traffic phase: the rolling restart's middle phase sends a quarter


def test_the_rollout_example_leaves_two_versions_a_deployment_history_and_serving_evidence(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE / "rollout.py"), "--requests", str(REQUESTS), "--rows", "2000"]
        + ["--work", str(tmp_path / "work")],
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

    with Client(home) as client:
        registry = Registry(client)
        versions = registry.versions("fraud", "fraud")
        assert [v.version for v in versions] == [1, 2]
        assert {v.tags.get("kind") for v in versions} == {"linear", "wide"}
        moves = [(c.from_version, c.to_version) for c in registry.alias_history("fraud", "production", "fraud")]
        assert moves == [(None, 1), (1, 2)]

        report = registry.deployment_report("fraud-api", "prod", "fraud")
        assert report["desired"]["version"] == 2
        assert [(h["from_version"], h["to_version"]) for h in report["history"]] == [(None, 1), (1, 2)]
        served = sorted(str(r["version"]) for r in report["replicas"])
        assert served == ["1", "1", "2", "2"]
        assert {r["status"] for r in report["replicas"]} == {"succeeded"}  # drained, not killed

        per_version: dict[str, LatencyHistogram] = defaultdict(LatencyHistogram)
        requests: dict[str, int] = defaultdict(int)
        for row in serving.aggregates(client, "fraud-api"):
            per_version[row["version"]].merge(LatencyHistogram.from_dict(row["latency"]))
            requests[row["version"]] += row["requests"]
        # only /predict is evidence: v1 served the first phase and half the middle one, v2 the rest
        assert dict(requests) == {"1": REQUESTS + REQUESTS // 8, "2": REQUESTS + REQUESTS // 8}
        p99 = {v: h.percentiles()["p99"] for v, h in per_version.items()}
        assert p99["2"] > p99["1"], p99  # the bigger model is slower

        rows = serving.predictions(client, "fraud-api")
        assert len(rows) == 2 * (REQUESTS + REQUESTS // 8)  # FLIGHTLOG_SERVING_SAMPLE=1 in the example
        labeled = [r for r in rows if r["label"] is not None]
        assert len(labeled) >= 0.85 * len(rows)
        assert all(set(r["input_hashes"]) == {"merchant"} for r in rows)  # not allow-listed: hashed
        hits: dict[tuple[str, str], list[bool]] = defaultdict(list)
        for r in labeled:
            hits[(r["version"], r["inputs"]["country"])].append(r["output"]["fraud"] == bool(r["label"]))
        accuracy = {k: sum(v) / len(v) for k, v in hits.items()}
        assert accuracy[("2", "BR")] < accuracy[("1", "BR")] - 0.05, accuracy  # v2 lost BR's pattern
        assert abs(accuracy[("2", "US")] - accuracy[("1", "US")]) < 0.05, accuracy
