"""Real pipelines: every step attempt a child run under `flightlog run`, retries, caching, gates."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import cli

import flightlog
from flightlog.pipeline import load_pipeline_file, run_pipeline

PY = sys.executable

# A step that records each time it really ran (so a test can tell a run from a cache hit).
STEP = """
import os, sys
name = os.environ["FLIGHTLOG_STEP"]
with open("produced.log", "a") as f:
    f.write(name + "\\n")
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def run_file(path: Path, **kw: Any) -> Any:
    return run_pipeline(load_pipeline_file(path), quiet=True, **kw)


def produced(tmp_path: Path) -> list[str]:
    log = tmp_path / "produced.log"
    return log.read_text().split() if log.exists() else []


@pytest.mark.embedded_only("runs several processes; the transports are covered by the cache test")
def test_a_transient_failure_is_retried_with_its_checkpoint_and_succeeds(home: Path, tmp_path: Path) -> None:
    write(
        tmp_path,
        "fetch.py",
        """
        import os
        import flightlog
        run = flightlog.init()
        if not os.path.exists("tried"):
            open("tried", "w").close()
            open("ckpt.bin", "w").write("state")
            run.checkpoint("ckpt.bin", step=7)
            raise ConnectionRefusedError("[Errno 111] Connection refused: feature store at 10.0.0.5:5432")
        open("resumed_from.txt", "w").write(os.environ.get("FLIGHTLOG_RESUME_FROM", ""))
    """,
    )
    path = write(
        tmp_path,
        "p.yaml",
        f"""
        name: retrying
        steps:
          fetch: {{command: [{PY}, fetch.py], retries: 2, retry_on: [service_unavailable], retry_delay: 0.1s}}
    """,
    )
    result = run_file(path)
    assert result.status == "succeeded"
    fetch = result.steps["fetch"]
    assert [a["status"] for a in fetch.attempts] == ["failed", "succeeded"]
    assert fetch.attempts[0]["category"] == "service_unavailable"
    assert (tmp_path / "resumed_from.txt").read_text() == str((tmp_path / "ckpt.bin").resolve())
    client = flightlog.Client()
    children = client.store.children(result.run_id)
    assert sorted(children) == sorted(a["run"] for a in fetch.attempts)  # each attempt is a child run
    first = client.run(fetch.attempts[0]["run"])
    assert (first.status, first.parent_id, first.name) == ("failed", result.run_id, "retrying.fetch")
    assert client.run(result.run_id).status == "succeeded"


@pytest.mark.embedded_only("runs several processes; the transports are covered by the cache test")
def test_a_non_retryable_failure_is_not_retried_and_stops_downstream(home: Path, tmp_path: Path) -> None:
    write(
        tmp_path,
        "train.py",
        """
        lr = -0.1
        raise ValueError(f"learning rate must be positive, got {lr}")
    """,
    )
    path = write(
        tmp_path,
        "p.yaml",
        f"""
        name: badparam
        steps:
          train: {{command: [{PY}, train.py], retries: 3, retry_delay: 0.1s}}
          publish: {{command: [{PY}, -c, pass], needs: [train]}}
    """,
    )
    result = run_file(path)
    assert result.status == "failed"
    train = result.steps["train"]
    assert len(train.attempts) == 1 and train.category == "bad_parameter"
    assert "not retried: bad_parameter is not in retry_on" in (train.reason or "")
    assert result.steps["publish"].status == "skipped"
    assert "upstream step 'train' failed" in (result.steps["publish"].reason or "")
    pipeline = flightlog.Client().run(result.run_id)
    assert pipeline.status == "failed" and pipeline.failure["step"] == "train"


def test_a_second_run_reuses_unchanged_steps_and_reruns_what_an_input_change_reaches(
    home: Path, tmp_path: Path
) -> None:
    write(
        tmp_path,
        "step.py",
        STEP
        + """
if name == "prepare":
    open("clean.csv", "w").write(open("raw.csv").read().upper())
if name == "train":
    open("model.txt", "w").write("model of " + open("clean.csv").read())
""",
    )
    (tmp_path / "raw.csv").write_text("a,b\n1,2\n")
    path = write(
        tmp_path,
        "p.yaml",
        f"""
        name: cached
        steps:
          prepare: {{command: [{PY}, step.py], inputs: [raw.csv], outputs: [clean.csv]}}
          lint: {{command: [{PY}, step.py]}}
          train: {{command: [{PY}, step.py], needs: [prepare], inputs: [clean.csv], outputs: [model.txt]}}
    """,
    )
    first = run_file(path)
    assert first.status == "succeeded" and sorted(produced(tmp_path)) == ["lint", "prepare", "train"]

    second = run_file(path)
    assert second.status == "succeeded"
    assert {n: s.status for n, s in second.steps.items()} == {"prepare": "cached", "lint": "cached", "train": "cached"}
    assert second.steps["train"].cached_from == first.steps["train"].run
    reused = {i["artifact"]["path"]: i["produced_by"] for i in flightlog.Client().lineage(second.run_id)["inputs"]}
    assert reused["train/model.txt"] == [first.steps["train"].run]  # the reuse, as lineage
    assert sorted(produced(tmp_path)) == ["lint", "prepare", "train"]  # nothing ran again

    (tmp_path / "raw.csv").write_text("a,b\n1,3\n")
    third = run_file(path)
    assert {n: s.status for n, s in third.steps.items()} == {
        "prepare": "succeeded",
        "lint": "cached",
        "train": "succeeded",
    }
    assert sorted(produced(tmp_path)) == ["lint", "prepare", "prepare", "train", "train"]

    client = flightlog.Client()
    lineage = client.lineage(third.steps["train"].run)  # reuse and re-runs are linked by content hash
    assert lineage["parent"] == third.run_id
    assert lineage["inputs"][0]["produced_by"] == [third.steps["prepare"].run]

    listing = json.loads(cli(home, "pipeline", "ls", "--name", "cached", "--format", "json").stdout)
    assert [r["id"] for r in listing] == [third.run_id, second.run_id, first.run_id]
    assert listing[0]["counts"] == {"cached": 1, "succeeded": 2} and listing[0]["status"] == "succeeded"
    shown = cli(home, "pipeline", "show", second.run_id[:12]).stdout
    assert f"cache hit: run {first.steps['train'].run[:12]}" in shown and "3 of 3 steps reused from cache" in shown


