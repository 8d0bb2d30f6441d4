"""`flightlog ranks` and `flightlog logs --rank` on a run that is not distributed: a clear word,
never a traceback; the JSON listing is an empty array."""

from __future__ import annotations

import json
from pathlib import Path

import flightlog
from tests.helpers import cli


def test_a_run_of_one_process_has_no_ranks_and_says_so(home: Path) -> None:
    with flightlog.init(project="p", resources=False) as run:
        run.log_event("hello")
    shown = cli(home, "ranks", run.id[:8])
    assert shown.stdout == "" and "has no ranks: it is not a distributed run" in shown.stderr
    assert json.loads(cli(home, "ranks", run.id, "--format", "json").stdout) == []
    refused = cli(home, "logs", run.id, "--rank", "0", check=False)
    assert (
        refused.returncode == 1 and f"error: run {run.id} has no rank 0: it is not a distributed run" in refused.stderr
    )
    bad = cli(home, "logs", run.id, "--rank", "-1", check=False)
    assert bad.returncode == 2 and "-1 is not in the range x>=0" in bad.stderr
    assert cli(home, "logs", run.id).stdout == "INFO     hello\n"  # no rank shown where there is none
    missing = cli(home, "ranks", "nosuchrun", check=False)
    assert missing.returncode == 1 and "no run with id or prefix 'nosuchrun'" in missing.stderr
