"""Stopping, losing and resuming a pipeline's controller (a real `flightlog pipeline run` process)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.helpers import child_env, cli

import flightlog

PY = sys.executable

# a: quick; b: waits (until the file "fast" exists) and may be interrupted; c: quick. Each step
# appends its name to produced.log only once its work is done.
STEPS = """
import os, sys, time
name = os.environ["FLIGHTLOG_STEP"]
if name == "b":
    open("b.started", "a").close()
    deadline = time.time() + 120
    while not os.path.exists("fast") and time.time() < deadline:
        time.sleep(0.05)
with open("produced.log", "a") as f:
    f.write(name + "\\n")
"""


def setup_pipeline(tmp_path: Path) -> Path:
    (tmp_path / "step.py").write_text(STEPS)
    path = tmp_path / "p.yaml"
    path.write_text(
        textwrap.dedent(f"""
        name: chain
        steps:
          a: {{command: [{PY}, step.py]}}
          b: {{command: [{PY}, step.py], needs: [a]}}
          c: {{command: [{PY}, step.py], needs: [b]}}
    """)
    )
    return path


@contextmanager
def start(home: Path, tmp_path: Path, path: Path) -> Iterator[subprocess.Popen[str]]:
    """A real `flightlog pipeline run` controller; never left behind, whatever the test did."""
    exe = Path(sys.executable).with_name("flightlog")
    proc = subprocess.Popen(
        [str(exe), "pipeline", "run", str(path)],
        env=child_env(home),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def wait_for(condition: object, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def step_run(client: flightlog.Client, step: str) -> flightlog.models.RunInfo | None:  # type: ignore[name-defined]
    """The latest run of a step, once its runner's first records reached the store."""
    runs = client.runs(filter=f"tags.pipeline_step = '{step}'", order_by="-created", limit=1)
    return runs[0] if runs else None


def step_status(client: flightlog.Client, step: str) -> str | None:
    run = step_run(client, step)
    return run.status if run is not None else None


def produced(tmp_path: Path) -> list[str]:
    log = tmp_path / "produced.log"
    return log.read_text().split() if log.exists() else []


@pytest.mark.embedded_only("kills the controller; the journal replay it relies on is the embedded store's")
def test_resume_after_the_controller_is_killed_reruns_only_unfinished_steps(home: Path, tmp_path: Path) -> None:
    path = setup_pipeline(tmp_path)
    with start(home, tmp_path, path) as proc:
        wait_for(lambda: (tmp_path / "b.started").exists(), "step b to start")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    client = flightlog.Client()
    wait_for(lambda: step_status(client, "b") not in (None, "running"), "step b's run to end with its controller")
    assert step_status(client, "b") == "killed"  # the step died with its controller, and says so

    pipeline_id = client.runs(filter="tags.pipeline = 'chain' and parent is null")[0].id
    shown = json.loads(cli(home, "pipeline", "show", pipeline_id, "--format", "json").stdout)
    assert shown["status"] == "crashed"  # a lost controller: detected, its pipeline marked lost
    assert client.run(pipeline_id).end_reason == "lost"
    statuses = {s["name"]: s["status"] for s in shown["steps"]}
    assert statuses == {"a": "succeeded", "b": "killed", "c": "pending"}
    a_run = shown["steps"][0]["run"]

    (tmp_path / "fast").touch()
    resumed = cli(home, "pipeline", "resume", pipeline_id[:10], "--format", "json")
    view = json.loads(resumed.stdout)
    assert view["status"] == "succeeded" and view["attempt"] == 2 and view["run"] == pipeline_id
    steps = {s["name"]: s for s in view["steps"]}
    assert steps["a"]["run"] == a_run  # kept, not run again
    assert [at["status"] for at in steps["b"]["attempts"]] == ["killed", "succeeded"]
    assert produced(tmp_path) == ["a", "b", "c"]  # no step's output produced twice


@pytest.mark.embedded_only("signals a real controller; the transport plays no part")
def test_ctrl_c_stops_the_running_steps_and_records_them_stopped(home: Path, tmp_path: Path) -> None:
    path = setup_pipeline(tmp_path)
    client = flightlog.Client()
    with start(home, tmp_path, path) as proc:
        wait_for(lambda: (tmp_path / "b.started").exists(), "step b to start")
        wait_for(lambda: step_status(client, "b") == "running", "step b's run to be recorded")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
    assert step_status(client, "b") == "stopped"
    pipeline = client.runs(filter="tags.pipeline = 'chain' and parent is null")[0]
    assert pipeline.status == "stopped"
    shown = json.loads(cli(home, "pipeline", "show", pipeline.id, "--format", "json").stdout)
    c = [s for s in shown["steps"] if s["name"] == "c"][0]
    assert c["status"] == "skipped" and "never started" in c["reason"]
    assert produced(tmp_path) == ["a"]
