"""Liveness across wall-clock steps (issue 18, item 20): after an NTP step or a VM resume of
+5 s, psutil says every live process started 5 s later than it did, which made any reader mark
live runs ``crashed``. A writer records its own start and the boot time as psutil saw them; a
live process stays alive however the clock moved, and a reused pid is still dead.

A step cannot be made on a test machine, so each test records what a writer would have
recorded before a +5 s step: every wall-clock value 5 s below what psutil says now."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from flightlog.journal import JournalWriter, encode_records
from flightlog.journal.liveness import process_alive
from tests.helpers import child_env, cli_json

STEP = 5.0


@pytest.fixture
def sleeper() -> Iterator[psutil.Process]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield psutil.Process(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def test_a_live_process_is_alive_after_a_clock_step(sleeper: psutil.Process) -> None:
    created, boot = sleeper.create_time(), psutil.boot_time()
    assert process_alive(sleeper.pid, created - STEP, process_start=created - STEP, boot=boot - STEP)
    assert process_alive(
        sleeper.pid, created - 3600, process_start=created - 3600, boot=boot - 3600
    )  # a VM resumed an hour on
    # and a step backwards, which never troubled the check
    assert process_alive(sleeper.pid, created + STEP, process_start=created + STEP, boot=boot + STEP)


def test_a_reused_pid_is_dead_whatever_the_clock_did(sleeper: psutil.Process) -> None:
    created, boot = sleeper.create_time(), psutil.boot_time()
    # the recorded writer started 100 s before the process that has its pid now
    assert not process_alive(sleeper.pid, created - 100, process_start=created - 100, boot=boot)
    assert not process_alive(sleeper.pid, created - 100, process_start=created - 100 - STEP, boot=boot - STEP)
    assert not process_alive(sleeper.pid, created - 100)  # a journal from before identities: as before


def test_a_process_killed_but_not_yet_torn_down_is_not_alive() -> None:
    """After SIGKILL the kernel frees the process's memory before it becomes a zombie: for
    ~100 ms here (a 512 MB heap, as a torch rank has) /proc says it runs, though its sockets are
    closed and it never runs another line. A peer rank that ended just then (its collective
    broke on those sockets) used to leave it unsettled, and the job's run read running."""
    big = "b = bytearray(512 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('ready', flush=True)\n"
    proc = subprocess.Popen(
        [sys.executable, "-c", big + "import time; time.sleep(120)"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        created = psutil.Process(proc.pid).create_time()
        assert process_alive(proc.pid, created)
        proc.kill()
        assert not process_alive(proc.pid, created)  # at once: dying (before, alive until a zombie)
    finally:
        proc.kill()
        proc.communicate()
    assert not process_alive(proc.pid, created)


@pytest.mark.embedded_only("the journal and the store are edited by hand")
def test_sync_keeps_a_live_writer_after_a_clock_step_and_buries_a_reused_pid(
    home: Path, sleeper: psutil.Process
) -> None:
    created, boot = sleeper.create_time(), psutil.boot_time()
    for run_id, started in (("live-run", created - STEP), ("reused-run", created - 100)):
        records = [
            {
                "k": "writer",
                "host": socket.gethostname(),
                "pid": sleeper.pid,
                "owner": True,
                "attempt": 1,
                "pstart": started,
                "boot": boot - STEP if run_id == "live-run" else boot,
            },
            {
                "k": "run",
                "project": "p",
                "status": "running",
                "created": started,
                "started": started,
                "attempt": 1,
                "host": socket.gethostname(),
                "pid": sleeper.pid,
            },
        ]
        for seq, rec in enumerate(records, 1):
            rec.update(r=run_id, w="w1", s=seq, t=started)
        journal = JournalWriter(home, run_id, "w1")
        journal.append(encode_records(records))
        journal.close()
    report = cli_json(home, "sync")
    assert report["crashed_runs"] == ["reused-run"], report
    assert report["active_writers"] == 1


@pytest.mark.embedded_only("the store is edited by hand to hold what a writer recorded before a clock step")
def test_runs_ls_keeps_a_live_run_running_after_a_clock_step(home: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
        import time, flightlog
        run = flightlog.init(project="p", resources=False)
        run.log({"x": 1.0})
        print(run.id, flush=True)
        time.sleep(120)
    """),
        ],
        env=child_env(home),
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        run_id = proc.stdout.readline().strip()
        deadline = time.monotonic() + 30
        while not (home / "flightlog.db").exists():
            assert time.monotonic() < deadline and proc.poll() is None, "the run never reached the store"
            time.sleep(0.05)
        db = sqlite3.connect(home / "flightlog.db")

        def recorded() -> str | None:
            try:
                row = db.execute("SELECT timeline FROM runs WHERE id=?", (run_id,)).fetchone()
            except sqlite3.OperationalError:  # the writer is creating the schema
                return None
            return None if row is None else row[0]

        while (text := recorded()) is None:
            assert time.monotonic() < deadline, "the run never reached the store"
            time.sleep(0.05)
        timeline = json.loads(text)
        shifted = {k: v - STEP for k, v in timeline.items()}  # what the clock said before it stepped +5 s
        with db:
            db.execute(
                "UPDATE runs SET started=started-?, created=created-?, timeline=? WHERE id=?",
                (STEP, STEP, json.dumps(shifted), run_id),
            )
        db.close()
        listed = {r["id"]: r["status"] for r in cli_json(home, "runs", "ls")}
        assert listed[run_id] == "running", listed
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_a_writers_identity_is_psutils_reading_without_importing_psutil(tmp_path: Path) -> None:
    """What a writer records of itself (read from /proc, issue 32) is what psutil, which every
    reader uses, says of that process: the same start and boot time, to the bit; and the writer
    did not import psutil to say it (an SDK run under `flightlog run` has no other use for it)."""
    code = textwrap.dedent(
        """
        import json, os, sys
        from flightlog.journal.liveness import process_identity
        mine = process_identity()
        imported = "psutil" in sys.modules
        import psutil
        theirs = {"process_start": psutil.Process(os.getpid()).create_time(), "boot": psutil.boot_time()}
        print(json.dumps({"mine": mine, "theirs": theirs, "imported": imported}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=child_env(tmp_path / "home"), capture_output=True, text=True, check=True
    )
    seen = json.loads(out.stdout)
    assert seen["mine"] == seen["theirs"]
    assert seen["mine"]["process_start"] > seen["mine"]["boot"] > 0
    if sys.platform.startswith("linux"):
        assert seen["imported"] is False
