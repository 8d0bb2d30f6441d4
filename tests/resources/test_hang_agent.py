"""The hang watch inside a process (flightlog.resources.agent): its settings, its judgement of a
stall against the usual step time, the evidence it takes (stacks, faulthandler's text, the
Flight Recorder's dump read), the files it hands them over in, and the runner's bootstrap."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from flightlog.resources.agent.channel import MAX_PENDING, FileChannel
from flightlog.resources.agent.settings import HangSettings, chains, parse_signal, rank_env
from flightlog.resources.agent.stacks import (
    MAX_THREADS,
    normalize_flight_recorder,
    parse_faulthandler,
    stacks_evidence,
    thread_stacks,
)
from flightlog.resources.agent.watch import RankWatch, stalled_text
from flightlog.runner.hangs import BOOTSTRAP_DIR

# ── settings ───────────────────────────────────────────────────────────────────────────────────


def test_defaults_find_a_hang_well_before_the_collective_timeouts() -> None:
    s = HangSettings.from_env({})
    assert (s.factor, s.floor, s.ceiling) == (10.0, 60.0, 300.0)
    assert s.signal == int(signal.SIGRTMIN) + 7 and s.fr_buffer == 2000
    # 10 × the usual step, at least a minute, at most 5 minutes (NCCL's timeout is 10)
    assert s.threshold(0.5, 0.0, ranked=True) == 60.0
    assert s.threshold(12.0, 0.0, ranked=True) == 120.0
    assert s.threshold(90.0, 0.0, ranked=True) == 300.0
    # a pause the process recovered from raises the bar (never above the ceiling)
    assert s.threshold(0.5, 100.0, ranked=True) == 150.0
    # before any gap: a rank is judged against the ceiling, a single process not at all
    assert s.threshold(None, 0.0, ranked=True) == 300.0
    assert s.threshold(None, 0.0, ranked=False) is None


def test_a_short_process_group_timeout_brings_the_threshold_inside_it() -> None:
    """The collective's own timeout fires first otherwise: gloo's receive gives up after it, the
    launcher tears the job down, and the stuck rank's stacks are never taken."""
    s = HangSettings.from_env({})
    # 8 s group timeout (the scenario): judged at 4 s, below the 60 s floor
    assert s.threshold(0.2, 0.0, ranked=True, group_timeout=8.0) == 4.0
    assert s.threshold(None, 0.0, ranked=True, group_timeout=8.0) == 4.0  # before the first step too
    # NCCL's default 10 minutes: the defaults already judge within half of it
    assert s.threshold(0.5, 0.0, ranked=True, group_timeout=600.0) == 60.0
    assert s.threshold(None, 0.0, ranked=True, group_timeout=600.0) == 300.0
    # a job whose own rhythm is slower than half its timeout is not flagged every step
    assert s.threshold(3.0, 0.0, ranked=True, group_timeout=8.0) == 6.0
    # ... but never past 0.8 of it: a pause stretched by a loaded machine (5 s, 9 s) must not move
    # the judgement to where the others' timeout has already torn the stuck rank down
    assert s.threshold(0.2, 5.0, ranked=True, group_timeout=8.0) == 6.4
    assert s.threshold(0.2, 9.0, ranked=True, group_timeout=8.0) == 6.4
    assert s.threshold(6.0, 0.0, ranked=True, group_timeout=8.0) == 6.4
    # a single process is still not judged before its first steps
    assert s.threshold(None, 0.0, ranked=False, group_timeout=8.0) is None


def test_a_stall_says_which_share_of_the_group_timeout_set_its_threshold() -> None:
    def said(limit: float, timeout: float | None) -> str:
        return stalled_text({"time": 110.0, "since": 100.0, "threshold_s": limit, "group_timeout_s": timeout})

    assert said(4.0, 8.0) == "no progress for 10 s (threshold 4 s: half the process group's 8 s timeout)"
    assert said(6.4, 8.0) == (
        "no progress for 10 s (threshold 6.4 s: 80% of the process group's 8 s timeout, before it tears the job down)"
    )
    assert said(6.0, 8.0) == "no progress for 10 s (threshold 6 s)"  # its own rhythm set it
    assert said(60.0, None) == "no progress for 10 s (threshold 60 s)"


