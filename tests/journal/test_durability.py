"""Journal-first durability with real processes: kill -9, concurrent writers, replays,
damaged journals, signals, offline mode and a full disk."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import flightlog
from flightlog.errors import NotFound
from flightlog.journal import list_journals
from tests.helpers import child_env, cli, cli_json, run_script, wait_for

FLUSH_INTERVAL = 0.5  # the documented default


def _read(home: Path) -> flightlog.Client:
    return flightlog.Client(home=home)


def _points(home: Path, run_id: str, metric: str) -> int:
    """How many points of ``metric`` the store holds for the run so far (0 before it is there)."""
    try:
        with _read(home) as client:
            info = client.run(run_id)
    except NotFound:
        return 0
    summary = info.metrics.get(metric)
    return summary.count if summary is not None else 0


def test_kill_9_mid_loop_keeps_everything_flushed_before_the_kill(home: Path) -> None:
    code = textwrap.dedent(
        """
        import sys, time, flightlog
        run = flightlog.init(project="p", name="victim", params={"lr": 0.1}, resources=False)
        print(run.id, flush=True)
        i = 0
        while True:
            run.log({"t": time.time(), "i": float(i)})
            if i % 500 == 0:
                with run.stage("batch"):
                    pass
            i += 1
            time.sleep(0.0002)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env=child_env(home), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    # mid-loop means after flushes: the kill waits until the store has seen the points grow twice
    counts: set[int] = set()

    def flushed_twice() -> bool:
        counts.add(_points(home, run_id, "i"))
        return len(counts - {0}) >= 2

    wait_for(flushed_twice, "two flushes of the victim's points")
    killed_at = time.time()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()
    report = cli_json(home, "sync")
    assert report["crashed_runs"] == [run_id]
    client = _read(home)
    info = client.run(run_id)
    assert info.status == "crashed" and info.end_reason == "lost"
    history = client.metric_history(run_id, "i")
    steps = history.steps.tolist()
    assert steps == list(range(len(steps))), "no gaps"
    assert history.values.tolist() == [float(s) for s in steps], "no duplicates, no mix-ups"
    last_logged = client.metric_history(run_id, "t").values.max()
    # every point logged more than one flush interval before the kill is there
    assert last_logged >= killed_at - FLUSH_INTERVAL - 0.2, killed_at - last_logged
    assert info.params == {"lr": 0.1}
    # replaying the same journals again changes nothing
    before = len(steps)
    cli(home, "sync")
    assert len(client.metric_history(run_id, "i")) == before


WRITER = """
import os, sys, flightlog, logging
rank = int(os.environ["RANK"])
run = flightlog.init()
log = logging.getLogger(f"rank{rank}")
log.addHandler(flightlog.logging_handler(stream=open(os.devnull, "w")))
log.setLevel(logging.INFO)
for i in range(3000):
    run.log({f"m{rank}": float(i), "shared": float(rank)}, step=i)
    if i % 100 == 0:
        log.info("rank %d step %d", rank, i)
run.finish()
"""


def test_four_processes_write_one_run_without_loss_or_duplicates(home: Path) -> None:
    owner = flightlog.init(project="dist", name="ddp", resources=False)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER],
            env=child_env(home, FLIGHTLOG_RUN_ID=owner.id, RANK=str(rank), FLIGHTLOG_FLUSH_INTERVAL="0.05"),
        )
        for rank in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    owner.finish()
    client = _read(home)
    info = client.run(owner.id)
    assert info.status == "succeeded"  # attached writers never set the status
    for rank in range(4):
        h = client.metric_history(owner.id, f"m{rank}")
        assert h.steps.tolist() == list(range(3000)) and h.values.tolist() == [float(i) for i in range(3000)]
    # a metric every rank logs reads one rank at a time (docs/distributed.md): all 12,000 points are there
    shared = [client.metric_history(owner.id, "shared", rank=rank) for rank in range(4)]
    assert [h.values.tolist() for h in shared] == [[float(rank)] * 3000 for rank in range(4)]
    assert client.metric_history(owner.id, "shared").values.tolist() == [0.0] * 3000  # rank 0's by default
    assert client.run(owner.id).project == "dist"  # the ranks joined the owner's run, as it is
    events = client.logs(owner.id, grep="^rank")
    assert len(events) == 4 * 30 and len({e.message for e in events}) == 120
    assert {e.rank for e in events} == {0, 1, 2, 3}
    assert list_journals(home) == []  # every writer finished cleanly and shipped: journals removed


OFFLINE = """
import flightlog
run = flightlog.init(project="off", name="offline-run", params={"a": 1})
for i in range(1000):
    run.log({"loss": 1.0 / (i + 1)})
with run.stage("train"):
    pass
run.note("written offline")
run.finish()
print(run.id)
"""


