"""A blank log line (what a launcher's bare prefix leaves, torchrun's ``W1205 … run.py:874] ``)
is quoted by no finding and breaks none: `flightlog diagnose` of a torchrun job once failed with
an IndexError on one, before its first step."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import flightlog
from flightlog.logevents import LogBatch
from flightlog.sdk.control import control

pytestmark = pytest.mark.embedded_only("the reading of a run's events")


def test_a_blank_line_before_the_first_step_and_after_the_last_is_no_evidence(home: Path) -> None:
    now = time.time()
    run = flightlog.init(project="blank", resources=False)
    control(run).mark(process_start=now - 40, first_output=now - 35)  # a slow start: the first step comes 40 s in
    batch = LogBatch()
    for t, message in ((now - 30, ""), (now - 20, "   "), (now - 10, "loading the shards")):
        batch.append(t, "stderr", 30, message)
    control(run).add_logs(batch)
    for step in range(10):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    late = LogBatch()
    late.append(time.time() + 1, "stderr", 30, "")
    control(run).add_logs(late)
    run.finish()
    report = flightlog.Client().diagnose(run.id, auto_baseline=False)
    slow = [f for f in [*report["findings"], *report.get("hints", [])] if f["category"] == "slow_startup"]
    assert slow, report
    quoted = [e["detail"] for f in slow for e in f["evidence"] if e["source"] == "log"]
    assert quoted == ["loading the shards"], slow
