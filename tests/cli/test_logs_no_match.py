"""`flightlog logs` says so on stderr when a filter matched no event, instead of printing nothing."""

from __future__ import annotations

from pathlib import Path

import flightlog
from tests.helpers import cli


def _run_with_events(levels: list[str]) -> str:
    run = flightlog.init(project="p", resources=False)
    for i, level in enumerate(levels):
        run.log_event(f"event {i}", level=level)
    run.finish()
    return run.id


def test_a_level_with_no_match_says_what_there_is(home: Path) -> None:
    run = _run_with_events(["info"] * 11 + ["debug"])
    out = cli(home, "logs", run, "--level", "warning")
    assert out.stdout == ""
    assert out.stderr == "no log events at level warning or above (12 events in all; try --level info)\n"
    as_json = cli(home, "logs", run, "--level", "warn", "--format", "json")
    assert as_json.stdout == "" and "try --level info" in as_json.stderr  # JSON Lines: no line at all
    found = cli(home, "logs", run, "--level", "info")
    assert found.stdout.count("\n") == 11 and found.stderr == ""


def test_other_filters_and_an_empty_run_are_named(home: Path) -> None:
    run = _run_with_events(["error"])
    grep = cli(home, "logs", run, "--grep", "shard", "--level", "error").stderr
    assert grep == "no log events at level error or above, matching 'shard' (1 event in all)\n"
    assert "in that time range" in cli(home, "logs", run, "--since", "2999-01-01").stderr
    empty = _run_with_events([])
    assert cli(home, "logs", empty).stderr == f"no log events recorded for run {empty}\n"
    assert cli(home, "logs", empty, "--level", "error").stderr == f"no log events recorded for run {empty}\n"
    assert cli(home, "logs", run, "--tail", "0").stderr == "", "--tail 0 asked for nothing: no note"