def test_the_watch_reads_torch_s_process_group_timeouts(tmp_path: Path) -> None:
    """A real gloo group of one rank: its timeout, then a shorter new_group's, read from the
    watch's thread (torch's registry of groups and each backend's options)."""
    script = textwrap.dedent(
        """
        import datetime, json, os, socket, sys
        import torch.distributed as dist
        from flightlog.resources.agent.groups import GroupTimeouts, group_timeout
        from flightlog.resources.agent.settings import HangSettings
        from flightlog.resources.agent.watch import RankWatch, stalled_text
        out = {"before": group_timeout()}
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1,
                                timeout=datetime.timedelta(seconds=8))
        out["default"] = group_timeout()
        cached = GroupTimeouts()
        out["cached"] = cached.current()
        dist.new_group([0], timeout=datetime.timedelta(seconds=3))
        out["shortest"] = group_timeout()
        out["cached_after_new_group"] = cached.current()
        watch = RankWatch(HangSettings.from_env({}), lambda *a: None)
        out["threshold"] = watch.threshold()
        dist.destroy_process_group()
        print(json.dumps(out))
        """
    )
    env = {**os.environ, "RANK": "0", "WORLD_SIZE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["before"] is None
    assert out["default"] == 8.0 and out["cached"] == 8.0
    assert out["shortest"] == 3.0 and out["cached_after_new_group"] == 3.0  # a new group is read at once
    assert out["threshold"] == 1.5  # a rank before its first step: half the shortest timeout


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("FLIGHTLOG_HANG_MIN", "soon", "not a number of seconds"),
        ("FLIGHTLOG_HANG_MAX", "-5", "greater than 0"),
        ("FLIGHTLOG_HANG_FACTOR", "0.5", "at least 1"),
        ("FLIGHTLOG_HANG_DUMPS", "0", "at least 1"),
        ("FLIGHTLOG_HANG_WATCH", "maybe", "on or off"),
        ("FLIGHTLOG_HANG_SIGNAL", "SIGUSR1", "Lightning"),
        ("FLIGHTLOG_HANG_SIGNAL", "SIGTERM", "another job"),
        ("FLIGHTLOG_HANG_SIGNAL", "RTMIN+99", "outside SIGRTMIN"),
        ("FLIGHTLOG_HANG_SIGNAL", "SIGNOPE", "not a signal name"),
    ],
)
def test_a_bad_setting_is_named_when_strict_and_falls_back_inside_a_workload(
    name: str, value: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError) as caught:
        HangSettings.from_env({name: value}, strict=True)
    assert name in str(caught.value) and words in str(caught.value)
    lenient = HangSettings.from_env({name: value})
    assert lenient == HangSettings.from_env({})
    assert f"{name}={value!r} ignored" in capsys.readouterr().err


def test_a_floor_above_the_ceiling_is_refused() -> None:
    with pytest.raises(ValueError, match="make the floor the smaller one"):
        HangSettings.from_env({"FLIGHTLOG_HANG_MIN": "400"}, strict=True)


def test_settings_are_an_immutable_value() -> None:
    a, b = HangSettings(floor=2.0), HangSettings(True, 10.0, 2.0)
    assert a == b and hash(a) == hash(b) and a != HangSettings() and {a: 1}[b] == 1
    assert repr(a).startswith("HangSettings(enabled=True, factor=10.0, floor=2.0, ceiling=300.0,")
    with pytest.raises(AttributeError):
        a.floor = 5.0
    assert a.floor == 2.0


def test_signals_are_read_by_name_or_number() -> None:
    assert parse_signal("RTMIN+3") == int(signal.SIGRTMIN) + 3
    assert parse_signal("sigusr2") == int(signal.SIGUSR2)
    assert parse_signal("off") is None
    assert parse_signal(str(int(signal.SIGRTMIN) + 2)) == int(signal.SIGRTMIN) + 2


