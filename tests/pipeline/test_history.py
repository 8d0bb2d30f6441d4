"""`pipeline show` after a resume: every attempt of every step, with the original start; a
gate's reason said once; the failing step's own frame first."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.helpers import cli
from tests.pipeline.resumable import mend, write_pipeline

from flightlog.timefmt import parse_time


@pytest.mark.embedded_only("runs several pipelines of real processes; the view is transport-independent")
def test_show_lists_every_attempt_across_resumes_with_the_original_start(home: Path, tmp_path: Path) -> None:
    path = write_pipeline(tmp_path, "history")
    first = cli(home, "pipeline", "run", str(path), check=False)
    assert first.returncode == 1, first.stderr
    view = json.loads(cli(home, "pipeline", "ls", "--format", "json").stdout)[0]
    run_id, original = view["id"], view["started"]

    # the gate's reason, said once: on the controller's line, in the view, in `show`
    gate_line = next(line for line in first.stderr.splitlines() if "x check" in line)
    assert gate_line.count("failed") == 1 and "1 of 1 expectations not met: row_count" in gate_line, gate_line
    shown = cli(home, "pipeline", "show", run_id[:12]).stdout
    reason = next(line for line in shown.splitlines() if "expectations not met" in line)
    assert "failed" not in reason, shown

    mend(tmp_path)
    resumed = json.loads(cli(home, "pipeline", "resume", run_id[:12], "--format", "json").stdout)
    assert resumed["status"] == "succeeded" and resumed["attempt"] == 2
    assert resumed["started"] == original and parse_time(resumed["attempt_started"]) > parse_time(original)
    assert resumed["failure"] is None  # no longer failed: the old failure is in the attempts
    steps = {s["name"]: s for s in resumed["steps"]}
    for name in ("train", "check"):
        attempts = steps[name]["attempts"]
        assert [(a["number"], a["status"], a["pipeline_attempt"]) for a in attempts] == [
            (1, "failed", 1),
            (2, "succeeded", 2),
        ], attempts
        assert parse_time(attempts[0]["started"]) < parse_time(attempts[1]["started"])
        assert attempts[0]["run"] != attempts[1]["run"] and attempts[0]["duration"] > 0
    assert [a["pipeline_attempt"] for a in steps["prepare"]["attempts"]] == [1]  # kept, not run again

    text = cli(home, "pipeline", "show", run_id[:12]).stdout
    assert "attempt 2" in text.splitlines()[0] and "started " in text.splitlines()[0]
    train_lines = [
        line for line in text.splitlines() if re.search(r"attempt [12] ", line) and "pipeline attempt" in line
    ]
    assert len(train_lines) == 4, text  # train's two, check's two
    assert re.search(
        r"attempt 1 +✗ failed +code_error +pipeline attempt 1 .* run " + steps["train"]["attempts"][0]["run"][:12], text
    )
    assert re.search(
        r"attempt 2 +✓ succeeded +pipeline attempt 2 .* run " + steps["train"]["attempts"][1]["run"][:12], text
    )


@pytest.mark.embedded_only("runs real processes; the frame order is the reader's")
def test_failure_lines_show_the_users_innermost_frame_first(home: Path, tmp_path: Path) -> None:
    path = write_pipeline(tmp_path, "history")
    first = cli(home, "pipeline", "run", str(path), "--format", "json", check=False)
    view = json.loads(first.stdout)
    frames = view["failure"]["frames"]
    assert frames[0]["function"] == "step" and frames[0]["user"] is True, frames
    assert [f["function"] for f in frames[1:]] == ["_check", "forward"] and not any(f["user"] for f in frames[1:])

    shown = cli(home, "pipeline", "show", view["run"][:12]).stdout.splitlines()
    at = next(i for i, line in enumerate(shown) if line.startswith("✗ step train failed: ValueError: shape mismatch"))
    assert shown[at + 1].strip().endswith("train.py:9 in step  your code"), shown
    assert "site-packages/fakelib.py:7 in _check" in shown[at + 2]

    step_run = view["failure"]["step_run"]
    card = cli(home, "runs", "show", step_run[:12]).stdout.splitlines()
    at = next(i for i, line in enumerate(card) if line.startswith("failure ValueError: shape mismatch"))
    assert card[at + 1].strip().endswith("train.py:9 in step  your code"), card
    assert "fakelib.py:7 in _check" in card[at + 2] and "fakelib.py:3 in forward" in card[at + 3]
    assert card[at + 4].strip().endswith("train.py:12 in <module>  your code")
