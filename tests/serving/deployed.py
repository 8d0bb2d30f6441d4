"""A deployed model with real evidence, made the way users make it: two training runs that log
their weights and data, versions 1 and 2 registered from them, ``@production`` moved from 1 to
2, ``fraud-api`` in ``prod`` deployed at v1 and then v2, and real serving processes (the
decorator) that record traffic for each version. Used by the serving API tests and the UI's
Models and Deployments pages.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import child_env, cli_json

TRAIN = """
import pathlib, sys, flightlog
from flightlog.data import profile
version, rows = sys.argv[1], int(sys.argv[2])
data = pathlib.Path(f"train-{version}.csv")
data.write_text("amount,country,label\\n" + "".join(f"{i},{'BR' if i % 3 else 'US'},{i % 2}\\n" for i in range(rows)))
weights = pathlib.Path(f"weights-{version}.npz")
weights.write_bytes(b"weights of v" + version.encode() * 100)
run = flightlog.init(project="fraud-team", name=f"train fraud v{version}", params={"lr": 0.1 * int(version)})
run.log_input(data, name="data/train.csv")
run.log_profile("train", profile(str(data)))  # what live drift compares the version's inputs with
run.log({"auc": 0.9 + int(version) / 100}, step=1)
run.log_artifact(weights, name="model/weights.npz")
run.finish()
print(run.id)
"""

# A replica of fraud-api: serves `n` requests through the decorator (v2 is slower and fails
# one request in ten), then exits, or with "stay" keeps serving until its stdin closes. It sends
# amounts 0..n-1 from BR only: against the training data (amounts 0..rows-1, two thirds BR) the
# live inputs drift.
REPLICA = """
import sys, time
from flightlog import serving
version, n, stay = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "stay"
serving.attach(model=f"fraud:{version}", endpoint="fraud-api", env="prod", project="fraud-team",
               inputs=["amount"], sample=1.0,
               interval=0.2, heartbeat=2.0)

@serving.track
def predict(features):
    time.sleep(0.001 if version == "1" else 0.004)
    if version == "2" and features["amount"] % 10 == 0:
        raise ValueError("bad amount")
    return {"score": features["amount"] / 100}

for i in range(n):
    try:
        predict({"amount": i, "country": "BR"}, request_id=f"v{version}-{i}")
    except ValueError:
        pass
print("served", flush=True)
if stay:
    sys.stdin.read()
"""


# v2 fails one request in ten: a server evaluating this fires `fraud-errors` on fraud-api v2
ALERT_RULES = """\
settings:
  interval: 1s
  lookback: 1d
rules:
  - name: fraud-errors
    kind: serving_error_rate
    endpoint: fraud-api
    above: 0.05
    window: 1d
    min_requests: 10
"""


LIVE_REQUESTS = 200  # the live v2 replica's: with the 40 before, enough records for live drift to be judged


@dataclass
class Deployed:
    home: Path
    runs: dict[int, str]  # version → the training run that made it
    live: subprocess.Popen[str] | None  # a v2 replica still serving (its stdin open), or None

    def stop(self) -> None:
        if self.live is not None:
            self.live.communicate(timeout=60)  # closes its stdin (it then ends), reads and closes its pipes


def _replicas(home: Path, version: int, count: int, requests: int) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(REPLICA), str(version), str(requests), "exit"],
            env=child_env(home),
            cwd=home.parent,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"replica v{version} failed:\n{out}\n{err}"


def deploy_with_traffic(home: Path, *, live: bool = False) -> Deployed:
    """The whole story in ``home`` (see the module docstring); ``live`` leaves one v2 replica serving."""
    home.mkdir(parents=True, exist_ok=True)
    runs = {}
    for version, rows in ((1, 300), (2, 120)):
        script = textwrap.dedent(TRAIN)
        proc = subprocess.run(
            [sys.executable, "-c", script, str(version), str(rows)],
            env=child_env(home),
            cwd=home.parent,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        runs[version] = proc.stdout.split()[-1]
        alias = ["--alias", "production"]
        cli_json(home, "models", "register", runs[version], "model/weights.npz", "fraud", *alias)
    cli_json(home, "models", "alias", "fraud@staging", "2")
    cli_json(home, "models", "alias", "fraud@production", "1")  # back: production goes 2 → 1 ...
    cli_json(home, "models", "alias", "fraud@production", "2")  # ... and forward again
    cli_json(home, "models", "edit", "fraud", "--description", "card fraud scorer", "--tag", "team=risk")
    cli_json(home, "deploy", "fraud/1", "--endpoint", "fraud-api", "--env", "prod")
    _replicas(home, 1, 2, 40)
    cli_json(home, "deploy", "fraud@production", "--endpoint", "fraud-api", "--env", "prod")
    _replicas(home, 2, 1, 40)
    stay = None
    if live:
        stay = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(REPLICA), "2", str(LIVE_REQUESTS), "stay"],
            env=child_env(home),
            cwd=home.parent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert stay.stdout is not None
        line = stay.stdout.readline()
        assert line.strip() == "served", stay.stderr.read() if stay.stderr else line
    return Deployed(home, runs, stay)