def test_a_rank_is_read_from_every_launcher_s_variables() -> None:
    assert rank_env({"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "GROUP_RANK": "1"}) == {
        "rank": 3,
        "local_rank": 1,
        "world_size": 8,
        "node_rank": 1,
    }
    assert rank_env({"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4"})["rank"] == 2
    assert rank_env({"SLURM_PROCID": "5", "SLURM_NTASKS": "6"})["world_size"] == 6
    assert rank_env({"RANK": "x"})["rank"] is None


def test_faulthandler_chains_only_to_a_real_handler() -> None:
    sig = int(signal.SIGRTMIN) + 11
    previous = signal.getsignal(sig)
    try:
        assert chains(sig) is False  # the default action would end the process
        signal.signal(sig, lambda *_: None)
        assert chains(sig) is True
    finally:
        signal.signal(sig, previous)


# ── stacks ─────────────────────────────────────────────────────────────────────────────────────


def test_every_thread_s_stack_innermost_last_with_its_code() -> None:
    release = threading.Event()

    def read_shard() -> None:
        release.wait(30)  # the line the evidence must show

    worker = threading.Thread(target=read_shard, name="loader")
    worker.start()
    try:
        data = stacks_evidence(1, "no progress", skip={threading.get_ident()})
    finally:
        release.set()
        worker.join()
    assert data["rank"] == 1 and data["reason"] == "no progress" and data["pid"] == os.getpid()
    names = [t["name"] for t in data["threads"]]
    assert "loader" in names and "MainThread" not in names  # the calling thread was skipped
    loader = next(t for t in data["threads"] if t["name"] == "loader")
    inner = [f for f in loader["frames"] if f["function"] == "read_shard"]
    assert inner and inner[0]["code"] == "release.wait(30)  # the line the evidence must show"
    assert loader["frames"][-1]["function"] == "wait"  # innermost last: threading's wait


def test_a_deep_stack_keeps_its_innermost_and_outermost_frames_and_counts_the_rest() -> None:
    bottom, release = threading.Event(), threading.Event()

    def deep(n: int) -> None:
        if n:
            deep(n - 1)
        else:
            bottom.set()
            release.wait(30)

    t = threading.Thread(target=deep, args=(200,), name="deep")
    t.start()
    try:
        assert bottom.wait(30)
        threads, dropped = thread_stacks(skip={threading.get_ident()})
    finally:
        release.set()
        t.join()
    thread = next(x for x in threads if x["name"] == "deep")
    assert len(thread["frames"]) == 48 and thread["omitted_frames"] > 150
    assert dropped >= thread["omitted_frames"]
    assert thread["frames"][-1]["function"] == "wait" and thread["frames"][0]["function"] == "_bootstrap"


FAULTHANDLER = """\
Thread 0x00007f1 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 331 in wait
  File "/work/agent.py", line 10 in _run

Current thread 0x00007f2 (most recent call first):
  File "/work/data.py", line 88 in read_shard
  File "/work/train.py", line 12 in main
  File "/work/train.py", line 20 in <module>
Thread 0x00007f1 (most recent call first):
  File "/usr/lib/python3.11/threading.py", line 331 in wait
Current thread 0x00007f2 (most recent call first):
  File "/work/data.py", line 90 in read_shard
"""


def test_faulthandler_text_becomes_the_same_shape_one_dump_per_signal() -> None:
    dumps = parse_faulthandler(FAULTHANDLER)
    assert len(dumps) == 2
    first = {t["id"]: t for t in dumps[0]}
    main = first["0x00007f2"]
    assert [f["function"] for f in main["frames"]] == ["<module>", "main", "read_shard"]
    assert main["frames"][-1]["line"] == 88 and main["name"] == "current"
    assert dumps[1][1]["frames"][-1]["line"] == 90


# ── the Flight Recorder's dump ─────────────────────────────────────────────────────────────────


def _dump(entries: int, version: str = "2.10") -> str:
    return json.dumps(
        {
            "version": version,
            "pg_config": {},
            "entries": [
                {
                    "collective_seq_id": i,
                    "p2p_seq_id": 0,
                    "profiling_name": "gloo:all_reduce",
                    "process_group": ["0", "default_pg"],
                    "input_sizes": [[4]],
                    "input_dtypes": ["Float"],
                    "state": "scheduled",
                    "retired": i < entries,
                    "time_created_ns": 1_700_000_000_000_000_000 + i * 1_000_000,
                    "timeout_ms": 8000,
                    "is_p2p": False,
                }
                for i in range(1, entries + 1)
            ],
        }
    )


def test_a_dump_is_read_into_entries_newest_kept() -> None:
    data = normalize_flight_recorder(_dump(100), rank=1)
    assert data["version"] == "2.10" and data["total"] == 100 and data["truncated"] is True
    assert len(data["entries"]) == 64 and data["entries"][-1]["seq"] == 100
    last = data["entries"][-1]
    assert last["op"] == "all_reduce" and last["backend"] == "gloo" and last["pg"] == "default_pg"
    assert last["sizes"] == [[4]] and last["retired"] is False and last["timeout_s"] == 8.0
    assert last["time_created"] == pytest.approx(1_700_000_000.1)
    assert "problem" not in data


def test_a_truncated_or_unknown_dump_is_said_never_guessed() -> None:
    cut = normalize_flight_recorder(_dump(3)[:-40], rank=0)
    assert cut["truncated"] is True and "may be truncated" in cut["problem"] and cut["entries"] == []
    odd = normalize_flight_recorder(_dump(3, version="9.0"), rank=0)
    assert "'9.0' is not one flightlog knows" in odd["problem"] and len(odd["entries"]) == 3
    junk = normalize_flight_recorder("[1, 2]", rank=0)
    assert "not a JSON object" in junk["problem"]


# ── the watch's judgement (a clock of the test's own) ──────────────────────────────────────────


class Counter:
    def __init__(self) -> None:
        self.value = 0

    def __call__(self) -> int:
        return self.value


def _watch(**settings: Any) -> tuple[RankWatch, list[tuple[str, dict[str, Any]]], Counter]:
    got: list[tuple[str, dict[str, Any]]] = []
    s = HangSettings(**{"floor": 2.0, "ceiling": 10.0, "factor": 4.0, "repeat": 3.0, "dumps": 2, **settings})
    watch = RankWatch(s, lambda kind, name, data, raw: got.append((kind, data)), clock=lambda: 0.0)
    steps = Counter()
    watch.add_source("run", steps)
    return watch, got, steps


def test_a_stall_is_judged_against_the_usual_step_then_recorded_again_and_resolved() -> None:
    watch, got, steps = _watch()
    t = 100.0
    for _ in range(10):  # a step every 0.1 s: the threshold is the floor, 2 s
        watch.tick(t)
        steps.value += 1
        t += 0.1
    watch.tick(t)
    last_move = t
    watch.tick(last_move + 1.9)
    assert not got
    watch.tick(last_move + 2.0)
    kinds = [k for k, _ in got]
    assert kinds == ["stacks", "stall"]  # the stacks first: whoever reads the stall finds where it is
    stall = got[1][1]
    assert stall["state"] == "stalled" and stall["since"] == last_move and stall["threshold_s"] == 2.0
    assert stall["usual_s"] == pytest.approx(0.1) and stall["progress"]["run"] == 10
    watch.tick(last_move + 4.0)  # within `repeat`: nothing new
    assert len(got) == 2
    watch.tick(last_move + 5.0)  # again after `repeat` (3 s)
    watch.tick(last_move + 9.0)  # but at most `dumps` (2) times
    assert [k for k, _ in got].count("stacks") == 2
    steps.value += 1
    watch.tick(last_move + 9.5)
    assert got[-1][0] == "stall" and got[-1][1]["state"] == "resumed" and got[-1][1]["since"] == last_move


def test_a_slow_step_is_no_hang_and_a_pause_it_recovered_from_raises_the_bar() -> None:
    watch, got, steps = _watch(factor=10.0, floor=1.0, ceiling=100.0)
    t = 0.0
    for _ in range(5):  # a step every 3 s: 10 × 3 = 30 s
        watch.tick(t)
        steps.value += 1
        t += 3.0
    watch.tick(t)
    assert watch.threshold() == pytest.approx(30.0)
    watch.tick(t + 29.0)
    assert not got
    steps.value += 1
    watch.tick(t + 29.5)  # a 29.5 s pause, recovered from: the bar is now 1.5 × that
    assert watch.threshold() == pytest.approx(44.25)


def test_the_wait_before_a_counter_exists_is_start_up_not_a_pause_that_raises_the_bar() -> None:
    """A slow rendezvous on a loaded machine (the CI failure of stop 48): a second run's source is
    added, then the process group appears 4 s later with the first steps in the same look. That
    wait was start-up: counted as a recovered pause it raised the bar to 1.5 × 4 s, past a short
    group timeout, and the launcher stopped the stuck rank before its stacks were taken. Nor is
    a source that goes (the run finished by that launcher's SIGTERM) a sign the rank moved on."""
    watch, got, steps = _watch(factor=10.0, floor=1.0, ceiling=100.0)
    group: Any = Counter()
    group.value = None  # no process group yet: its sequence number reads as None
    watch.add_source("group", group)
    watch.tick(0.0)
    watch.add_source("another run", Counter())  # init() of a second run: a sign of life
    watch.tick(0.5)
    group.value, steps.value = 3, 3  # the rendezvous done and three steps, all in one look
    t = 4.5
    watch.tick(t)
    for _ in range(10):  # then a step every 0.1 s
        steps.value += 1
        t += 0.1
        watch.tick(t)
    assert watch.threshold() == pytest.approx(1.0)  # 10 × 0.1 s: the start-up does not count
    watch.tick(t + 1.0)
    assert [k for k, _ in got] == ["stacks", "stall"] and got[1][1]["since"] == pytest.approx(t)
    # the launcher's SIGTERM finishes a run and its source goes: no progress, the stall stays open
    watch.remove_source("another run")
    watch.tick(t + 1.5)
    assert [k for k, _ in got] == ["stacks", "stall"] and watch.stalled_since == pytest.approx(t)


def test_a_single_process_is_not_judged_before_its_first_steps() -> None:
    watch, got, _ = _watch()
    for t in (0.0, 50.0, 500.0):
        watch.tick(t)
    assert not got  # a long start (a download, an index) is no hang of a single process


def test_asked_for_evidence_it_answers_at_once_without_counting_a_stall(tmp_path: Path) -> None:
    watch, got, steps = _watch()
    watch.request_file = str(tmp_path / "req")
    (tmp_path / "req").write_text("rank 0 stalled")
    watch.tick(1.0)
    assert [k for k, _ in got] == ["stacks"] and got[0][1]["reason"] == "requested: rank 0 stalled"
    assert not (tmp_path / "req").exists() and watch.stalls == 0


def test_a_failing_delivery_is_counted_and_never_raised(capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*_: Any) -> None:
        raise OSError("disk full")

    watch = RankWatch(HangSettings(floor=1.0), broken, clock=lambda: 0.0)
    watch.request("test")
    watch.tick(0.0)
    watch.request("test")
    watch.tick(0.5)
    assert watch.dropped == 2
    assert capsys.readouterr().err.count("hang evidence could not be recorded") == 1


def test_the_thread_starts_stops_and_is_gone_in_a_forked_child() -> None:
    watch = RankWatch(HangSettings(floor=0.5), lambda *a: None).start()
    try:
        assert watch.alive
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: no thread came with the fork
            from flightlog.resources.agent.watch import current_watch

            os.write(write, b"1" if current_watch() is None else b"0")
            os._exit(0)
        os.waitpid(pid, 0)
        assert os.read(read, 1) == b"1"
    finally:
        watch.stop()
    assert not watch.alive


# ── the files between the ranks and the runner ─────────────────────────────────────────────────


def test_records_are_written_whole_and_bounded_when_nobody_reads(tmp_path: Path) -> None:
    channel = FileChannel(str(tmp_path), pid=42)
    channel.announce({"rank": 1, "pid": 42}, source="bootstrap")
    assert json.loads((tmp_path / "agent-42.json").read_text())["rank"] == 1
    channel.deliver("flight_recorder", "rank1-1", {"rank": 1}, raw='{"version": "2.10"}')
    doc = json.loads((tmp_path / "ev-42-000001.json").read_text())
    assert doc["kind"] == "flight_recorder" and (tmp_path / doc["raw"]).read_text() == '{"version": "2.10"}'
    for i in range(MAX_PENDING + 5):
        channel.deliver("stacks", f"n{i}", {"i": i})
    assert channel.dropped == 6  # the raw file's record counted among the pending ones
    assert not list(tmp_path.glob("*.tmp"))


# ── the runner's bootstrap in a real interpreter ───────────────────────────────────────────────


def _python(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("FLIGHTLOG_", "RANK", "LOCAL_RANK", "WORLD_SIZE"))}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )


