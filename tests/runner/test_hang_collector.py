"""``flightlog run``'s hang collector with real processes as ranks: what the ranks hand over
becomes the run's evidence with the rank named; one rank's stall makes it ask every other rank;
a rank that does not answer gets the hang signal only when it has a handler for it; a rank's
end is noted; a Flight Recorder dump that cannot be read is said on the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import flightlog
from flightlog.resources.agent.channel import FileChannel, request_file
from flightlog.resources.agent.settings import HangSettings
from flightlog.runner.hangs import BOOTSTRAP_DIR, HangCollector

pytestmark = pytest.mark.embedded_only("the runner's side of the files; the jobs in tests/distributed use servers too")
SIG = int(signal.SIGRTMIN) + 7

#: a rank whose watch never answers (no thread reads the requests), with faulthandler on the hang signal
SILENT_RANK = """
import faulthandler, sys, time
fh = open(sys.argv[1], "a")
faulthandler.register({sig}, file=fh, all_threads=True)
def stuck_in_c_code():
    print("ready", flush=True)
    while True:
        time.sleep(0.05)
stuck_in_c_code()
"""


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.communicate()


def _collector(home: Path) -> tuple[flightlog.Run, HangCollector]:
    run = flightlog.init(project="p", resources=False)
    return run, HangCollector(run, HangSettings(floor=1.0, ceiling=2.0), attempt=1)


def _announce(collector: HangCollector, pid: int, rank: int, **extra: object) -> FileChannel:
    channel = FileChannel(collector.directory, pid=pid)
    channel.announce({"rank": rank, "pid": pid, "host": "node0", "world_size": 2}, source="bootstrap", **extra)
    return channel


def test_the_workload_gets_the_bootstrap_and_the_flight_recorder(home: Path) -> None:
    run, collector = _collector(home)
    env = {"PYTHONPATH": "/theirs", "TORCH_FR_BUFFER_SIZE": "50"}
    collector.child_env(env)
    assert env["PYTHONPATH"] == f"{BOOTSTRAP_DIR}{os.pathsep}/theirs"
    assert env["TORCH_FR_BUFFER_SIZE"] == "50"  # the job's own choice stands
    assert env["FLIGHTLOG_HANG_DIR"] == collector.directory and env["FLIGHTLOG_RUNNER_PID"] == str(os.getpid())
    bare: dict[str, str] = {"FLIGHTLOG_BOOTSTRAP": "off"}
    collector.child_env(bare)
    assert "PYTHONPATH" not in bare and bare["TORCH_FR_BUFFER_SIZE"] == "2000"
    collector.stop()
    run.finish()
    assert not Path(collector.directory).exists()


def test_a_stall_is_recorded_for_its_rank_and_every_other_rank_is_asked(
    home: Path, children: list[subprocess.Popen[str]]
) -> None:
    run, collector = _collector(home)
    sleeper = subprocess.Popen(["sleep", "60"], text=True)
    children.append(sleeper)
    rank0 = _announce(collector, os.getpid(), 0)
    _announce(collector, sleeper.pid, 1)
    collector.collect(100.0)
    rank0.deliver(
        "stall",
        "rank0-stall-1",
        {"rank": 0, "pid": os.getpid(), "state": "stalled", "since": 90.0, "time": 100.0, "threshold_s": 10},
    )
    rank0.deliver(
        "flight_recorder",
        "rank0-1",
        {"rank": 0, "pid": os.getpid(), "entries": []},
        raw='{"version": "2.10", "entries": []}',
    )
    collector.collect(100.5)
    assert Path(request_file(collector.directory, sleeper.pid)).read_text() == "rank 0 stalled"
    assert not Path(request_file(collector.directory, os.getpid())).exists()  # the stalled rank answered already
    assert not list(Path(collector.directory).glob("ev-*"))  # taken
    collector.stop()
    run.finish()
    client = flightlog.Client()
    (stall,) = client.evidence(run.id, kind="stall")
    assert stall["data"]["rank"] == 0 and stall["name"] == "rank0-stall-1"
    (fr,) = client.evidence(run.id, kind="flight_recorder")
    assert fr["data"]["artifact"] == "hangs/rank0-1.json"
    (kept,) = [a for a in client.artifacts(run.id) if a.kind == "flight_recorder"]
    assert kept.path == "hangs/rank0-1.json"
    (warning,) = client.logs(run.id, level="warning", component="flightlog")
    assert warning.rank == 0 and warning.message.startswith("rank 0: no progress for 10 s (threshold 10 s)")


def test_a_silent_rank_is_signalled_only_with_a_handler_and_answers_through_faulthandler(
    home: Path, tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    run, collector = _collector(home)
    dump = Path(collector.directory) / "fh-silent.txt"
    silent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SILENT_RANK.format(sig=SIG)), str(dump)],
        stdout=subprocess.PIPE,
        text=True,
    )
    plain = subprocess.Popen(["sleep", "60"], text=True)  # no handler: the signal would end it
    children.extend([silent, plain])
    assert silent.stdout is not None and silent.stdout.readline().strip() == "ready"
    _announce(collector, silent.pid, 1, signal=SIG, faulthandler_file=str(dump))
    _announce(collector, plain.pid, 2, signal=SIG, faulthandler_file=str(tmp_path / "never.txt"))
    collector.collect(100.0)
    assert collector.ask("rank 0 stalled", now=100.0) == 2
    collector.collect(101.0)  # within the grace: nothing sent
    assert not dump.exists() or dump.stat().st_size == 0
    collector.collect(104.0)  # past it: the signal, to the rank with a handler only
    while not (dump.exists() and " in <module>" in dump.read_text()):  # the dump's last frame is written
        time.sleep(0.05)
    collector.collect(104.5)  # the dump is read once the file stopped growing: the next look
    collector.collect(105.0)
    assert plain.poll() is None and silent.poll() is None  # neither was ended by the signal
    collector.stop()
    run.finish()
    client = flightlog.Client()
    (stacks,) = client.evidence(run.id, kind="stacks")
    data = stacks["data"]
    assert data["rank"] == 1 and data["source"] == "faulthandler"
    frames = [f for t in data["threads"] for f in t["frames"]]
    assert any(f["function"] == "stuck_in_c_code" for f in frames), data["threads"]
    (stall,) = client.evidence(run.id, kind="stall")
    assert stall["data"]["rank"] == 1 and stall["data"]["source"] == "runner"


def test_a_rank_s_end_is_noted_and_its_late_rank_learnt(home: Path, children: list[subprocess.Popen[str]]) -> None:
    run, collector = _collector(home)
    short = subprocess.Popen(["sleep", "60"], text=True)
    children.append(short)
    channel = FileChannel(collector.directory, pid=short.pid)
    channel.announce({"rank": None, "pid": short.pid, "host": "node0"}, source="bootstrap")  # Lightning's first process
    collector.collect(1.0)
    channel.deliver("rank_error", "r", {"rank": 0, "pid": short.pid, "time": 1.0, "type": "ValueError", "message": "x"})
    collector.collect(2.0)
    short.kill()
    short.wait()
    collector.collect(3.0)
    collector.stop()
    run.finish()
    (ended,) = flightlog.Client().evidence(run.id, kind="rank_exit")
    assert ended["data"]["rank"] == 0 and ended["data"]["pid"] == short.pid


def test_an_unreadable_flight_recorder_dump_is_said_on_the_run(home: Path) -> None:
    run, collector = _collector(home)
    channel = _announce(collector, os.getpid(), 1)
    channel.deliver(
        "flight_recorder",
        "rank1-1",
        {
            "rank": 1,
            "pid": os.getpid(),
            "entries": [],
            "problem": "the Flight Recorder dump is not JSON (…); it may be truncated",
        },
    )
    collector.stop()
    run.finish()
    (event,) = flightlog.Client().logs(run.id, level="warning", component="flightlog")
    assert event.rank == 1 and "rank 1's Flight Recorder dump: the Flight Recorder dump is not JSON" in event.message


def test_records_that_are_not_whole_are_left_for_later_and_junk_is_dropped(home: Path) -> None:
    run, collector = _collector(home)
    directory = Path(collector.directory)
    (directory / "ev-1-000001.json").write_text('{"kind": "stall", "data"')  # still being written
    (directory / "ev-1-000002.json").write_text(json.dumps({"kind": "stall", "data": "not a mapping"}))
    collector.collect(1.0)
    assert (directory / "ev-1-000001.json").exists() and not (directory / "ev-1-000002.json").exists()
    collector.stop()
    run.finish()
    assert flightlog.Client().evidence(run.id, kind="stall") == []


def test_a_look_carried_on_the_collectors_thread_runs_at_its_pace_until_stop(home: Path) -> None:
    """The rank observer looks from the collector's thread (one thread started per attempt):
    each carried look runs there, no sooner than its interval, and not after `stop`."""
    import itertools
    import threading

    run, collector = _collector(home)
    calls: list[tuple[float, threading.Thread]] = []

    def look() -> None:
        calls.append((time.monotonic(), threading.current_thread()))
        if len(calls) == 2:
            raise RuntimeError("a look that fails once")  # said once; the looks go on

    collector.carry(look, 0.2)
    began = time.monotonic()
    collector.start()
    deadline = time.monotonic() + 30
    while len(calls) < 4:
        assert time.monotonic() < deadline, f"the carried look ran {len(calls)} times"
        time.sleep(0.01)
    collector.stop()
    run.finish()
    threads = {thread for _, thread in calls}
    assert [thread.name for thread in threads] == ["flightlog-hang-collector"]
    assert not any(thread.is_alive() for thread in threads), "stop ends the looks with the thread"
    times = [began] + [at for at, _ in calls]
    # the next look is due an interval after the previous one began (less the microseconds before its call)
    assert all(later - earlier >= 0.19 for earlier, later in itertools.pairwise(times)), times
