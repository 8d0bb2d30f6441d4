"""The real `flightlog` command against a store filled by the real SDK."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

import flightlog
from tests.helpers import child_env, cli, cli_json, run_script


@pytest.fixture
def filled(home: Path, tmp_path: Path) -> dict[str, str]:
    ids = {}
    for name, lr in (("base", 0.001), ("fast", 0.1)):
        run = flightlog.init(project="vision", name=name, params={"lr": lr}, tags={"team": "cv"}, resources=False)
        for i in range(50):
            run.log({"loss": 1.0 / (i + 1), "acc": i / 50})
        run.log({"loss": math.nan})
        run.log_event("loading data", component="data")
        run.log_event("disk almost full", level="warning", component="io")
        run.log_event("could not open shard 7", level="error", component="data")
        model = tmp_path / f"{name}.bin"
        model.write_bytes(name.encode() * 10)
        run.log_artifact(model, kind="model")
        with run.stage("train"):
            pass
        run.finish()
        ids[name] = run.id
    return ids


def test_runs_ls_json_shape(home: Path, filled: dict[str, str]) -> None:
    runs = cli_json(home, "runs", "ls", "--project", "vision")
    assert {r["name"] for r in runs} == {"base", "fast"}
    r = runs[0]
    assert isinstance(r["id"], str) and r["created"].endswith("Z") and r["status"] == "succeeded"
    assert r["metrics"]["loss"] == "NaN" and r["params"]["lr"] in (0.001, 0.1)
    top = cli_json(home, "runs", "ls", "--filter", "params.lr > 0.01", "--order-by", "-metrics.acc")
    assert [r["name"] for r in top] == ["fast"]


def test_runs_ls_text_and_filter_error(home: Path, filled: dict[str, str]) -> None:
    out = cli(home, "runs", "ls", "-c", "params.lr,metrics.acc").stdout
    assert "base" in out and "fast" in out and "0.98" in out
    bad = cli(home, "runs", "ls", "--filter", "status = ", check=False)
    assert bad.returncode == 1 and "error:" in bad.stderr and "position 9" in bad.stderr and bad.stdout == ""


def test_runs_show_by_prefix_and_ambiguity(home: Path, filled: dict[str, str]) -> None:
    doc = cli_json(home, "runs", "show", filled["fast"][:6])
    assert doc["id"] == filled["fast"] and doc["stages"][0]["name"] == "train"
    assert doc["artifacts"][0]["path"] == "fast.bin" and doc["context"]["python"]
    text = cli(home, "runs", "show", filled["base"]).stdout
    assert "params" in text and "lr = 0.001" in text
    missing = cli(home, "runs", "show", "zzzz", check=False)
    assert missing.returncode == 1 and "no run with id or prefix 'zzzz'" in missing.stderr


def test_logs_filters(home: Path, filled: dict[str, str]) -> None:
    run = filled["base"]
    lines = cli(home, "logs", run).stdout.splitlines()
    assert lines == [
        "INFO     data: loading data",
        "WARNING  io: disk almost full",
        "ERROR    data: could not open shard 7",
    ]
    warn = cli(home, "logs", run, "--level", "warning").stdout
    assert "disk almost full" in warn and "could not open" in warn and "loading data" not in warn
    assert cli(home, "logs", run, "--level", "30").stdout == warn, "a level by number, as the API takes it"
    assert "shard 7" in cli(home, "logs", run, "--grep", "SHARD").stdout
    assert cli(home, "logs", run, "--tail", "1").stdout.count("\n") == 1
    stamped = cli(home, "logs", run, "--timestamps", "--component", "data").stdout.splitlines()
    assert len(stamped) == 2 and stamped[0][:4].isdigit() and stamped[0][23] == "Z"
    lines = cli(home, "logs", run, "--format", "json").stdout.splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["level"] for e in events] == ["info", "warning", "error"]
    assert cli(home, "logs", run, "--since", "1h").stdout.count("\n") == 3
    assert cli(home, "logs", run, "--since", "2999-01-01").stdout == ""
    bad = cli(home, "logs", run, "--level", "loud", check=False)
    assert bad.returncode == 1 and "unknown log level 'loud'" in bad.stderr
    far = cli(home, "logs", run, "--since", "99999999999w", check=False)
    assert far.returncode == 1 and "outside the years 1 to 9999" in far.stderr


def test_logs_follow_streams_a_running_run(home: Path) -> None:
    import subprocess
    import sys

    code = """
import time, flightlog
run = flightlog.init(project="p", resources=False)
print(run.id, flush=True)
for i in range(6):
    run.log_event(f"tick {i}")
    time.sleep(0.3)