def test_the_bootstrap_starts_only_in_ranks_and_keeps_the_sitecustomize_it_hides(tmp_path: Path) -> None:
    hang_dir = tmp_path / "hangs"
    hang_dir.mkdir()
    theirs = tmp_path / "site"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nos.environ['SITE_RAN'] = 'yes'\n")
    pythonpath = f"{BOOTSTRAP_DIR}{os.pathsep}{theirs}"
    code = """
        import os, sys
        print(os.environ.get('SITE_RAN'), '_flightlog_agent.watch' in sys.modules)
    """
    rank = _python(code, tmp_path, PYTHONPATH=pythonpath, FLIGHTLOG_HANG_DIR=str(hang_dir), RANK="1", WORLD_SIZE="2")
    assert rank.returncode == 0, rank.stderr
    assert rank.stdout.split() == ["yes", "True"]
    (agent,) = hang_dir.glob("agent-*.json")
    announced = json.loads(agent.read_text())
    assert (
        announced["rank"] == 1
        and announced["source"] == "bootstrap"
        and announced["signal"] == int(signal.SIGRTMIN) + 7
    )
    # no rank, not the runner's child: nothing started, the site's own sitecustomize still ran
    other = _python(code, tmp_path, PYTHONPATH=pythonpath, FLIGHTLOG_HANG_DIR=str(hang_dir))
    assert other.stdout.split() == ["yes", "False"]
    # without the runner's directory: nothing at all
    alone = _python(code, tmp_path, PYTHONPATH=pythonpath, RANK="1")
    assert alone.stdout.split() == ["yes", "False"] and not alone.stderr