def test_offline_mode_writes_journal_only_and_sync_replays_idempotently(home: Path) -> None:
    run_id = run_script(home, OFFLINE, env=child_env(home, FLIGHTLOG_MODE="offline")).stdout.strip()
    assert not (home / "flightlog.db").exists() or _read(home).runs() == []
    journals = list_journals(home, run_id)
    assert len(journals) == 1
    saved = journals[0].path.read_bytes()
    report = cli_json(home, "sync", "--keep")
    assert report["records_shipped"] > 0 and report["duplicates"] == 0
    first = _read(home).run(run_id)
    assert first.status == "succeeded" and first.metrics["loss"].count == 1000
    # replay the very same journal from scratch: nothing changes
    journals[0].shipped_path.unlink()
    report = cli_json(home, "sync")
    assert report["records_shipped"] == 0 and report["duplicates"] > 0 and report["removed"] == 1
    again = _read(home)
    assert again.run(run_id).metrics["loss"].count == 1000
    assert len(again.notes(run_id)) == 1 and again.stages(run_id)[0].count == 1
    assert list_journals(home) == [] and saved  # removed once fully shipped


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_journal_tail_keeps_every_record_before_it(home: Path, damage: str) -> None:
    code = OFFLINE.replace("run.finish()", "run.finish()\nrun2 = None")
    run_id = run_script(home, code, env=child_env(home, FLIGHTLOG_MODE="offline")).stdout.strip()
    journal = list_journals(home, run_id)[0]
    data = journal.path.read_bytes()
    from flightlog.journal import read_records

    good = read_records(data)
    assert good.damage is None
    last_start = good.records[-2][0]  # the last record starts where the one before it ends
    if damage == "truncate":
        journal.path.write_bytes(data[:-7])
    else:
        broken = bytearray(data)
        broken[last_start + 12] ^= 0xFF
        journal.path.write_bytes(bytes(broken))
    proc = cli(home, "sync")
    assert "damaged record at byte" in proc.stderr and str(last_start) in proc.stderr
    info = _read(home).run(run_id)
    assert info.metrics["loss"].count == 1000 and info.params == {"a": 1}
    assert list_journals(home, run_id), "a damaged journal is kept for inspection"


def test_uncaught_exception_marks_failed_with_traceback(home: Path) -> None:
    proc = run_script(
        home,
        """
        import flightlog
        run = flightlog.init(project="p", resources=False)
        print(run.id, flush=True)
        def load():
            raise FileNotFoundError(2, "No such file or directory", "/data/train.csv")
        load()
        """,
        check=False,
    )
    assert proc.returncode == 1 and "FileNotFoundError" in proc.stderr  # the user still sees the traceback
    info = _read(home).run(proc.stdout.strip())
    assert info.status == "failed" and info.end_reason == "exception"
    assert info.failure and info.failure["exception"] == "FileNotFoundError"
    assert info.failure["frames"][-1]["function"] == "load"
    assert "/data/train.csv" in info.failure["message"]