@pytest.mark.embedded_only("runs several processes; the transports are covered by the cache test")
def test_independent_steps_run_in_parallel_up_to_max_parallel(home: Path, tmp_path: Path) -> None:
    # each step waits until both have started: with max_parallel 2 they meet, with 1 they could not
    write(
        tmp_path,
        "meet.py",
        """
        import os, sys, time
        name = os.environ["FLIGHTLOG_STEP"]
        open(name + ".started", "w").close()
        other = "right" if name == "left" else "left"
        deadline = time.time() + 60
        while not os.path.exists(other + ".started"):
            if time.time() > deadline:
                sys.exit("the other step never started")
            time.sleep(0.05)
    """,
    )
    path = write(
        tmp_path,
        "p.yaml",
        f"""
        name: parallel
        steps:
          left: {{command: [{PY}, meet.py]}}
          right: {{command: [{PY}, meet.py]}}
    """,
    )
    result = run_file(path, max_parallel=2)
    assert result.status == "succeeded"
    for name in ("left", "right"):
        (tmp_path / f"{name}.started").unlink()
    again = json.loads(cli(home, "pipeline", "run", str(path), "--no-cache", "-j", "2", "--format", "json").stdout)
    assert [s["status"] for s in again["steps"]] == ["succeeded", "succeeded"]  # --no-cache: both ran again
    assert (tmp_path / "left.started").exists() and (tmp_path / "right.started").exists()


@pytest.mark.embedded_only("runs several processes; the transports are covered by the cache test")
def test_function_steps_run_as_child_runs_with_their_params(home: Path, tmp_path: Path) -> None:
    write(
        tmp_path,
        "steps_mod.py",
        """
        import flightlog

        @flightlog.step(params={"n": 3}, outputs=["numbers.txt"])
        def make(n):
            open("numbers.txt", "w").write(" ".join(str(i) for i in range(n)))

        @flightlog.step(needs=[make], inputs=["numbers.txt"])
        def total():
            flightlog.init().log({"total": sum(int(x) for x in open("numbers.txt").read().split())})
    """,
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import steps_mod  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    result = flightlog.Pipeline("funcs", [steps_mod.make, steps_mod.total], workdir=tmp_path).run(quiet=True)
    assert result.status == "succeeded"
    client = flightlog.Client()
    assert client.run(result.steps["make"].run).params == {"n": 3}
    assert client.metrics(result.steps["total"].run)["total"].last == 3


@pytest.mark.embedded_only("nothing runs: the check happens before any run exists")
def test_an_unknown_executor_is_an_error_before_any_run_exists(home: Path, tmp_path: Path) -> None:
    from flightlog.errors import InvalidInput

    pipe = flightlog.Pipeline("nowhere", workdir=tmp_path).add("a", [PY, "-c", "pass"])
    with pytest.raises(InvalidInput, match="unknown executor 'kubernetes': use one of local, ray"):
        pipe.run(executor="kubernetes", quiet=True)
    assert not (home / "flightlog.db").exists() or flightlog.Client().runs() == []


@pytest.mark.embedded_only("runs several processes; the transports are covered by the cache test")
def test_a_step_past_its_timeout_is_stopped_by_the_runner_and_named_so(home: Path, tmp_path: Path) -> None:
    pipe = flightlog.Pipeline("slow", workdir=tmp_path)
    pipe.add("hang", [PY, "-c", "import time; time.sleep(60)"], timeout="1s")
    result = pipe.run(quiet=True)
    hang = result.steps["hang"]
    assert result.status == "failed" and hang.status == "failed" and hang.category == "timeout"
    assert hang.reason is not None and hang.reason.startswith("timeout")
    run = flightlog.Client().run(hang.run)
    assert run.end_reason == "timeout" and run.exit_code == 124
