"""A run's end is written after its last data: a reader that sees the run ended has seen every
point and log line it ended with. The server's alert evaluation relies on it (it ends a run's
alerts at the run's end and reads no more of its data), and a store may commit one shipped
batch in several transactions, so the order in the journal is the order a reader sees."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from flightlog.journal.files import list_journals
from flightlog.journal.format import read_records
from tests.helpers import child_env

_SCRIPT = """
    import flightlog
    run = flightlog.init(project="order", resources=False)
    for step in range(20):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
        run.log_event(f"step {step}")
    run.finish()
    print(run.id)
"""


def test_the_end_record_follows_the_points_and_logs_it_ends_with(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SCRIPT)],
        env=child_env(home, FLIGHTLOG_KEEP_JOURNAL="1"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    run_id = done.stdout.split()[-1]
    (journal,) = list_journals(home, run_id)
    records = [rec for _, rec in read_records(journal.path.read_bytes()).records]
    kinds = [rec["k"] for rec in records]
    end = next(i for i, rec in enumerate(records) if rec["k"] == "run" and rec.get("ended") is not None)
    assert "metrics" in kinds[:end] and "logs" in kinds[:end], kinds
    assert not {"metrics", "logs"} & set(kinds[end:]), f"data after the run's end: {kinds}"
    assert kinds[-1] == "writer_end"
    assert [rec["s"] for rec in records] == sorted(rec["s"] for rec in records)
