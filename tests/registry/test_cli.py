"""`flightlog models …`, `flightlog deploy`, `flightlog deployments …` as a user runs them: the
real command against a real embedded store, with runs recorded by a real training script."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.helpers import cli, cli_json, run_script

_TRAIN = """
import flightlog, pathlib, sys
data = pathlib.Path("data.csv"); data.write_text("x,y\\n1,2\\n")
weights = pathlib.Path("weights.npz"); weights.write_bytes(sys.argv[-1].encode() if len(sys.argv) > 1 else b"w1")
run = flightlog.init(project="fraud-team", name="train")
run.log_input(data, name="data.csv")
run.log_artifact(weights, name="model/weights.npz")
run.finish()
print(run.id)
"""


def _train(home: Path, content: str) -> str:
    code = _TRAIN.replace('sys.argv[-1].encode() if len(sys.argv) > 1 else b"w1"', repr(content.encode()))
    return run_script(home, code).stdout.strip().splitlines()[-1]


def test_register_alias_get_deploy_from_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    first, second = _train(home, "weights one"), _train(home, "weights two")

    v1 = cli_json(
        home,
        "models",
        "register",
        first,
        "model/weights.npz",
        "fraud",
        "--alias",
        "production",
        "--tag",
        "stage=candidate",
    )
    assert (v1["version"], v1["run_id"], v1["aliases"], v1["tags"]) == (
        1,
        first,
        ["production"],
        {"stage": "candidate"},
    )
    assert v1["digest"] == hashlib.sha256(b"weights one").hexdigest()
    cli_json(home, "models", "register", second, "model/weights.npz", "fraud")
    listing = cli_json(home, "models", "ls")
    assert [(m["name"], m["latest_version"], m["aliases"]) for m in listing] == [("fraud", 2, {"production": 1})]

    moved = cli_json(home, "models", "alias", "fraud@production", "2")
    assert moved["change"]["from_version"] == 1 and moved["change"]["to_version"] == 2
    history = cli_json(home, "models", "alias", "fraud@production", "--history")
    assert [(h["from_version"], h["to_version"]) for h in history] == [(None, 1), (1, 2)] and history[-1]["actor"]

    shown = cli_json(home, "models", "show", "models:/fraud@production")
    assert shown["version"]["run_id"] == second and shown["run"]["id"] == second
    assert [i["artifact"]["path"] for i in shown["inputs"]] == ["data.csv"]  # data snapshot → run → version
    assert shown["manifests"] and shown["manifests"][0]["name"] == "data.csv"

    got = cli_json(home, "models", "get", "models:/fraud@production", "-o", str(tmp_path / "out"))
    assert Path(got["path"]).read_bytes() == b"weights two" and got["verified"] is True

    deployed = cli_json(home, "deploy", "fraud@production", "--endpoint", "fraud-api", "--env", "prod")
    assert (deployed["model"], deployed["version"], deployed["changed"]) == ("fraud", 2, True)
    cli_json(home, "deploy", "fraud/1", "--endpoint", "fraud-api", "--env", "prod")
    report = cli_json(home, "deployments", "show", "fraud-api", "--env", "prod")
    assert report["desired"]["version"] == 1
    assert [(h["from_version"], h["to_version"]) for h in report["history"]] == [(None, 2), (2, 1)]
    assert [d["endpoint"] for d in cli_json(home, "deployments", "ls")] == ["fraud-api"]


def test_bad_input_is_a_clear_error_with_exit_1_and_records_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    run = _train(home, "w")
    cli_json(home, "models", "register", run, "model/weights.npz", "fraud")
    cli_json(home, "models", "register", run, "model/weights.npz", "churn")

    def refused(*args: str) -> str:
        proc = cli(home, *args, check=False)
        assert proc.returncode == 1, proc
        return proc.stderr

    assert "never logged 'model/other.npz'" in refused("models", "register", run, "model/other.npz", "fraud")
    assert "model/weights.npz" in refused("models", "register", run, "model/other.npz", "fraud")  # what it did log
    assert "no registered model 'nope'" in refused("models", "show", "nope")
    assert "no alias 'staging'" in refused("models", "get", "fraud@staging", "-o", str(tmp_path / "o"))
    assert "not of 'churn'" in refused("models", "alias", "fraud@production", "churn@champion")
    assert "no version 9" in refused("models", "alias", "fraud@production", "9")
    assert "no version 5" in refused("deploy", "fraud/5", "--endpoint", "fraud-api", "--env", "prod")
    assert "endpoint" in refused("deploy", "fraud/1", "--endpoint", "bad endpoint!", "--env", "prod")
    assert "no deployment" in refused("deployments", "show", "fraud-api", "--env", "prod")
    # nothing recorded half: still one version each, no alias, no deployment
    models = {m["name"]: m for m in cli_json(home, "models", "ls")}
    assert models["fraud"]["latest_version"] == 1 and models["fraud"]["aliases"] == {}
    assert cli_json(home, "deployments", "ls") == []
    assert json.loads(cli(home, "models", "alias", "fraud@production", "--history", "--format", "json").stdout) == []