def test_the_bootstrap_adds_no_heavy_module_to_a_workload_s_start_up(tmp_path: Path) -> None:
    """Every step of a pipeline and every rank pays the bootstrap before its first line: it
    imports what the watch needs to start, and what a stall needs only when one happens."""
    hang_dir = tmp_path / "hangs"
    hang_dir.mkdir()
    code = "import sys; print(' '.join(sorted(sys.modules)))"
    plain = set(_python(code, tmp_path).stdout.split())
    booted = _python(code, tmp_path, PYTHONPATH=str(BOOTSTRAP_DIR), FLIGHTLOG_HANG_DIR=str(hang_dir), RANK="0")
    added = set(booted.stdout.split()) - plain
    assert "_flightlog_agent.watch" in added, booted.stderr
    heavy = {"typing", "dataclasses", "inspect", "statistics", "socket", "traceback", "linecache", "tokenize"}
    heavy |= {"json", "re", "enum", "signal"}  # a third of a bare interpreter's start-up, for a step that does nothing
    assert not added & heavy, added & heavy


def test_the_bootstrap_records_a_rank_s_uncaught_exception_and_python_still_prints_it(tmp_path: Path) -> None:
    hang_dir = tmp_path / "hangs"
    hang_dir.mkdir()
    proc = _python(
        "raise ValueError('shard 7 has 0 rows')",
        tmp_path,
        PYTHONPATH=str(BOOTSTRAP_DIR),
        FLIGHTLOG_HANG_DIR=str(hang_dir),
        RANK="1",
    )
    assert proc.returncode == 1 and "ValueError: shard 7 has 0 rows" in proc.stderr
    (record,) = hang_dir.glob("ev-*.json")
    doc = json.loads(record.read_text())
    assert doc["kind"] == "rank_error" and doc["data"]["rank"] == 1 and doc["data"]["type"] == "ValueError"


