"""`flightlog import mlflow` against stores made by the real `mlflow` package.

MLflow is never a dependency of flightlog: it lives in .bench-venv (`make bench-venv`, the
same install `make bench-peers` uses), which `make test` builds before the suite (the
`mlflow_python` fixture of tests/conftest.py fails, saying so, when it is missing). The truth each test compares against is what MLflow's own client reads back.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

import flightlog
from tests.helpers import cli, cli_json

ROOT = Path(__file__).resolve().parents[2]
MAKE_STORE = Path(__file__).with_name("mlflow_fixtures") / "make_store.py"
N_RUNS = 100
# the module's fixtures run the real mlflow to write 100 runs: about 30 s alone, minutes on two busy cores
pytestmark = pytest.mark.timeout(900)


def _make_store(python: Path, uri: str, artifacts: Path, n: int, **env: str) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [str(python), str(MAKE_STORE), uri, str(artifacts), str(n)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "MLFLOW_ENABLE_ASYNC_LOGGING": "false", **env},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def sqlite_store(mlflow_python: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[dict[str, Any]]]:
    base = tmp_path_factory.mktemp("mlflow-sqlite")
    uri = f"sqlite:///{base}/mlflow.db"
    return uri, _make_store(mlflow_python, uri, base / "artifacts", N_RUNS)


STATUS = {"FINISHED": "succeeded", "FAILED": "failed", "KILLED": "killed"}


def _assert_same_runs(expected: list[dict[str, Any]], client: flightlog.Client) -> None:
    for want in expected:
        got = client.run(want["id"], exact=True)
        assert got.project == want["experiment"] and got.name == want["name"]
        assert got.status == STATUS[want["status"]]
        assert got.started == pytest.approx(want["start_time"] / 1000) and got.ended == pytest.approx(
            want["end_time"] / 1000
        )
        assert got.params == want["params"]
        assert got.tags == want["tags"]
        assert got.parent_id == want["tags"].get("mlflow.parentRunId")
        assert sorted(got.metrics) == sorted(want["metrics"])
        for name, points in want["metrics"].items():
            history = client.metric_history(got.id, name)
            assert history.steps.tolist() == [p[0] for p in points]
            assert history.times.tolist() == pytest.approx([p[1] / 1000 for p in points])
            values = [None if math.isnan(v) else v for v in history.values.tolist()]
            assert values == [p[2] for p in points]
        artifacts = client.artifacts(got.id)
        assert sorted([a.path, a.size] for a in artifacts) == want["artifacts"]
        for artifact in artifacts:
            assert hashlib.sha256(client.artifact_file(artifact).read_bytes()).hexdigest() == artifact.sha256


def test_import_copies_100_runs_exactly_and_a_second_import_changes_nothing(
    home: Path, sqlite_store: tuple[str, list[dict[str, Any]]]
) -> None:
    uri, expected = sqlite_store
    assert len(expected) == N_RUNS
    summary = cli_json(home, "import", "mlflow", "--tracking-uri", uri)
    assert summary["runs"] == N_RUNS and summary["experiments"] == 2 and summary["already_imported"] == 0
    assert summary["params"] == sum(len(r["params"]) for r in expected)
    assert summary["tags"] == sum(len(r["tags"]) for r in expected)
    assert summary["metric_points"] == sum(len(p) for r in expected for p in r["metrics"].values())
    assert summary["artifacts"] == sum(len(r["artifacts"]) for r in expected)
    assert summary["warnings"] == []

    client = flightlog.Client()
    assert len(client.runs(limit=1000)) == N_RUNS  # the deleted run and the empty Default experiment stay behind
    _assert_same_runs(expected, client)

    again = cli_json(home, "import", "mlflow", "--tracking-uri", uri)
    assert again["runs"] == 0 and again["already_imported"] == N_RUNS
    assert len(client.runs(limit=1000)) == N_RUNS
    assert client.metric_history(expected[0]["id"], "loss").steps.size == 6


@pytest.mark.embedded_only("selection and errors are the CLI's; the copy itself is covered over both transports")
def test_import_one_experiment_into_a_chosen_project_and_clear_errors(
    home: Path, sqlite_store: tuple[str, list[dict[str, Any]]]
) -> None:
    uri, expected = sqlite_store
    summary = cli_json(
        home, "import", "mlflow", "--tracking-uri", uri, "--experiment", "nlp", "--project", "moved", "--no-artifacts"
    )
    assert summary["runs"] == sum(1 for r in expected if r["experiment"] == "nlp") and summary["artifacts"] == 0
    assert {r.project for r in flightlog.Client().runs(limit=1000)} == {"moved"}

    missing = cli(home, "import", "mlflow", "--tracking-uri", uri, "--experiment", "audio", check=False)
    assert (
        missing.returncode != 0
        and "no MLflow experiment named 'audio'" in missing.stderr
        and "'vision'" in missing.stderr
    )
    nowhere = cli(home, "import", "mlflow", "--tracking-uri", f"sqlite:///{home}/nope.db", check=False)
    assert nowhere.returncode != 0 and "no MLflow database" in nowhere.stderr
    remote = cli(home, "import", "mlflow", "--tracking-uri", "http://127.0.0.1:5000", check=False)
    assert remote.returncode != 0 and "sqlite://" in remote.stderr


@pytest.mark.embedded_only("the file store reader differs from the database reader, not the transport")
def test_import_from_an_mlflow_file_store(home: Path, mlflow_python: Path, tmp_path: Path) -> None:
    uri = (tmp_path / "mlruns").as_uri()
    # MLflow 3 keeps the file store for existing users only (it calls it maintenance mode)
    expected = _make_store(mlflow_python, uri, tmp_path / "artifacts", 6, MLFLOW_ALLOW_FILE_STORE="true")
    summary = cli_json(home, "import", "mlflow", "--tracking-uri", uri)
    assert summary["runs"] == 6
    _assert_same_runs(expected, flightlog.Client())


# A small store written by the real mlflow, for what an import must not take as it is given.
SMALL_STORE = r"""
import json, sys
from pathlib import Path
from mlflow.tracking import MlflowClient
uri, artifacts = sys.argv[1], Path(sys.argv[2])
client = MlflowClient(tracking_uri=uri)
exp = client.create_experiment("handed-over", artifact_location=(artifacts / "handed-over").as_uri())
out = []
for i in range(3):
    run = client.create_run(exp, run_name=f"r{i}", tags={"api_token": "tok-secret-1", "team": "cv"})
    rid = run.info.run_id
    client.log_param(rid, "db_password", "hunter2-db")
    client.log_param(rid, "db_url", "postgresql://trainer:pw-123456@db/x")
    client.log_param(rid, "lr", "0.1")
    for step in range(3):
        client.log_metric(rid, "loss", 1.0 / (step + 1), timestamp=1_700_000_000_000 + step, step=step)
    f = artifacts / "tmp" / f"summary-{i}.txt"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(f"run {i}\n")
    client.log_artifact(rid, str(f))
    client.set_terminated(rid)
    out.append({"id": rid, "artifact_uri": client.get_run(rid).info.artifact_uri})
