"""Reconciliation is one explicit step (``flightlog.journal.reconcile``): the read methods never
mark a dead owner's run crashed; a Client does it when it opens, so a listing still shows it
crashed; and a second call with nothing changed does not touch the store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import flightlog
from flightlog.journal import list_journals
from tests.helpers import child_env, cli, kill_if_alive, run_script

DIES = """
import os, flightlog
run = flightlog.init(project="p", resources=False)
run.log({"a": 1.0})
run._w.flush()
print(run.id, flush=True)
os._exit(0)  # no atexit, no finish: like a lost host
"""


def _dead_run(home: Path) -> str:
    return run_script(home, DIES).stdout.strip()


def test_reading_never_marks_a_run_crashed_and_the_caller_that_reconciles_first_sees_it(home: Path) -> None:
    run_id = _dead_run(home)
    with flightlog.Client(reconcile=False) as reader:
        assert [r.status for r in reader.runs(project="p")] == ["running"]
        assert reader.run(run_id).status == "running"
    assert list_journals(home, run_id), "a read shipped nothing and removed nothing"
    with flightlog.Client() as client:  # reconciles when it opens
        runs = client.runs(project="p")
        assert [(r.id, r.status, r.end_reason) for r in runs] == [(run_id, "crashed", "lost")]
        assert runs[0].metrics["a"].count == 1, "its journal was shipped before it was marked"
    assert list_journals(home, run_id) == []


def test_a_second_reconcile_with_nothing_changed_is_skipped_and_a_new_dead_run_is_not(home: Path) -> None:
    first = _dead_run(home)
    with flightlog.Client(reconcile=False) as client:
        report = client.reconcile()
        assert not report["skipped"] and report["crashed"] == [first], report
        again = client.reconcile()
        assert again["skipped"] and again["crashed"] == [], again
        second = _dead_run(home)  # a new journal: the marker no longer matches
        third = client.reconcile()
        assert not third["skipped"] and third["crashed"] == [second], third
        assert client.run(second).status == "crashed"
        assert client.reconcile(force=True)["skipped"] is False


def test_a_live_run_stays_running_and_the_marker_rechecks_it(home: Path) -> None:
    run = flightlog.init(project="p", resources=False, console=False, quiet=True)
    run._w.flush()  # in the store now, not at the shipper's next tick
    try:
        with flightlog.Client(reconcile=False) as client:
            assert client.reconcile()["checked"] == 1
            assert client.reconcile()["skipped"]
            assert client.run(run.id).status == "running"
    finally:
        run.finish()


LIVES = """
import sys, flightlog
run = flightlog.init(project="p", resources=False)
run._w.flush()  # its journal on disk (offline: nothing reaches the store until `flightlog sync`)
print(run.id, flush=True)
sys.stdin.readline()
"""


def test_a_run_not_yet_in_the_store_when_the_marker_was_written_is_still_seen_to_die(home: Path) -> None:
    """A reader's full pass can run while a new run's journal exists but its records have not
    reached the store (the shipper's first tick): the marker must still hold that run's process,
    so that its SIGKILL forces the next pass, not the marker's age 30 s later."""
    proc = subprocess.Popen(
        [sys.executable, "-c", LIVES],
        env=child_env(home, FLIGHTLOG_MODE="offline"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        run_id = proc.stdout.readline().strip()
        with flightlog.Client(reconcile=False) as client:
            assert client.reconcile()["checked"] == 0  # the store has no row of it yet
            cli(home, "sync")  # now it has: running, with its owner's pid
            assert client.run(run_id).status == "running"
            proc.kill()
            proc.wait(timeout=30)
            report = client.reconcile()
            assert not report["skipped"] and report["crashed"] == [run_id], report
            assert client.run(run_id).status == "crashed"
    finally:
        kill_if_alive(proc.pid)
        proc.communicate()
