"""Runs that cost what they must (issue 32): a run whose whole life fits in one flush ships once
from ``finish()`` without a journal file made and removed around it, yet keeps everything in the
journal when the store does not take it; a sweep of short runs with console capture shares one
drain thread."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import flightlog
from tests.helpers import child_env, cli, run_script

pytestmark = pytest.mark.embedded_only("about the embedded store's writer and the process's console")

SHORT = """
    import json, flightlog
    run = flightlog.init(project="p", name="short", params={"lr": 0.1}, resources=False)
    for step in range(3):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    run.finish()
    print(json.dumps({"id": run.id, "stats": run.stats}))
"""


def test_a_short_run_is_stored_when_finish_returns_without_a_journal_file(home: Path) -> None:
    out = run_script(home, SHORT, env=child_env(home, FLIGHTLOG_FLUSH_INTERVAL="60"))
    run_id = json.loads(out.stdout)["id"]
    client = flightlog.Client()
    info = client.run(run_id)
    assert info.status == "succeeded" and info.params == {"lr": 0.1}
    assert client.metric_history(run_id, "loss").steps.tolist() == [0, 1, 2]
    assert not (home / "journal").exists(), "nothing was journaled for a run the store took at once"


def test_a_short_run_the_store_does_not_take_is_journaled_before_finish_returns(home: Path, tmp_path: Path) -> None:
    away = tmp_path / "not-a-directory"
    away.write_text("a file where the store's directory should be")
    out = run_script(home, SHORT, env=child_env(home, FLIGHTLOG_STORE=f"sqlite:///{away}/flightlog.db"))
    run_id = json.loads(out.stdout)["id"]
    assert "run `flightlog sync`" in out.stderr
    assert [p.suffix for p in (home / "journal").iterdir()] == [".journal"]
    cli(home, "sync")  # the journal, shipped to the store (FLIGHTLOG_HOME's) afterwards
    client = flightlog.Client()
    info = client.run(run_id)
    assert info.status == "succeeded" and info.params == {"lr": 0.1}
    assert client.metric_history(run_id, "loss").steps.tolist() == [0, 1, 2]


SWEEP = """
    import json, threading, flightlog
    ids = []
    for i in range(12):
        run = flightlog.init(project="sweep", name=f"trial-{i}", params={"i": i}, resources=False, quiet=True)
        print(f"trial {i} says hello")
        run.finish()
        ids.append(run.id)
    names = [t.name for t in threading.enumerate()]
    print(json.dumps({"ids": ids, "console_threads": names.count("flightlog-console")}))
"""


def test_a_sweep_of_short_runs_shares_one_console_drain_thread_and_records_each_runs_lines(home: Path) -> None:
    out = run_script(home, SWEEP, env=child_env(home, FLIGHTLOG_CONSOLE="auto"))
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["console_threads"] == 1
    client = flightlog.Client()
    for i, run_id in enumerate(report["ids"]):
        assert [e.message for e in client.logs(run_id)] == [f"trial {i} says hello"]


def test_calls_with_other_names_or_orders_keep_every_value_with_its_name_and_step(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipper turns runs of calls that logged the same names into columns at once: calls
    that name them in another order, add or leave out a name, or carry a point that cannot be
    stored (dropped alone) must still land each value under its own name at its own step."""
    monkeypatch.setenv("FLIGHTLOG_FLUSH_INTERVAL", "60")  # everything in the one flush of finish()
    run = flightlog.init(project="p", resources=False)
    expected: dict[str, list[tuple[int, float]]] = {}
    for step in range(300):
        data = {"loss": 1.0 / (step + 1), "acc": step / 300}
        if step % 50 == 7:
            data = {"acc": step / 300, "loss": 1.0 / (step + 1)}  # the same names, in another order
        if step % 40 == 9:
            data["lr"] = 0.1 * step
        if step % 70 == 3:
            del data["acc"]
        run.log(data, step=step)
        for name, value in data.items():
            expected.setdefault(name, []).append((step, value))
    run._w.metrics.append((2**63, 0.0, {"loss": 5.0}))  # a step no store keeps, past Run.log's checks
    run.finish()
    client = flightlog.Client()
    for name, points in expected.items():
        history = client.metric_history(run.id, name)
        assert list(zip(history.steps.tolist(), history.values.tolist(), strict=True)) == points, name
    assert run.stats["dropped"] == 1


def test_git_state_names_changed_files_exactly_and_is_not_asked_outside_a_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    from flightlog.sdk.context import git_info

    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "src" / "a.py").write_text("a = 1\n")
    (repo / "b.py").write_text("b = 1\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "first"], cwd=repo, check=True)
    (repo / "src" / "a.py").write_text("a = 2\n")  # " M src/a.py": the first line of the status
    info = git_info(str(repo / "src"))
    assert info is not None and info["dirty"] is True and info["root"] == str(repo)
    assert info["changed_files"] == ["src/a.py"] and info["branch"] in ("master", "main")
    outside = tmp_path / "plain"
    outside.mkdir()
    spy = tmp_path / "bin"
    spy.mkdir()
    (spy / "git").write_text(f"#!/bin/sh\ntouch {tmp_path / 'git-was-run'}\nexit 128\n")
    (spy / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{spy}:{os.environ['PATH']}")
    assert git_info(str(outside)) is None
    assert not (tmp_path / "git-was-run").exists(), "no .git above it: git is not asked"
    assert git_info(str(repo)) is None and (tmp_path / "git-was-run").exists()  # (the spy answers inside one)


SAMPLED_SWEEP = """
    import json, time, flightlog
    ids, t0 = [], time.monotonic()
    for i in range(30):
        run = flightlog.init(project="sweep", name=f"trial-{i}", quiet=True)  # resources on, the default
        run.log({"x": float(i)})
        run.finish()
        ids.append(run.id)
    print(json.dumps({"ids": ids, "elapsed": time.monotonic() - t0}))
"""


def test_every_short_run_carries_a_reading_of_its_process_taken_once_an_interval(home: Path) -> None:
    """The process's sampler is resumed by each run: a run gets a sample, but the process is not
    read once per run: a run that starts less than an interval after the last reading gets that
    reading (sdk/sampling.py)."""
    report = json.loads(run_script(home, SAMPLED_SWEEP).stdout.strip().splitlines()[-1])
    client = flightlog.Client()
    times = set()
    for run_id in report["ids"]:
        samples = client.resources(run_id)
        assert samples, f"run {run_id} has no reading of its process"
        times.update(s["time"] for s in samples)
    assert len(times) <= report["elapsed"] / 1.0 + 2, "more readings than one an interval"
