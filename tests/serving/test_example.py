"""examples/serving end to end: the rollout driver as a real subprocess on a fresh store (it
trains, registers, deploys, runs replicas under uvicorn, sends traffic, restarts them on v2),
then what the store holds afterwards, read back as a user would."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from flightlog import Client, serving
from flightlog.registry import Registry
from flightlog.serving.histogram import LatencyHistogram
from tests.helpers import child_env, cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "serving"
REQUESTS = 120  # per traffic phase (a multiple of 8): the rolling restart's middle phase sends a quarter


def test_the_rollout_example_leaves_two_versions_a_deployment_history_and_serving_evidence(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLE / "rollout.py"), "--requests", str(REQUESTS), "--rows", "1500"]
        + ["--work", str(tmp_path / "work")],
        env=child_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.terminate()  # SIGTERM: the driver stops its replicas before it exits
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err

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
        assert served == ["1", "1", "2", "2"], report["replicas"]
        assert {r["status"] for r in report["replicas"]} == {"succeeded"}, report["replicas"]  # drained, not killed

        per_version: dict[str, LatencyHistogram] = defaultdict(LatencyHistogram)
        requests: dict[str, int] = defaultdict(int)
        for row in serving.aggregates(client, "fraud-api"):
            per_version[row["version"]].merge(LatencyHistogram.from_dict(row["latency"]))
            requests[row["version"]] += row["requests"]
        # only /predict is evidence: v1 served the first phase and half the middle one, v2 the rest
        assert dict(requests) == {"1": REQUESTS + REQUESTS // 8, "2": REQUESTS + REQUESTS // 8}, out
        p99 = {v: h.percentiles()["p99"] for v, h in per_version.items()}
        assert p99["2"] > p99["1"], p99  # the bigger model is slower

        rows = serving.predictions(client, "fraud-api")
        assert len(rows) == 2 * (REQUESTS + REQUESTS // 8), len(rows)  # FLIGHTLOG_SERVING_SAMPLE=1 in the example
        labeled = [r for r in rows if r["label"] is not None]
        assert len(labeled) >= 0.85 * len(rows), (len(labeled), len(rows))
        assert all(set(r["input_hashes"]) == {"merchant"} for r in rows)  # not allow-listed: hashed
        hits: dict[tuple[str, str], list[bool]] = defaultdict(list)
        for r in labeled:
            hits[(r["version"], r["inputs"]["country"])].append(r["output"]["fraud"] == bool(r["label"]))
        accuracy = {k: sum(v) / len(v) for k, v in hits.items()}
        assert accuracy[("2", "BR")] < accuracy[("1", "BR")] - 0.05, accuracy  # v2 lost BR's pattern
        assert abs(accuracy[("2", "US")] - accuracy[("1", "US")]) < 0.05, accuracy

    # what a newcomer reads: versions under headed columns, the first deploy said as such,
    # replicas of the old version marked, latencies to 0.01 ms
    models = cli(home, "models", "show", "fraud").stdout
    assert "version" in models and "wide scorer on snapshot-b" in models, models
    shown = cli(home, "deployments", "show", "fraud-api", "--env", "prod").stdout
    assert "first: v1" in shown and "v1 → v2" in shown and shown.count("(not desired)") == 2, shown
    stats = cli(home, "serving", "stats", "fraud-api").stdout
    assert re.search(r" \d+\.\d\d ", stats) and not re.search(r"\d\.\d{3,}", stats), stats
