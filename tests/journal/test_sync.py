"""`flightlog sync` on journals that are not what the SDK writes today: records of the wrong
shape, journals with nothing in them, and a store whose disk fills up."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import flightlog
from flightlog.journal import MAGIC, JournalWriter, encode_records, list_journals
from tests.helpers import child_env, cli, cli_json, run_script


def _journal(home: Path, run_id: str, records: list[dict[str, Any]], writer: str = "w1") -> None:
    now = time.time()
    for seq, rec in enumerate(records, 1):
        rec.setdefault("t", now)
        rec.update(r=run_id, w=writer, s=seq)
    journal = JournalWriter(home, run_id, writer)
    journal.append(encode_records(records))
    journal.close()


def test_records_of_the_wrong_shape_are_skipped_and_reported_the_rest_ship(home: Path) -> None:
    now = time.time()
    _journal(
        home,
        "r-shape",
        [
            {"k": "writer", "host": socket.gethostname(), "pid": os.getpid(), "owner": True, "attempt": 1},
            {"k": "run", "project": "p", "status": "running", "created": now, "started": now, "attempt": 1},
            {"k": "metrics", "attempt": 1, "series": [1, 2, 3]},  # a list where a map of series belongs
            {"k": "params", "data": {"lr": 0.1}},
            {"k": "tags", "data": "not a map"},
            {"k": "run", "status": "succeeded", "ended": now + 1, "end_reason": "exit", "exit_code": 0},
            {"k": "writer_end"},
        ],
    )
    proc = cli(home, "sync")
    assert "Traceback" not in proc.stderr
    assert "skipped" in proc.stderr and "series" in proc.stderr
    info = flightlog.Client().run("r-shape")
    assert info.status == "succeeded" and info.params == {"lr": 0.1} and info.tags == {}
    assert list_journals(home) == []  # ended cleanly and shipped


def test_the_report_names_each_skipped_record(home: Path) -> None:
    _journal(
        home,
        "r-report",
        [
            {"k": "run", "project": "p", "status": "running", "started": time.time()},
            {"k": "note", "text": 42},
            {"k": "writer_end"},
        ],
    )
    report = cli_json(home, "sync")
    assert len(report["skipped"]) == 1 and "text" in report["skipped"][0]
    assert flightlog.Client().run("r-report").project == "p"


def test_journals_with_nothing_to_ship_are_removed(home: Path) -> None:
    root = home / "journal"
    root.mkdir(parents=True)
    bare = root / "r-bare+w1.journal"
    bare.write_bytes(MAGIC)  # what the fork into `flightlog run`'s workload used to leave
    empty = root / "r-empty+w1.journal"
    empty.write_bytes(b"")
    fresh = root / "r-fresh+w1.journal"
    fresh.write_bytes(MAGIC)  # a writer may be about to append: left alone for a few seconds
    an_hour_ago = time.time() - 3600
    for path in (bare, empty):
        os.utime(path, (an_hour_ago, an_hour_ago))
    report = cli_json(home, "sync")
    assert report["removed"] == 2 and report["damaged"] == []
    assert [j.path for j in list_journals(home)] == [fresh]


OFFLINE = """
import flightlog
run = flightlog.init(project="p", resources=False)
for i in range(100_000):
    run.log({"x": float(i), "y": float(i)})
run.finish()
print(run.id)
"""


@pytest.mark.slow
def test_sync_onto_a_full_disk_is_a_clear_error_and_loses_nothing(tmp_path: Path, tiny_disk: Path) -> None:
    home = tmp_path / "home"
    run_id = run_script(home, OFFLINE, env=child_env(home, FLIGHTLOG_MODE="offline")).stdout.strip()
    env = child_env(home, FLIGHTLOG_STORE=f"sqlite:///{tiny_disk}/flightlog.db")
    proc = cli(home, "sync", check=False, env=env)
    assert proc.returncode != 0
    assert "full" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert list_journals(home, run_id), "the journal is kept"
    subprocess.run(["mount", "-o", "remount,size=64m", str(tiny_disk)], check=True)  # space freed
    cli(home, "sync", env=env)
    info = flightlog.Client(store=env["FLIGHTLOG_STORE"]).run(run_id)
    assert info.status == "succeeded" and info.metrics["x"].count == info.metrics["y"].count == 100_000
    assert list_journals(home) == []