run.finish()
"""
    with subprocess.Popen(
        [sys.executable, "-c", code],
        env=child_env(home, FLIGHTLOG_FLUSH_INTERVAL="0.1"),
        stdout=subprocess.PIPE,
        text=True,
    ) as writer:
        assert writer.stdout is not None
        run_id = writer.stdout.readline().strip()
        time.sleep(0.5)
        follow = cli(home, "logs", run_id, "--follow", timeout=30)
        writer.wait(timeout=30)
    assert follow.stdout.splitlines() == [f"INFO     tick {i}" for i in range(6)]


def test_metrics_summary_and_history(home: Path, filled: dict[str, str]) -> None:
    rows = cli_json(home, "metrics", filled["base"])
    loss = next(r for r in rows if r["name"] == "loss")
    assert loss["count"] == 51 and loss["nonfinite"] == 1 and loss["max"] == 1.0
    text = cli(home, "metrics", filled["base"]).stdout
    assert "▁" in text or "█" in text
    history = cli_json(home, "metrics", filled["base"], "acc")
    assert history["steps"][:3] == [0, 1, 2] and len(history["values"]) == 50
    missing = cli(home, "metrics", filled["base"], "nope", check=False)
    assert missing.returncode == 1 and "has no metric 'nope'" in missing.stderr and "acc" in missing.stderr


def test_artifacts_list_get_and_lineage(home: Path, filled: dict[str, str], tmp_path: Path) -> None:
    arts = cli_json(home, "artifacts", filled["fast"])
    assert arts[0]["path"] == "fast.bin" and arts[0]["size"] == 40
    dest = tmp_path / "got.bin"
    cli(home, "artifacts", filled["fast"], "get", "fast.bin", "-o", str(dest))
    assert dest.read_bytes() == b"fast" * 10
    assert cli_json(home, "artifacts", filled["fast"], "lineage")["run"] == filled["fast"]
    bad = cli(home, "artifacts", filled["fast"], "get", "nope.bin", check=False)
    assert bad.returncode == 1 and "no artifact 'nope.bin'" in bad.stderr


def test_artifacts_get_refuses_to_overwrite_without_force(home: Path, filled: dict[str, str], tmp_path: Path) -> None:
    mine = tmp_path / "mine" / "fast.bin"
    mine.parent.mkdir()
    mine.write_bytes(b"my own notes")
    for where in (str(mine), str(mine.parent)):  # the file named, and a folder that already holds one of that name
        refused = cli(home, "artifacts", filled["fast"], "get", "fast.bin", "-o", where, check=False)
        assert refused.returncode == 1 and str(mine) in refused.stderr and "--force" in refused.stderr
        assert mine.read_bytes() == b"my own notes"
    assert sorted(p.name for p in mine.parent.iterdir()) == ["fast.bin"]  # nothing half-written beside it
    cli(home, "artifacts", filled["fast"], "get", "fast.bin", "-o", str(mine), "--force")
    assert mine.read_bytes() == b"fast" * 10


def test_rm_needs_yes_without_a_terminal(home: Path, filled: dict[str, str]) -> None:
    refused = cli(home, "runs", "rm", filled["base"], check=False)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert cli_json(home, "runs", "rm", filled["base"], "--yes")["count"] == 1
    assert [r["name"] for r in cli_json(home, "runs", "ls")] == ["fast"]


@pytest.mark.embedded_only(
    "retention works on the store directly, on the server's host (a remote client is refused)", postgres=True
)
def test_gc_by_age_and_size_with_dry_run(home: Path, filled: dict[str, str]) -> None:
    dry = cli_json(home, "gc", "--max-size", "1", "--dry-run")
    assert dry["dry_run"] and len(dry["runs"]) == 2
    assert len(cli_json(home, "runs", "ls")) == 2
    assert cli_json(home, "gc", "--older-than", "30d", "--yes")["runs"] == []
    done = cli_json(home, "gc", "--max-size", "1", "--yes")
    assert len(done["runs"]) == 2 and done["blobs"] == 2
    assert cli_json(home, "runs", "ls") == []
    bad = cli(home, "gc", "--older-than", "soon", check=False)
    assert bad.returncode == 1 and "invalid --older-than 'soon'" in bad.stderr


def test_version_and_projects(home: Path, filled: dict[str, str]) -> None:
    assert cli_json(home, "version")["version"] == flightlog.__version__
    assert cli_json(home, "projects") == [
        {
            "name": "vision",
            "runs": 2,
            "serving_runs": 0,
            "last_created": pytest.approx(cli_json(home, "projects")[0]["last_created"]),
            "running": 0,
            "failed": 0,
        }
    ]


def test_crashed_run_is_reported_lost_by_readers(home: Path) -> None:
    """A run whose owner vanished without an end record reads as crashed once its journal is shipped."""
    proc = run_script(
        home,
        """
        import os, flightlog
        run = flightlog.init(project="p", resources=False)
        run.log({"a": 1.0})
        run._w.flush()
        print(run.id, flush=True)
        os._exit(0)  # no atexit, no finish: like a lost host
        """,
    )
    run_id = proc.stdout.strip()
    cli(home, "sync")
    assert cli_json(home, "runs", "show", run_id)["status"] == "crashed"
