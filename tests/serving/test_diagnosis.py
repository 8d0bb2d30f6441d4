"""`flightlog diagnose --deployment`: the way back from a production change to the training behind it.

Two real training runs (different CSVs logged with `run.log_input`, different params, each with
a data profile and an evaluation per cohort) register fraud v1 and v2; v1 is deployed and a real
replica process records its traffic through the public recorder API (`serving.attach`,
`Replica.record` with explicit times, labels by request id); v2 is deployed and its replica is
slower and worse on country=BR. The real CLI names the rollout, v1 → v2 and the data change; the
HTTP route answers the same JSON; bad input is a clear error.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog.server.testing import serve_in_thread
from tests.helpers import child_env, cli, cli_json, run_script

_TRAIN = """
import csv, json, pathlib, random, sys
import numpy as np
import flightlog
from flightlog.data import profile

rows, lr, acc_br = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
rng = random.Random(rows)
path = pathlib.Path("train.csv")
with path.open("w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["amount", "country", "label"])
    for _ in range(rows):
        w.writerow([round(rng.gauss(100, 20), 2), rng.choice(["BR", "US"]), rng.randint(0, 1)])
run = flightlog.init(project="fraud", name="train-fraud", params={"lr": lr, "rows": rows})
run.log_input(path)
run.log_profile("train", profile(str(path)))
countries = np.array([rng.choice(["BR", "US"]) for _ in range(400)])
y = np.array([rng.randint(0, 1) for _ in range(400)])
hit = np.array([rng.random() < (acc_br if c == "BR" else 0.93) for c in countries])
run.log_eval(y, np.where(hit, y, 1 - y), cohorts={"country": countries})
model = pathlib.Path("model.bin"); model.write_bytes(str(rows).encode())
run.log_artifact(model, name="model.bin")
run.register_model("model.bin", "fraud")
run.finish()
print(run.id)
"""

_REPLICA = """
import random, sys, time
from flightlog import serving

version, first_minute, latency_ms, acc_br = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
replica = serving.attach(model=f"fraud:{version}", endpoint="fraud-api", env="prod", project="fraud",
                         inputs=["amount", "country"], sample=1.0, capture_logs=False)
rng = random.Random(int(version))
labels = []
for minute in range(first_minute, first_minute + 6):
    for i in range(40):
        at = minute * 60 + 5 + i  # an explicit wall time inside the minute
        end = time.perf_counter() + (at - time.time())  # record() takes perf_counter times
        country = "BR" if i % 2 else "US"
        y = rng.randint(0, 1)
        right = rng.random() < (acc_br if country == "BR" else 0.93)
        rid = replica.new_request_id()
        replica.record(end, rng.uniform(0.8, 1.2) * latency_ms / 1000, 200, rid, y if right else 1 - y,
                       {"amount": rng.gauss(100, 20), "country": country})
        labels.append((rid, y))
replica.flush()
for rid, y in labels:
    replica.log_label(rid, y)
replica.close(finish=True)
"""


def _script(home: Path, code: str, *args: Any) -> str:
    source = "import sys\nsys.argv[1:] = " + repr([str(a) for a in args]) + "\n" + code
    return run_script(home, source).stdout


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """fraud v1 (300 rows, lr 0.1) then v2 (180 rows, lr 0.3, BR worse), each deployed and served."""
    home = tmp_path_factory.mktemp("diag") / "home"
    home.mkdir()
    runs = {}
    for version, rows, lr, acc_br in (("1", 300, 0.1, 0.93), ("2", 180, 0.3, 0.7)):
        work = home.parent / f"train-v{version}"
        work.mkdir()
        source = "import sys\nsys.argv[1:] = " + repr([str(rows), str(lr), str(acc_br)]) + "\n" + _TRAIN
        runs[version] = run_script(home, source, cwd=work).stdout.split()[-1]
    t0 = int(time.time() // 60)
    cli_json(home, "deploy", "fraud/1", "--endpoint", "fraud-api", "--env", "prod")
    _script(home, _REPLICA, "1", t0 + 1, 10.0, 0.93)
    cli_json(home, "deploy", "fraud/2", "--endpoint", "fraud-api", "--env", "prod")
    _script(home, _REPLICA, "2", t0 + 8, 35.0, 0.4)
    cli_json(home, "deploy", "fraud/1", "--endpoint", "quiet-api", "--env", "staging")  # deployed, never served
    report = cli_json(home, "diagnose", "--deployment", "fraud-api")  # once: the data stack's import is slow
    return {"home": home, "runs": runs, "t0": t0, "report": report}


def test_the_cli_names_the_rollout_the_versions_and_the_training_data_change(deployed: dict[str, Any]) -> None:
    home, runs, t0, report = deployed["home"], deployed["runs"], deployed["t0"], deployed["report"]
    assert report["endpoint"] == "fraud-api" and report["env"] == "prod"
    kinds = [c["kind"] for c in report["changes"]]
    rollouts = [c for c in report["changes"] if c["kind"] == "rollout"]
    assert [(r["evidence"]["from_version"], r["evidence"]["to_version"]) for r in rollouts] == [(None, "1"), ("1", "2")]
    v2 = rollouts[-1]
    assert v2["time"].startswith(time.strftime("%Y-%m-%dT%H:%M", time.gmtime((t0 + 8) * 60)))  # its first traffic
    step = next(c for c in report["changes"] if c["kind"] == "latency_step")
    assert step["time"] == v2["time"]
    assert step["evidence"]["median_p99_ms"]["after"] / step["evidence"]["median_p99_ms"]["before"] > 2.5
    assert "error_rate_step" not in kinds  # no errors either side: no step
    cohort = next(c for c in report["changes"] if c["kind"] == "cohort")
    assert "country=BR" in cohort["summary"] and "version 1 live" in cohort["summary"]

    assert report["before"]["version"] == "1" and report["before"]["run_id"] == runs["1"]
    assert report["after"]["version"] == "2" and report["after"]["run_id"] == runs["2"]
    data = next(d for d in report["differences"] if d["kind"] == "data")
    assert data["summary"] == "training data train.csv changed (rows 300 → 180)"
    assert data["before"]["rows"] == 300 and data["after"]["rows"] == 180
    assert data["before"]["digest"] != data["after"]["digest"]
    params = {d["before"]: d["after"] for d in report["differences"] if d["kind"] == "params"}
    assert params[0.1] == 0.3
    assert any(d["kind"] == "cohort_metrics" and "country=BR" in d["summary"] for d in report["differences"])

    headline = report["headline"]
    # 240 requests a version: p50 and p95 are judged (a p99 needs 500), each with its size and n
    assert headline.startswith("p95 latency ×3") or headline.startswith("p50 latency ×3"), headline
    assert "p50 latency ×3" in headline and " ms) " in headline
    assert "on v2 (240 requests against 240 on v1)" in headline
    change = next(c for c in report["changes"] if c["kind"] == "version_change")
    assert change["time"] == v2["time"]
    p99 = next(c for c in change["evidence"]["changes"] if c["metric"] == "p99_ms")
    assert not p99["finding"] and p99["why_not"] == "too few requests (240 of the 500 a p99 needs on each side)"
    assert [v["version"] for v in report["versions"]] == ["1", "2"] and report["versions"][1]["requests"] == 240
    assert "cohort country=BR accuracy −" in headline
    assert "since fraud v2 rolled out at " in headline
    assert headline.endswith("v2's training data train.csv changed (rows 300 → 180)")
    assert report["text"].splitlines()[0] == headline

    human = cli(home, "diagnose", "--deployment", "fraud-api", "--env", "prod").stdout
    assert "diagnosis of deployment fraud-api" in human and "rows 300 → 180" in human and "latency_step" in human
    assert "version_change" in human and "v1: 240 requests" in human


def test_the_http_route_answers_the_same_report(deployed: dict[str, Any]) -> None:
    home = deployed["home"]
    from_cli = deployed["report"]
    with serve_in_thread(home) as srv:
        got = httpx.get(f"{srv.url}/api/v1/deployments/fraud-api/diagnosis", params={"env": "prod", "since": "24h"})
        assert got.status_code == 200, got.text
        over_http = got.json()
        missing = httpx.get(f"{srv.url}/api/v1/deployments/nope-api/diagnosis")
        bad_env = httpx.get(f"{srv.url}/api/v1/deployments/fraud-api/diagnosis", params={"env": "qa"})
        quiet = httpx.get(f"{srv.url}/api/v1/deployments/quiet-api/diagnosis")
        registry_route = httpx.get(f"{srv.url}/api/v1/deployments/fraud-api/prod")  # still the registry's
        remote = cli_json(  # the CLI against the server reads through the API: the same report
            home, "diagnose", "--deployment", "fraud-api", env=child_env(home.parent / "client", FLIGHTLOG_URL=srv.url)
        )
    keys = ("headline", "changes", "before", "after", "differences", "env", "traffic")
    assert {k: over_http[k] for k in keys} == {k: from_cli[k] for k in keys}
    assert {k: remote[k] for k in keys} == {k: from_cli[k] for k in keys}
    assert missing.status_code == 404
    assert "known endpoints: fraud-api, quiet-api" in missing.json()["error"]["message"]
    assert bad_env.status_code == 404 and "its environments: prod" in bad_env.json()["error"]["message"]
    assert quiet.status_code == 200
    assert quiet.json()["headline"].startswith(
        "quiet-api (staging): no traffic recorded in this window, so nothing to diagnose yet (fraud v1 deployed at "
    )
    assert registry_route.status_code == 200 and registry_route.json()["desired"]["version"] == 2


def test_bad_input_is_a_clear_error(deployed: dict[str, Any]) -> None:
    home = deployed["home"]
    unknown = cli(home, "diagnose", "--deployment", "nope-api", check=False)
    assert unknown.returncode == 1
    assert "no deployment or serving replica of endpoint 'nope-api'" in unknown.stderr
    assert "known endpoints: fraud-api, quiet-api" in unknown.stderr
    env = cli(home, "diagnose", "--deployment", "fraud-api", "--env", "qa", check=False)
    assert env.returncode == 1 and "its environments: prod" in env.stderr
    both = cli(home, "diagnose", deployed["runs"]["2"], "--deployment", "fraud-api", check=False)
    assert both.returncode == 2 and "--deployment diagnoses an endpoint, not a run" in both.stderr
    neither = cli(home, "diagnose", check=False)
    assert neither.returncode == 2 and "--deployment ENDPOINT" in neither.stderr
    since = cli(home, "diagnose", "--deployment", "fraud-api", "--since", "yesterday", check=False)
    assert since.returncode == 1 and "invalid since 'yesterday'" in since.stderr


def test_a_firing_serving_alert_carries_the_short_form(
    deployed: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import textwrap

    import flightlog
    from flightlog.alerts.config import parse_config
    from flightlog.alerts.service import build_engine

    monkeypatch.setenv("FLIGHTLOG_HOME", str(deployed["home"]))
    rules = """
        rules:
          - name: p99
            kind: serving_latency
            endpoint: fraud-api
            above: 25
            window: 1d
    """
    with flightlog.Client() as client:
        engine, dispatcher = build_engine(client, parse_config(textwrap.dedent(rules)), say=lambda _: None, started=0.0)
        engine.cycle()
        alerts = engine.store.open_alerts()
        dispatcher.close()
    (alert,) = alerts
    assert alert.labels["version"] == "2"
    brief = alert.evidence["diagnosis"]
    assert "since fraud v2 rolled out" in brief["headline"], json.dumps(brief)
    assert brief["before"]["version"] == "1" and brief["after"]["version"] == "2"
    assert brief["command"] == "flightlog diagnose --deployment fraud-api --env prod"


def test_serving_drift_puts_each_feature_beside_its_training_data(deployed: dict[str, Any]) -> None:
    """240 records a version: judged (a significance test on the live rows' own number); the
    amounts and countries are those the runs trained on, so nothing drifted; both sides shown."""
    home, runs = deployed["home"], deployed["runs"]
    doc = cli_json(home, "serving", "drift", "fraud-api", "--since", "24h")
    assert [v["version"] for v in doc["versions"]] == ["2", "1"]  # the version serving now first
    v2 = doc["versions"][0]
    assert v2["training_run"] == runs["2"] and v2["rows"] == 240 and v2["judged"] and v2["failed"] == 0
    by = {f["feature"]: f for f in v2["features"]}
    assert set(by) == {"amount", "country"} and doc["drifted"] == []
    assert by["amount"]["test"] == "ks" and by["country"]["test"] == "z"
    assert by["amount"]["training"]["kind"] == "numeric" and 90 < by["amount"]["live"]["mean"] < 110
    assert {t["value"] for t in by["country"]["live"]["top"]} == {"BR", "US"}
    one = cli_json(home, "serving", "drift", "fraud-api", "--since", "24h", "--version", "1")
    assert [v["version"] for v in one["versions"]] == ["1"] and one["versions"][0]["training_run"] == runs["1"]
    human = cli(home, "serving", "drift", "fraud-api", "--since", "24h").stdout
    assert "version 2 (training run" in human and "amount" in human and "mean" in human
    unknown = cli(home, "serving", "drift", "fraud-api", "--version", "9", check=False)
    assert unknown.returncode == 1 and "its versions: 1, 2" in unknown.stderr
