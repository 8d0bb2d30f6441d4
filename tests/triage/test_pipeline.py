"""Pipelines: a step's failure counts once (the pipeline run that failed at it is not counted
again), the step is part of the signature, ``--pipeline`` narrows to one pipeline's runs, and
an unknown pipeline is an error naming the ones there are. The runs are written through the
store's ingest, as a pipeline's controller and its steps' runners record them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from flightlog.client import Client
from flightlog.errors import NotFound
from flightlog.store.sqlite.store import SqliteStore
from flightlog.triage.report import triage_report

pytestmark = pytest.mark.embedded_only("records written straight into the embedded store")


def _records(now: float) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seq = iter(range(1, 10_000))

    def run(rid: str, name: str, status: str, t: float, tags: dict[str, str], failure: Any = None, parent: Any = None):
        env = {"r": rid, "w": "w", "t": t}
        row = {"project": "etl", "name": name, "status": status, "created": t, "started": t, "ended": t + 1}
        if parent:
            row["parent_id"] = parent
        if failure:
            row.update(failure=failure, exit_code=1, end_reason="exception")
        out.append({**env, "k": "run", "s": next(seq), **row})
        out.append({**env, "k": "tags", "s": next(seq), "data": tags})

    for i in range(3):
        t = now - 3600 + i * 60
        pipe, step = f"p{i:031d}", f"s{i:031d}"
        validate = {
            "exception": "GateFailed",
            "message": f"expectation row_count >= 1000 failed: {900 + i} rows in data/day-{i}.csv",
            "frames": [],
            "category": "data_error",
        }
        run(step, "nightly.validate", "failed", t, {"pipeline": "nightly", "pipeline_step": "validate"}, validate, pipe)
        summary = {
            "category": "data_error",
            "step": "validate",
            "step_run": step,
            "gate": True,
            "message": "gate validate failed: ...",
        }
        run(pipe, "nightly", "failed", t + 5, {"pipeline": "nightly"}, summary)
    other = {"exception": "KeyError", "message": "'user_1'", "frames": [{"file": "/w/job.py", "function": "main"}]}
    run("q" * 32, "weekly.train", "failed", now - 60, {"pipeline": "weekly", "pipeline_step": "train"}, other)
    return out


def test_a_steps_failure_counts_once_and_names_its_step(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    store = SqliteStore(home / "flightlog.db")
    store.ingest(_records(time.time()))
    store.close()
    with Client() as client:
        nightly = triage_report(client, project="etl", pipeline="nightly", since="1d")
        everything = triage_report(client, project="etl", since="1d")
        with pytest.raises(NotFound) as missing:
            triage_report(client, project="etl", pipeline="hourly")
    assert nightly["failures"] == 3  # three step failures; the three pipeline runs are not counted again
    [group] = nightly["groups"]
    assert group["parts"]["step"] == "nightly.validate"
    assert group["parts"]["message"] == "expectation row_count >= <n> failed: <n> rows in <path>"
    assert all(r.startswith("s") for r in group["runs"])
    assert sorted(g["parts"]["step"] for g in everything["groups"]) == ["nightly.validate", "weekly.train"]
    assert "the pipelines are: nightly, weekly" in missing.value.message
