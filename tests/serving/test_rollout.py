"""A rollout as a team lives it, end to end: a scikit-learn model behind FastAPI under uvicorn
with the serving middleware, v1 then v2 over several minutes of a clock that runs 30 times faster
than the wall (serving.clock.FastClock: never waiting out real minutes). v2 is 3.6x slower at p50
and 2 % of its requests take a 300 ms path, its live amounts moved away from its training data,
1 % of all requests are FastAPI 422s (a string where a number belongs, the request echoed back
with the customer's e-mail, name and SSN), and a quiet minute at the end holds three requests.

`diagnose --deployment` leads with v2's p50 and p99 increase, each with its size and both
versions' numbers of requests; live drift is judged and finds the moved feature; nothing personal
reaches the store or the journal; the hashes kept are keyed, not a plain sha256."""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import signal
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from flightlog import Client, serving
from tests.helpers import cli_json, run_script
from tests.serving.conftest import ModelServer

pytest.importorskip("fastapi", reason="the rollout test drives a FastAPI app: fastapi must be installed")
pytestmark = pytest.mark.timeout(600)

SPEED = 30.0  # simulated seconds per real second: a minute every 2 s
PER_VERSION = 700
BAD_EVERY = 100  # 1 % of requests are 422s

_TRAIN = """
import sys, joblib, numpy as np, pandas as pd
import flightlog
from flightlog.data import profile
from sklearn.linear_model import LogisticRegression

seed, c = int(sys.argv[1]), float(sys.argv[2])
rng = np.random.default_rng(seed)
frame = pd.DataFrame({"amount": rng.normal(100, 20, 4000).round(2), "country": rng.choice(["BR", "US", "DE"], 4000)})
y = (frame["amount"] > 120).astype(int)
run = flightlog.init(project="fraud-team", name="train fraud", params={"C": c, "seed": seed})
run.log_profile("train", profile(frame))
model = LogisticRegression(C=c).fit(frame[["amount"]].to_numpy(), y)
joblib.dump(model, "model.joblib")
run.log_artifact("model.joblib")
run.register_model("model.joblib", "fraud")
run.finish()
print(run.id)
"""


def _train(home: Path, work: Path, seed: int, c: float) -> str:
    work.mkdir()
    code = "import sys\nsys.argv[1:] = " + repr([str(seed), str(c)]) + "\n" + textwrap.dedent(_TRAIN)
    return str(run_script(home, code, cwd=work, timeout=120).stdout.split()[-1])


def _person(i: int) -> dict[str, str]:
    return {
        "email": f"customer{i}@example.com",
        "name": f"Jane Q. Customer{i}",
        "ssn": f"{100 + i % 500:03d}-45-{1000 + i % 9000:04d}",
    }


async def _traffic(
    url: str, n: int, first: int, amount_mean: float, rng: random.Random
) -> tuple[list[int], list[dict[str, Any]]]:
    """``n`` requests, 3 at a time (a busy test machine must not lift v1's tail over v2's median);
    every BAD_EVERY-th a 422 (amount as text, no country)."""
    statuses: list[int] = []
    bad: list[dict[str, Any]] = []
    queue = list(range(first, first + n))

    async def worker(http: httpx.AsyncClient) -> None:
        while queue:
            i = queue.pop(0)
            body: dict[str, Any] = {
                "amount": round(rng.gauss(amount_mean, 20), 2),
                "country": rng.choice(["BR", "US", "DE"]),
                **_person(i),
            }
            if i % BAD_EVERY == 0:
                body = {"amount": "a lot", **_person(i)}
                bad.append(body)
            statuses.append((await http.post("/score", json=body)).status_code)

    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        await asyncio.gather(*(worker(http) for _ in range(3)))
    return statuses, bad


