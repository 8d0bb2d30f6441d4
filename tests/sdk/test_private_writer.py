"""No module outside ``sdk/`` reaches into a run's private writer (``run._w``): the runner and
the pipeline controller record through :class:`flightlog.sdk.control.RunControl` instead."""

from __future__ import annotations

import ast
from pathlib import Path

import flightlog
from flightlog.sdk.control import control

SRC = Path(flightlog.__file__).resolve().parent


def _private_writer_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        f"{path.relative_to(SRC.parent)}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr == "_w"
    ]


def test_no_module_outside_the_sdk_touches_a_runs_private_writer() -> None:
    outside = [p for p in sorted(SRC.rglob("*.py")) if p.relative_to(SRC).parts[0] != "sdk"]
    assert outside, "no source found"
    uses = [use for path in outside for use in _private_writer_uses(path)]
    assert uses == [], "use flightlog.sdk.control.control(run) instead of run._w: " + ", ".join(uses)


def test_the_walk_sees_a_private_writer_use() -> None:
    """The check above can fail: an attribute ``_w`` anywhere in an expression is found."""
    sample = SRC / "sdk" / "control.py"
    assert _private_writer_uses(sample), "control.py itself holds run._w: the walk must find it"


def test_control_records_reach_the_store(tmp_path: Path, monkeypatch) -> None:
    """What the runner records through the handle lands on the run, as its writer's records did."""
    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FLIGHTLOG_URL", raising=False)
    monkeypatch.delenv("FLIGHTLOG_STORE", raising=False)
    run = flightlog.init(project="p", resources=False, console=False, quiet=True)
    handle = control(run)
    handle.set_queued(run_created := 1_700_000_000.0)
    handle.add_evidence("runner", "config", {"retries": 2})
    handle.mark(process_start=1_700_000_001.0)
    handle.count("leftover_processes_killed", 3)
    handle.begin_attempt(2)
    handle.add_metric_call((0, 1_700_000_002.0, {"loss": 0.5}))
    handle.persist()
    run.finish()
    with flightlog.Client(home=tmp_path / "home") as client:
        info = client.run(run.id)
        assert info.queued == run_created and info.attempt == 2
        assert info.timeline["process_start"] == 1_700_000_001.0
        assert info.counters["leftover_processes_killed"] == 3
        assert info.metrics["loss"].last == 0.5
        assert client.evidence(run.id, "runner", "config")[0]["data"] == {"retries": 2}