print(json.dumps(out))
"""


def _small_store(python: Path, uri: str, artifacts: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [str(python), "-c", SMALL_STORE, uri, str(artifacts)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "MLFLOW_ENABLE_ASYNC_LOGGING": "false", "MLFLOW_ALLOW_FILE_STORE": "true"},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return list(json.loads(proc.stdout))


def test_import_redacts_params_and_tags_and_copies_no_artifact_from_outside_the_store(
    home: Path, mlflow_python: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    uri = f"sqlite:///{store}/mlflow.db"
    store.mkdir()
    a, b, _ = _small_store(mlflow_python, uri, store / "artifacts")
    outside = tmp_path / "outside" / a["id"] / "artifacts"  # even laid out as MLflow lays out a run's folder
    outside.mkdir(parents=True)
    (outside / "credentials").write_text("aws_secret_access_key = copied-from-outside\n")
    db = sqlite3.connect(store / "mlflow.db")
    db.execute("UPDATE runs SET artifact_uri=? WHERE run_uuid=?", (outside.as_uri(), a["id"]))
    db.commit()
    db.close()
    proc = cli(home, "import", "mlflow", "--tracking-uri", uri, "--format", "json", check=False)
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["runs"] == 3 and summary["skipped"] == [
        f"run {a['id']}: artifacts skipped: its artifact_uri {outside.as_uri()} is outside the MLflow store "
        f"({store.resolve()}); pass --allow-external-artifacts to copy them"
    ]
    client = flightlog.Client()
    got = client.run(b["id"], exact=True)
    assert got.params == {
        "db_password": "[REDACTED:secret]",
        "db_url": "postgresql://trainer:[REDACTED:url_password]@db/x",
        "lr": "0.1",
    }
    assert got.tags["api_token"] == "[REDACTED:secret]" and got.tags["team"] == "cv"
    assert [x.path for x in client.artifacts(b["id"])] == ["summary-1.txt"] and client.artifacts(a["id"]) == []
    if (home / "flightlog.db").exists():
        stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
        assert b"copied-from-outside" not in stored and b"hunter2-db" not in stored and b"tok-secret-1" not in stored


@pytest.mark.embedded_only(
    "what the import reads and skips is the importer's; the copy is covered over both transports"
)
def test_import_redacts_keeps_artifacts_inside_the_store_and_skips_what_is_malformed(
    home: Path, mlflow_python: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    mlruns = store / "mlruns"
    a, b, c = _small_store(mlflow_python, mlruns.as_uri(), store / "artifacts")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "credentials").write_text("aws_secret_access_key = copied-from-outside\n")
    metas = {p.parent.name: p for p in mlruns.glob("*/*/meta.yaml")}
    # a: its artifact_uri points outside the store; b: a symlink out of its artifact folder and a
    # malformed metric line; c: a meta.yaml that is not YAML
    meta = metas[a["id"]].read_text().replace(a["artifact_uri"], outside.as_uri())
    metas[a["id"]].write_text(meta)
    (Path(b["artifact_uri"].removeprefix("file://")) / "creds").symlink_to(outside / "credentials")
    with open(metas[b["id"]].parent / "metrics" / "loss", "a") as f:
        f.write("1700000000009 not-a-number 3\n")
    metas[c["id"]].write_text("run_id: [unclosed\n")

    proc = cli(home, "import", "mlflow", "--tracking-uri", mlruns.as_uri(), "--format", "json", check=False)
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["runs"] == 2 and sorted(summary["run_ids"]) == sorted([a["id"], b["id"]])
    skipped = "\n".join(summary["skipped"])
    assert len(summary["skipped"]) == 4, skipped
    assert f"run {c['id']}: skipped, its meta.yaml cannot be read" in skipped
    assert f"run {b['id']}: metric 'loss' line 4" in skipped and "that line was skipped" in skipped
    assert (
        f"run {a['id']}: artifacts skipped: its artifact_uri {outside.as_uri()} is outside the MLflow store" in skipped
    )
    assert f"run {b['id']}: artifact creds skipped: a symbolic link out of the run's artifact folder" in skipped
    assert "--allow-external-artifacts" in skipped and "skipped: " in proc.stderr

    client = flightlog.Client()
    for run in (a, b):
        got = client.run(run["id"], exact=True)
        assert got.params == {
            "db_password": "[REDACTED:secret]",
            "db_url": "postgresql://trainer:[REDACTED:url_password]@db/x",
            "lr": "0.1",
        }
        assert got.tags["api_token"] == "[REDACTED:secret]" and got.tags["team"] == "cv"
    assert client.metric_history(b["id"], "loss").steps.tolist() == [0, 1, 2]  # the good lines of that file
    assert [x.path for x in client.artifacts(b["id"])] == ["summary-1.txt"]
    assert client.artifacts(a["id"]) == []
    stored = b"".join(p.read_bytes() for p in home.rglob("*") if p.is_file())
    assert b"copied-from-outside" not in stored and b"hunter2-db" not in stored and b"tok-secret-1" not in stored

    other = tmp_path / "other-home"
    asked = cli(
        other,
        "import",
        "mlflow",
        "--tracking-uri",
        mlruns.as_uri(),
        "--allow-external-artifacts",
        "--format",
        "json",
        check=False,
    )
    assert asked.returncode == 1  # run c and the bad line are still skipped
    assert len(json.loads(asked.stdout)["skipped"]) == 2
    client = flightlog.Client(home=other)
    assert [x.path for x in client.artifacts(a["id"])] == ["credentials"]
    assert sorted(x.path for x in client.artifacts(b["id"])) == ["creds", "summary-1.txt"]