def test_the_hang_signal_prints_stacks_and_never_ends_the_process(tmp_path: Path) -> None:
    hang_dir = tmp_path / "hangs"
    hang_dir.mkdir()
    code = """
        import os, signal, sys, time
        signal.raise_signal(signal.SIGRTMIN + 7)
        print("alive")
    """
    proc = _python(code, tmp_path, PYTHONPATH=str(BOOTSTRAP_DIR), FLIGHTLOG_HANG_DIR=str(hang_dir), RANK="0")
    assert proc.returncode == 0 and proc.stdout.strip() == "alive", proc.stderr
    (dump,) = hang_dir.glob("fh-*.txt")
    threads = parse_faulthandler(dump.read_text())[0]
    assert any(f["function"] == "<module>" for t in threads for f in t["frames"])


def test_a_broken_bootstrap_leaves_the_workload_as_python_started_it(tmp_path: Path) -> None:
    # the directory is gone (the runner was killed): the workload starts normally and says nothing
    proc = _python(
        "print('ok')", tmp_path, PYTHONPATH=str(BOOTSTRAP_DIR), FLIGHTLOG_HANG_DIR=str(tmp_path / "gone"), RANK="0"
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok" and proc.stderr == ""


def test_the_documented_defaults_are_the_watch_s_own() -> None:
    from flightlog.config import VARIABLES as DOCUMENTED
    from flightlog.resources.agent.settings import VARIABLES

    documented = {v.name: v.default for v in DOCUMENTED}
    assert {name: default for name, (_, default, _) in VARIABLES.items()} == {n: documented[n] for n in VARIABLES}


@pytest.mark.parametrize("interpreter", ["python2.7", "python3.8", "python3.13"])
def test_the_bootstrap_is_safe_under_the_workload_s_own_python(interpreter: str, tmp_path: Path) -> None:
    """A workload may run another Python than flightlog's: the watch starts where it can (3.8 and
    later), the hidden sitecustomize still runs, and an older Python starts as if nothing were there."""
    exe = _interpreter(interpreter)
    if exe is None:
        pytest.skip(f"no {interpreter} here")
    theirs = tmp_path / "site"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nos.environ['SITE_RAN'] = 'yes'\n")
    hang_dir = tmp_path / "hangs"
    hang_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLIGHTLOG_", "PYTHON"))}
    env.update(PYTHONPATH=f"{BOOTSTRAP_DIR}{os.pathsep}{theirs}", FLIGHTLOG_HANG_DIR=str(hang_dir), RANK="1")
    code = (
        "import os, threading; print(os.environ.get('SITE_RAN')); print(sorted(t.name for t in threading.enumerate()))"
    )
    proc = subprocess.run([exe, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    site_ran, threads = proc.stdout.splitlines()
    assert site_ran == "yes"
    watched = interpreter != "python2.7"
    assert ("flightlog-hang-watch" in threads) is watched
    assert bool(list(hang_dir.glob("agent-*.json"))) is watched


def _interpreter(name: str) -> str | None:
    """``name`` on PATH, else in pyenv's versions (whose shims answer only for the selected one)."""
    import glob
    import shutil

    version = name.removeprefix("python")
    found = [shutil.which(name), *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/{name}")))]
    for exe in found:
        if exe and subprocess.run([exe, "-c", "pass"], capture_output=True).returncode == 0:
            return exe
    return None


def test_when_the_dump_is_bounded_flightlog_s_own_threads_are_cut_first() -> None:
    """More threads than a dump keeps: the workload's thread is kept, flightlog's own go."""
    release = threading.Event()
    ours = [
        threading.Thread(target=release.wait, args=(30,), name=f"flightlog-filler-{i}") for i in range(MAX_THREADS + 2)
    ]
    loader = threading.Thread(target=release.wait, args=(30,), name="zz-loader")  # sorts after them by name
    for t in [*ours, loader]:
        t.start()
    try:
        data = stacks_evidence(0, "no progress", skip={threading.get_ident()})
    finally:
        release.set()
        for t in [*ours, loader]:
            t.join()
    names = [t["name"] for t in data["threads"]]
    assert len(names) == MAX_THREADS and "zz-loader" in names
    assert data["truncated"]


# ── the bootstrap's thread without threading (bare.py, issue 32) ─────────────────────────────


def test_the_bootstrap_starts_its_watch_without_importing_threading(tmp_path: Path) -> None:
    """``threading`` (with ``functools`` and ``collections``) was most of what the bootstrap cost
    a step that does little: the watch runs without it until the workload imports it."""
    hang_dir = tmp_path / "hangs"
    hang_dir.mkdir()
    code = "import sys; print(' '.join(sorted(sys.modules)))"
    plain = set(_python(code, tmp_path).stdout.split())
    booted = _python(code, tmp_path, PYTHONPATH=str(BOOTSTRAP_DIR), FLIGHTLOG_HANG_DIR=str(hang_dir), RANK="0")
    added = set(booted.stdout.split()) - plain
    assert "_flightlog_agent.watch" in added, booted.stderr
    assert not added & {"threading", "functools", "collections", "importlib", "types"}, added
    assert list(hang_dir.glob("agent-*.json")), "the watch announced itself"


@pytest.mark.parametrize("interpreter", ["python3.8", "python3.13", "this"])
def test_the_watch_s_thread_enters_threading_s_books_when_the_workload_imports_it(
    interpreter: str, tmp_path: Path
) -> None:
    """Imported after the watch started, ``threading`` lists the watch's thread by its name at
    once, and the workload's own thread is still the main one."""
    exe = sys.executable if interpreter == "this" else _interpreter(interpreter)
    if exe is None:
        pytest.skip(f"no {interpreter} here")
    hang_dir = tmp_path / "hangs"
    hang_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLIGHTLOG_", "PYTHON", "RANK"))}
    env.update(PYTHONPATH=str(BOOTSTRAP_DIR), FLIGHTLOG_HANG_DIR=str(hang_dir), RANK="0")
    code = textwrap.dedent(
        """
        import sys
        print("threading" in sys.modules)
        import threading
        watch = [t for t in threading.enumerate() if t.name == "flightlog-hang-watch"]
        print(len(watch), watch[0].daemon if watch else None, watch[0].is_alive() if watch else None)
        print(threading.main_thread() is threading.current_thread(), threading.current_thread().name)
        """
    )
    proc = subprocess.run([exe, "-c", code], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.splitlines() == ["False", "1 True True", "True MainThread"]


def test_a_watch_without_threading_answers_a_request_with_the_main_thread_s_stack(tmp_path: Path) -> None:
    """Asked for evidence (the runner's request file), the bare watch records the stacks, the
    main thread's first, and the workload still has not imported ``threading``."""
    from tests.helpers import wait_for

    hang_dir = tmp_path / "hangs"
    hang_dir.mkdir()
    release = tmp_path / "release"
    code = f"""
        import os, sys, time
        print(os.getpid(), flush=True)
        def waiting_for_the_test():
            while not os.path.exists({str(release)!r}):
                time.sleep(0.01)
        waiting_for_the_test()
        print("threading" in sys.modules, flush=True)
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLIGHTLOG_", "RANK", "LOCAL_RANK", "WORLD_SIZE"))}
    env.update(PYTHONPATH=str(BOOTSTRAP_DIR), FLIGHTLOG_HANG_DIR=str(hang_dir), RANK="0", FLIGHTLOG_HANG_MIN="1")
    with subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, stdout=subprocess.PIPE, text=True, cwd=tmp_path
    ) as proc:
        try:
            assert proc.stdout is not None
            pid = int(proc.stdout.readline())
            (hang_dir / f"req-{pid}").write_text("asked by the test")

            def stacks() -> dict[str, Any] | None:
                for path in hang_dir.glob(f"ev-{pid}-*.json"):
                    doc = json.loads(path.read_text())
                    if doc["kind"] == "stacks":
                        return dict(doc["data"])
                return None

            data = wait_for(stacks, "the stacks the request asked for")
            release.write_text("")
            assert proc.stdout.readline().strip() == "False"
        finally:
            release.write_text("")
            proc.wait(timeout=60)
    main = data["threads"][0]
    assert any(f["function"] == "waiting_for_the_test" for f in main["frames"]), main


def test_a_child_forked_before_threading_was_imported_imports_it_without_asking_a_thread_it_has_not() -> None:
    """The watch's thread does not come with a fork: the child's ``import threading`` asks no
    thread to enter its books (nobody would answer; it would wait out the bound)."""
    import tempfile

    with tempfile.TemporaryDirectory() as hang_dir:
        code = """
            import os, sys
            pid = os.fork()
            if pid == 0:
                (watch,) = sys.modules["_flightlog_agent.bare"]._ThreadingImport._threads
                import threading
                names = [t.name for t in threading.enumerate()]
                print(watch._asked, names, threading.main_thread() is threading.current_thread(), flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
            import threading
            print([t.name for t in threading.enumerate()])
        """
        proc = _python(code, Path(hang_dir), PYTHONPATH=str(BOOTSTRAP_DIR), FLIGHTLOG_HANG_DIR=hang_dir, RANK="0")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.splitlines() == ["False ['MainThread'] True", "['MainThread', 'flightlog-hang-watch']"]