def test_sigterm_marks_killed_and_keeps_data(home: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
        import time, flightlog
        run = flightlog.init(project="p", resources=False)
        print(run.id, flush=True)
        i = 0
        while True:
            run.log({"x": float(i)}); i += 1
            if i == 200:
                print("logged 200", flush=True)
            time.sleep(0.001)
        """),
        ],
        env=child_env(home),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    assert proc.stdout.readline().strip() == "logged 200"  # the workload's own word, not a guessed sleep
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == -signal.SIGTERM  # still dies of SIGTERM, as it would without flightlog
    proc.stdout.close()
    info = _read(home).run(run_id)
    assert info.status == "killed" and info.end_reason == "signal" and info.signal == signal.SIGTERM
    assert info.metrics["x"].count > 100


def test_ctrl_c_marks_stopped(home: Path) -> None:
    proc = run_script(
        home,
        """
        import flightlog
        run = flightlog.init(project="p", resources=False)
        print(run.id, flush=True)
        raise KeyboardInterrupt
        """,
        check=False,
    )
    info = _read(home).run(proc.stdout.strip())
    assert info.status == "stopped" and info.end_reason == "signal" and info.signal == 2


def test_full_disk_warns_counts_drops_and_training_continues(tiny_disk: Path) -> None:
    home = tiny_disk / "home"
    proc = run_script(
        home,
        """
        import flightlog, json
        run = flightlog.init(project="p", resources=False)
        for i in range(200_000):
            run.log({"a": float(i), "b": float(i), "c": float(i)})
        run.finish()
        print(json.dumps(run.stats))
        print("training finished")
        """,
        env=child_env(home),
        timeout=120,
    )
    stats = json.loads(proc.stdout.splitlines()[0])
    assert proc.stdout.splitlines()[-1] == "training finished"
    assert "No space left on device" in proc.stderr or "full" in proc.stderr
    assert stats["dropped"] > 0 or stats["journal_errors"] > 0
    assert "could not be saved" in proc.stderr


@pytest.mark.embedded_only("it breaks the local SQLite store; a server that is down is tests/server/test_outage.py")
def test_journal_is_written_before_the_store(home: Path) -> None:
    """With a store that cannot be opened, records stay in the journal and sync ships them later."""
    env = child_env(home, FLIGHTLOG_STORE=f"sqlite:///{home}/no-such-dir-file/x.db")
    blocker = home / "no-such-dir-file"
    home.mkdir(parents=True)
    blocker.write_text("a file where the store's directory should be")
    proc = run_script(home, OFFLINE, env=env)
    run_id = proc.stdout.strip()
    assert "cannot ship records" in proc.stderr and "flightlog sync" in proc.stderr
    shutil.move(str(blocker), str(home / "moved"))
    cli(home, "sync", env=env)
    info = flightlog.Client(store=env["FLIGHTLOG_STORE"]).run(run_id)
    assert info.status == "succeeded" and info.metrics["loss"].count == 1000
    os.unlink(home / "moved")


FORKS = """
import os, flightlog
run = flightlog.init(project="p", resources=False)
run.log({"parent": 1.0})
quiet = os.fork()
if quiet == 0:
    os._exit(0)  # records nothing: leaves nothing
os.waitpid(quiet, 0)
busy = os.fork()
if busy == 0:
    run.log({"child": 2.0})
    run.finish()  # flushes the child's writer; the run is the parent's to end
    os._exit(0)
os.waitpid(busy, 0)
print(flightlog.Client().run(run.id).status)
run.finish()
print(run.id)
"""


def test_a_forked_child_attaches_and_writes_a_journal_only_when_it_records(home: Path) -> None:
    status_after_child, run_id = run_script(home, FORKS).stdout.split()
    assert status_after_child in ("created", "running"), "the child's finish() did not end the parent's run"
    info = _read(home).run(run_id)
    assert info.status == "succeeded"
    assert info.metrics["parent"].count == 1 and info.metrics["child"].count == 1
    assert list_journals(home) == [], "the quiet child left none; the busy child and the parent removed theirs"


FORKS_WHILE_SHIPPING = """
import faulthandler, os, threading, flightlog
run = flightlog.init(project="p", resources=False)
stop = threading.Event()
def train():  # keeps the shipper busy writing to the store while the main thread forks
    step = 0
    while not stop.is_set():
        run.log({"x": float(step)}, step=step)
        step += 1
        if step % 200 == 0:
            stop.wait(0.001)
trainer = threading.Thread(target=train)
trainer.start()
failed = []
for i in range(30):
    pid = os.fork()
    if pid == 0:
        faulthandler.dump_traceback_later(20, exit=True)  # a child that hangs says where, and exits 1
        run.log({"child": float(i)}, step=i)
        run.finish()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        failed.append(i)
stop.set()
trainer.join()
run.finish()
print(failed, run.id)
"""


def test_children_forked_while_the_shipper_writes_do_not_hang(home: Path) -> None:
    """A fork that copied SQLite's process-wide mutexes while the shipper thread held one left
    the child's first store call waiting forever (a data-loader worker that logs)."""
    proc = run_script(home, FORKS_WHILE_SHIPPING, timeout=300)
    failed, run_id = proc.stdout.rsplit(" ", 1)
    assert failed == "[]", f"children {failed} hung or failed:\n{proc.stderr}"
    info = _read(home).run(run_id.strip())
    assert info.metrics["child"].count == 30
    assert info.metrics["x"].count > 0


FORK_WHILE_THE_STORE_IS_LOCKED = """
import os, sys, threading, time, flightlog
run = flightlog.init(project="p", resources=False)
flightlog.Client().close()  # the store's file exists
print("ready", flush=True)
sys.stdin.readline()  # another process now holds the store's write lock
run.log({"x": 1.0})
shipper = next(t for t in threading.enumerate() if t.name == "flightlog-shipper")
def waits_for_the_lock():  # the shipper is in a write to the embedded store (it cannot get through)
    frame = sys._current_frames().get(shipper.ident)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "write" and code.co_filename.endswith(os.path.join("sqlite", "connection.py")):
            return True
        frame = frame.f_back
    return False
deadline = time.monotonic() + 30
while not waits_for_the_lock():
    assert time.monotonic() < deadline, "the shipper never tried to write"
    time.sleep(0.01)
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print("forked", flush=True)
sys.stdin.readline()  # the lock is released
run.finish()
print(run.id, flush=True)
"""


@pytest.mark.embedded_only("it holds the local SQLite store's write lock from another process")
def test_a_fork_does_not_wait_for_another_process_holding_the_store(home: Path) -> None:
    """The shipper waits for another process's write lock between its SQLite calls, outside the
    guard a fork waits for: a fork goes ahead while the store stays locked."""
    import select
    import sqlite3

    with subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(FORK_WHILE_THE_STORE_IS_LOCKED)],
        env=child_env(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=home.parent,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        try:
            assert proc.stdout.readline().strip() == "ready"
            holder = sqlite3.connect(home / "flightlog.db", isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
            proc.stdin.write("\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 25)
            line = proc.stdout.readline().strip() if ready else ""
            holder.execute("ROLLBACK")
            holder.close()
            assert line == "forked", "the fork waited for the other process's lock"
            out, err = proc.communicate("\n", timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 0, err
    assert _read(home).run(out.strip()).metrics["x"].count == 1