def _sim_minute(real_base: float) -> int:
    return int((real_base + (time.time() - real_base) * SPEED) // 60)


def _serve(home: Path, real_base: float, **env: str) -> ModelServer:
    return ModelServer(home, {"CLOCK_SPEED": str(SPEED), "CLOCK_REAL_BASE": repr(real_base), **env}, "fastapp:app")


def test_a_rollout_under_real_traffic_tells_the_right_story(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    rng = random.Random(30)
    v1_run = _train(home, tmp_path / "train-v1", 1, 1.0)
    v2_run = _train(home, tmp_path / "train-v2", 2, 0.5)
    cli_json(home, "models", "alias", "fraud@production", "1")
    real_base = time.time()
    cli_json(home, "deploy", "fraud@production", "--endpoint", "fraud-api", "--env", "prod")
    v1 = _serve(home, real_base, SERVE_MS="5.5")
    try:
        s1, bad1 = asyncio.run(_traffic(v1.url, PER_VERSION, 1, 100.0, rng))
    finally:
        assert v1.stop(signal.SIGTERM) in (0, -signal.SIGTERM), v1.output()
    cli_json(home, "models", "alias", "fraud@production", "2")
    cli_json(home, "deploy", "fraud@production", "--endpoint", "fraud-api", "--env", "prod")
    v2 = _serve(home, real_base, SERVE_MS="20", SLOW_EVERY="50", SLOW_MS="300")
    try:
        s2, bad2 = asyncio.run(_traffic(v2.url, PER_VERSION, PER_VERSION + 1, 140.0, rng))
        last = _sim_minute(real_base)
        while _sim_minute(real_base) <= last + 1:  # a quiet minute follows: the clock turns, nothing is sent
            time.sleep(0.2)
        quiet, _ = asyncio.run(_traffic(v2.url, 3, 10_001, 140.0, rng))
    finally:
        assert v2.stop(signal.SIGTERM) in (0, -signal.SIGTERM), v2.output()
    assert s1.count(422) == s2.count(422) == 7 and quiet == [200, 200, 200]
    assert s1.count(200) == s2.count(200) == PER_VERSION - 7

    report = cli_json(home, "diagnose", "--deployment", "fraud-api", "--env", "prod", "--since", "2h")
    headline = report["headline"]
    # the largest significant change leads, with its size and both versions' numbers of requests
    assert headline.startswith(("p99 latency ×", "p50 latency ×")), headline
    assert "p50 latency ×" in headline and "p99 latency ×" in headline, headline
    assert f"on v2 ({PER_VERSION + 3:,} requests against {PER_VERSION:,} on v1)" in headline, headline
    assert "since fraud v2 rolled out at" in headline, headline
    (change,) = [c for c in report["changes"] if c["kind"] == "version_change"]
    figures = {c["metric"]: c for c in change["evidence"]["changes"]}
    p50, p99 = figures["p50_ms"], figures["p99_ms"]  # v2 sleeps 14.5 ms more; its slow path 300 ms
    assert p50["finding"] and p50["after"] - p50["before"] > 10 and p50["ratio"] > 1.5, p50
    assert p99["finding"] and p99["after"] > 250 and p99["ratio"] > 3, p99
    assert (p50["n_before"], p50["n_after"]) == (PER_VERSION, PER_VERSION + 3)
    assert not figures["error_rate"]["finding"] and not figures["client_error_rate"]["finding"]
    assert report["traffic"]["client_errors"] == 14 and report["traffic"]["errors"] == 0
    # the quiet minute's three fast requests are no improvement: no change reads as one
    for c in report["changes"]:
        if c["kind"] == "latency_step":
            assert c["evidence"]["median_p99_ms"]["after"] > c["evidence"]["median_p99_ms"]["before"], c
    assert "0.3x" not in json.dumps(report["changes"])
    # live drift judged on v2's successful requests, against v2's training data: amount moved
    (drift,) = [c for c in report["changes"] if c["kind"] == "drift"]
    assert [f["feature"] for f in drift["evidence"]["features"]] == ["amount"], drift
    moved = next(d for d in report["differences"] if d.get("name") == "amount")
    assert "bytes" not in moved["summary"] and moved["live"]["mean"] > 130
    assert (report["before"]["run_id"], report["after"]["run_id"]) == (v1_run, v2_run)
    stats = {v["version"]: v for v in cli_json(home, "serving", "stats", "fraud-api", "--by", "version")}
    assert stats["1"]["client_errors"] == 7 and stats["2"]["requests"] == PER_VERSION + 3

    # nothing personal was kept: not the 422s' echoed bodies, not the app's log lines, not the inputs
    personal = {v for body in bad1 + bad2 for k, v in body.items() if k in ("email", "name", "ssn")}
    personal |= {v for i in (1, 2, 350, PER_VERSION + 2) for v in _person(i).values()}
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    found = sorted(v for v in personal if v.encode() in stored)
    assert not found, f"personal data in the store or the journal: {found[:5]}"
    with Client(home) as client:
        rows = serving.predictions(client, "fraud-api", since="2h")
        logged = [e.message for r in client.runs(project="fraud-team", filter="tags.`serving.endpoint` = 'fraud-api'")
                  for e in client.logs(r, component=None) if "scored a request" in e.message]  # fmt: skip
    refused = [r for r in rows if r["status"] == 422]
    assert refused and all(r["output"] is None and not r["inputs"] and not r["input_hashes"] for r in refused)
    assert all(r["error"] == "HTTP 422" for r in refused)
    ok = next(r for r in rows if r["status"] == 200)
    plain = {hashlib.sha256(json.dumps(v, ensure_ascii=False).encode()).hexdigest() for v in personal}
    assert ok["input_hashes"].keys() >= {"email", "name", "ssn"} and not set(ok["input_hashes"].values()) & plain
    assert logged and all("[REDACTED:email]" in m and "[REDACTED:national_id]" in m for m in logged), logged[:3]
