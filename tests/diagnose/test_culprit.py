"""Culprit and victims, from the evidence each rank leaves (contract C3) in a real store: the
Flight Recorder's collective numbers, a mismatch, a rank's own error, a silent exit, stacks; the
victims' failures never lead; stragglers by the time they enter the collectives. The real jobs
behind this evidence (torchrun, Lightning) are tests/distributed."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import flightlog
from tests.helpers import cli

pytestmark = pytest.mark.embedded_only("the reading of evidence; tests/distributed run the jobs through a server")

T0 = 1_800_000_000.0
GLOO_TIMEOUT = (
    "Traceback (most recent call last):\n"
    '  File "/job/train.py", line 14, in main\n'
    "    dist.all_reduce(x)\n"
    "RuntimeError: [../gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 8000ms for recv operation to complete"
)
OWN_ERROR = (
    "Traceback (most recent call last):\n"
    '  File "/job/train.py", line 13, in main\n'
    "    x = load_batch(rank, step)\n"
    '  File "/job/data.py", line 88, in load_batch\n'
    '    raise ValueError(f"shard 7 has 0 rows")\n'
    "ValueError: shard 7 has 0 rows"
)


def _entries(
    last: int, op: str = "all_reduce", sizes: Any = None, *, in_flight: bool = True, t: float = T0
) -> list[dict[str, Any]]:
    return [
        {
            "seq": i,
            "op": op if i == last else "all_reduce",
            "pg": "default_pg",
            "sizes": sizes if (i == last and sizes is not None) else [[4]],
            "state": "scheduled",
            "retired": not (in_flight and i == last),
            "time_created": t + i,
        }
        for i in range(1, last + 1)
    ]


def _stacks(rank: int, frames: list[tuple[str, int, str]], at: float) -> dict[str, Any]:
    return {
        "rank": rank,
        "pid": 100 + rank,
        "host": f"node{rank}",
        "time": at,
        "reason": "no progress",
        "threads": [
            {
                "name": "MainThread",
                "id": 1,
                "frames": [{"file": f, "line": n, "function": fn, "code": ""} for f, n, fn in frames],
            }
        ],
    }


IN_ALL_REDUCE = [
    ("/job/train.py", 20, "<module>"),
    ("/job/train.py", 14, "main"),
    ("/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", 3252, "all_reduce"),
]
IN_READ_SHARD = [("/job/train.py", 20, "<module>"), ("/job/train.py", 13, "main"), ("/job/data.py", 88, "read_shard")]


def _run(home: Path, status: str | None = "failed") -> flightlog.Run:
    run = flightlog.init(project="dist", resources=False)
    return run


def _stall(run: flightlog.Run, rank: int, since: float, at: float, state: str = "stalled") -> None:
    run.log_evidence(
        "stall",
        f"rank{rank}-{state}",
        {
            "rank": rank,
            "pid": 100 + rank,
            "host": f"node{rank}",
            "world_size": 3,
            "state": state,
            "since": since,
            "time": at,
        },
    )


def _fr(run: flightlog.Run, rank: int, entries: list[dict[str, Any]], at: float) -> None:
    run.log_evidence(
        "flight_recorder",
        f"rank{rank}",
        {"rank": rank, "pid": 100 + rank, "time": at, "version": "2.10", "entries": entries},
    )


def _diagnose(run: flightlog.Run) -> dict[str, Any]:
    return flightlog.Client().diagnose(run.id, auto_baseline=False)


def test_the_rank_that_never_entered_the_collective_is_the_culprit_and_the_others_waited(home: Path) -> None:
    run = _run(home)
    for rank in (0, 2):
        _stall(run, rank, T0 + 4, T0 + 64)
        _fr(run, rank, _entries(4), T0 + 64)
        _stacks_ = _stacks(rank, IN_ALL_REDUCE, T0 + 64)
        run.log_evidence("stacks", f"rank{rank}", _stacks_)
        run.log_evidence("rank_error", f"rank{rank}", {"rank": rank, "time": T0 + 484, "traceback": GLOO_TIMEOUT})
    _stall(run, 1, T0 + 3.5, T0 + 64)
    _fr(run, 1, _entries(3, in_flight=False), T0 + 64)
    run.log_evidence("stacks", "rank1", _stacks(1, IN_READ_SHARD, T0 + 64))
    run.log_event(GLOO_TIMEOUT, level="error")  # the whole run's last traceback: a victim's
    run.finish("failed", exit_code=1)
    report = _diagnose(run)
    top = report["findings"][0]
    assert top["category"] == "hang" and top["confidence"] >= 0.8, report
    assert top["rank"] == 1
    assert top["culprit"] == {
        "rank": 1,
        "host": "node1",
        "where": {"file": "/job/data.py", "line": 88, "function": "read_shard"},
        "collective": {"op": "all_reduce", "seq": 4},
        "stuck_s": pytest.approx(480.5),
    }
    assert [v["rank"] for v in top["victims"]] == [0, 2]
    assert all(v["waited_s"] == pytest.approx(480.0) for v in top["victims"])
    assert "Timed out waiting 8000ms" in top["victims"][0]["error"]
    assert top["summary"].startswith(
        "rank 1 never entered all_reduce #4; ranks 0 and 2 waited 8m00s (then: RuntimeError:"
    ), top["summary"]
    assert "rank 1 was in read_shard at data.py:88" in top["summary"]
    # the victims' timeout is evidence of the culprit finding, never a cause of its own
    assert [f["category"] for f in report["findings"] if f["confidence"] >= 0.5] == ["hang"]
    assert report["kind"] == "performance"
    # for a person: the culprit first, the victims under it
    text = cli(home, "diagnose", run.id, "--no-baseline").stdout
    assert "culprit rank 1 on node1, in read_shard at /job/data.py:88, never in all_reduce #4" in " ".join(text.split())
    assert text.count("victim  rank") == 2


def test_a_live_hang_is_a_finding_before_any_timeout(home: Path) -> None:
    import time

    now = time.time()
    run = _run(home, status=None)
    _stall(run, 0, now - 20, now - 5)
    _fr(run, 0, _entries(4, t=now - 24), now - 5)
    _stall(run, 1, now - 21, now - 5)
    _fr(run, 1, _entries(3, in_flight=False, t=now - 24), now - 5)
    run.log_evidence("stacks", "rank1", _stacks(1, IN_READ_SHARD, now - 5))
    run._w.flush()
    report = _diagnose(run)
    run.finish()
    top = report["findings"][0]
    assert report["status"] == "running"
    assert top["category"] == "hang" and top["culprit"]["rank"] == 1 and top["culprit"]["collective"]["seq"] == 4
    assert "rank 1 never entered all_reduce #4 and has made no progress for" in top["summary"]
    assert "rank 1 is in read_shard" in top["summary"]
    assert top["victims"][0]["rank"] == 0 and top["victims"][0]["waited_s"] >= 19


def test_ranks_in_different_collectives_are_a_mismatch_the_odd_rank_first(home: Path) -> None:
    run = _run(home)
    for rank in (0, 2):
        _stall(run, rank, T0, T0 + 10)
        _fr(run, rank, _entries(4), T0 + 10)
    _stall(run, 1, T0, T0 + 10)
    _fr(run, 1, _entries(4, op="broadcast"), T0 + 10)
    run.finish("failed", exit_code=1)
    top = _diagnose(run)["findings"][0]
    assert top["category"] == "collective_mismatch" and top["culprit"]["rank"] == 1
    assert top["culprit"]["collective"] == {"op": "broadcast", "seq": 4}
    assert "rank 1 called broadcast #4" in top["summary"] and "rank 0 called all_reduce #4" in top["summary"]


def test_with_two_ranks_the_mismatch_culprit_is_the_one_that_left_its_own_pattern(home: Path) -> None:
    run = _run(home)
    _fr(run, 0, _entries(5, sizes=[[8]]), T0 + 10)  # rank 0 sent a different size at #5
    _fr(run, 1, _entries(5), T0 + 10)
    for rank in (0, 1):
        _stall(run, rank, T0, T0 + 10)
    run.finish("failed", exit_code=1)
    top = _diagnose(run)["findings"][0]
    assert top["category"] == "collective_mismatch" and top["culprit"]["rank"] == 0


def test_a_rank_s_own_exception_is_the_finding_and_the_timeouts_its_victims(home: Path) -> None:
    run = _run(home)
    run.log_evidence("rank_error", "r1", {"rank": 1, "time": T0 + 3, "traceback": OWN_ERROR})
    run.log_evidence("rank_error", "r0", {"rank": 0, "time": T0 + 9, "traceback": GLOO_TIMEOUT})
    run.log_evidence(
        "launcher_exits",
        "attempt 1",
        {
            "launcher": "torchrun",
            "reported_root_cause": 0,  # torchrun saw the victim exit first
            "ranks": [{"rank": 0, "exit_code": 1}, {"rank": 1, "exit_code": 1}],
        },
    )
    run.log_event(GLOO_TIMEOUT, level="error")
    run.finish("failed", exit_code=1)
    report = _diagnose(run)
    top = report["findings"][0]
    assert top["category"] in ("data_error", "code_error") and top["confidence"] >= 0.5
    assert top["culprit"]["rank"] == 1
    assert top["culprit"]["where"] == {"file": "/job/data.py", "line": 88, "function": "load_batch"}
    assert top["victims"] == [{"rank": 0, "waited_s": None, "error": top["victims"][0]["error"]}]
    assert "Timed out waiting" in top["victims"][0]["error"]
    assert top["summary"].startswith("rank 1 failed first: ValueError: shard 7 has 0 rows")
    assert sum(1 for f in report["findings"] if f["confidence"] >= 0.5) == 1


def _missing_shard(rank: int, shard: int) -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/job/train.py", line 13, in main\n'
        "    x = load_batch(rank, step)\n"
        '  File "/job/data.py", line 41, in load_batch\n'
        '    with open(f"/data/shards/train-{rank:05d}.bin", "rb") as f:\n'
        f"FileNotFoundError: [Errno 2] No such file or directory: '/data/shards/train-{shard:05d}.bin'"
    )


def test_ranks_that_failed_alike_have_no_culprit_and_the_rank_that_waited_is_no_cause(home: Path) -> None:
    """Issue 28: two ranks with the same missing input (each its own shard) and one that waited:
    the cause is one they share, not the earlier rank's — no culprit, both named, the category
    read from their error."""
    run = _run(home)
    run.log_evidence("rank_error", "r1", {"rank": 1, "time": T0 + 3, "traceback": _missing_shard(1, 1)})
    run.log_evidence("rank_error", "r0", {"rank": 0, "time": T0 + 3.2, "traceback": _missing_shard(0, 0)})
    run.log_evidence("rank_error", "r2", {"rank": 2, "time": T0 + 9, "traceback": GLOO_TIMEOUT})
    run.log_evidence(
        "launcher_exits",
        "attempt 1",
        {"launcher": "torchrun", "ranks": [{"rank": r, "exit_code": 1} for r in range(3)]},
    )
    run.finish("failed", exit_code=1)
    report = _diagnose(run)
    top = report["findings"][0]
    assert top["category"] == "missing_file" and top["confidence"] >= 0.5, top
    assert top["culprit"]["rank"] is None and top["rank"] is None
    assert top["culprit"]["alike"] == [0, 1]
    assert top["summary"].startswith("ranks 0 and 1 failed alike: FileNotFoundError"), top["summary"]
    assert "rank 1 failed first" not in top["summary"]
    assert [v["rank"] for v in top["victims"]] == [2]
    shown = cli(home, "diagnose", run.id, "--no-baseline", check=False)
    assert "ranks 0 and 1 failed alike, none caused it" in shown.stdout, shown.stdout


def test_ranks_with_different_errors_of_their_own_still_have_a_culprit(home: Path) -> None:
    """Alike is the same exception and message (but for its numbers) or the same line: two ranks
    failing differently keep the earliest as the culprit."""
    run = _run(home)
    run.log_evidence("rank_error", "r1", {"rank": 1, "time": T0 + 3, "traceback": OWN_ERROR})
    run.log_evidence("rank_error", "r0", {"rank": 0, "time": T0 + 4, "traceback": _missing_shard(0, 0)})
    run.finish("failed", exit_code=1)
    top = _diagnose(run)["findings"][0]
    assert top["culprit"]["rank"] == 1 and "alike" not in top["culprit"], top
    assert top["summary"].startswith("rank 1 failed first: ValueError: shard 7 has 0 rows")


@pytest.mark.parametrize(("exit_code", "signal", "category"), [(1, None, "code_error"), (None, 9, "killed_by_signal")])
def test_a_rank_that_died_silently_is_the_culprit(
    home: Path, exit_code: int | None, signal: int | None, category: str
) -> None:
    run = _run(home)
    run.log_evidence(
        "rank_error",
        "r0",
        {"rank": 0, "time": T0 + 2, "traceback": "RuntimeError: [pair.cc:553] Connection closed by peer"},
    )
    run.log_evidence(
        "launcher_exits",
        "attempt 1",
        {"ranks": [{"rank": 0, "exit_code": 1}, {"rank": 1, "exit_code": exit_code, "signal": signal}]},
    )
    run.finish("failed", exit_code=1)
    top = _diagnose(run)["findings"][0]
    assert top["culprit"]["rank"] == 1 and top["category"] == category, top
    assert top["victims"][0]["rank"] == 0 and "Connection closed by peer" in top["victims"][0]["error"]


@pytest.mark.parametrize(
    "stopped",
    [{"exit_code": 143, "signal": 15}, {"exit_code": 143}, {"exit_code": -15}],
    ids=["signal-and-code", "shell-code", "python-code"],
)
def test_a_rank_its_launcher_stopped_before_it_said_it_waited_is_no_culprit(
    home: Path, stopped: dict[str, Any]
) -> None:
    """Rank 1 exited; its launcher stopped rank 0 (SIGTERM) before rank 0 reported waiting, so no
    rank has a victim's message (issue 28). However rank 0's SIGTERM is written — the signal with
    ``flightlog run``'s 128 + 15, or an exit code alone — rank 1 is the culprit."""
    run = _run(home)
    run.log_evidence("launcher_exits", "attempt 1", {"ranks": [{"rank": 0, **stopped}, {"rank": 1, "exit_code": 1}]})
    run.finish("failed", exit_code=1)
    report = _diagnose(run)
    top = report["findings"][0]
    assert top["culprit"]["rank"] == 1 and top["category"] == "code_error", report
    assert top["summary"].startswith("rank 1 exited with code 1 first"), top["summary"]
    assert [v["rank"] for v in top["victims"]] == [0]


def test_without_a_recorder_the_stalled_rank_outside_torch_distributed_is_the_culprit(home: Path) -> None:
    run = _run(home)
    _stall(run, 0, T0, T0 + 10)
    run.log_evidence("stacks", "r0", _stacks(0, IN_ALL_REDUCE, T0 + 10))
    _stall(run, 1, T0, T0 + 10)
    run.log_evidence("stacks", "r1", {**_stacks(1, IN_READ_SHARD, T0 + 10), "source": "faulthandler"})
    run.finish("failed", exit_code=1)
    top = _diagnose(run)["findings"][0]
    assert (
        top["category"] == "hang"
        and top["culprit"]["rank"] == 1
        and top["culprit"]["where"]["function"] == "read_shard"
    )


def test_a_stall_that_resolved_in_a_successful_run_is_a_hint_at_most(home: Path) -> None:
    run = _run(home)
    for rank, last in ((0, 40), (1, 39)):
        _stall(run, rank, T0, T0 + 70)
        _fr(run, rank, _entries(last), T0 + 70)
        _stall(run, rank, T0, T0 + 80, state="resumed")
    run.finish("succeeded")
    report = _diagnose(run)
    assert not [f for f in report["findings"] if f["confidence"] >= 0.5], report
    assert report["kind"] == "none"


def _sample(run: flightlog.Run, rank: int, times: list[float], stages: dict[str, Any] | None = None) -> None:
    data: dict[str, Any] = {
        "rank": rank,
        "host": f"node{rank}",
        "time": times[-1],
        "collectives": {
            "default_pg": {"seq": list(range(1, len(times) + 1)), "time": times, "op": ["all_reduce"] * len(times)}
        },
    }
    if stages:
        data["stages"] = stages
    run.log_evidence("collectives", f"rank{rank}", data)


def test_the_rank_that_enters_every_collective_late_is_a_straggler(home: Path) -> None:
    run = _run(home)
    rng = random.Random(1)
    base = [T0 + 0.5 * i for i in range(40)]
    _sample(run, 0, [t + rng.uniform(0, 0.002) for t in base], {"data_loading": {"count": 40, "total": 0.4}})
    _sample(
        run,
        1,
        [t + (0.3 if i >= 10 else 0.0) + rng.uniform(0, 0.002) for i, t in enumerate(base)],
        {"data_loading": {"count": 40, "total": 9.4}},
    )
    _sample(run, 2, [t + rng.uniform(0, 0.002) for t in base], {"data_loading": {"count": 40, "total": 0.5}})
    run.finish("succeeded")
    report = _diagnose(run)
    (finding,) = [f for f in report["findings"] if f["category"] == "straggler"]
    assert finding["confidence"] >= 0.5 and finding["rank"] == 1
    assert finding["straggler"]["onset"]["seq"] == 11
    assert "its data_loading stage takes" in finding["summary"]


def test_a_healthy_job_has_no_straggler(home: Path) -> None:
    run = _run(home)
    rng = random.Random(2)
    base = [T0 + 0.2 * i for i in range(60)]
    for rank in range(3):
        _sample(run, rank, [t + rng.uniform(0, 0.01) for t in base])
    run.finish("succeeded")
    report = _diagnose(run)
    assert not [f for f in report["findings"] if f["category"] == "straggler"], report


def test_a_rank_that_left_no_record_while_the_others_only_waited_is_a_hint(home: Path) -> None:
    run = _run(home)
    run.log_evidence(
        "rank_error",
        "r0",
        {
            "rank": 0,
            "world_size": 2,
            "time": T0 + 2,
            "traceback": "RuntimeError: [pair.cc:553] Connection closed by peer",
        },
    )
    run.finish("failed", exit_code=1)
    report = _diagnose(run)
    (finding,) = [f for f in report["findings"] if f.get("culprit")]
    assert finding["culprit"]["rank"] == 1 and finding["confidence"] < 0.5
    assert "rank 1 left no record" in finding["summary"]


# torchrun's summary of the coordinator's scenario: rank 0 timed out waiting (the "root cause"
# torchrun saw first), rank 1 — stuck in its data read — was then torn down with SIGTERM
_TORN_DOWN = {
    "launcher": "torchrun",
    "reported_root_cause": 0,
    "first_error_rank": 0,
    "ranks": [
        {"rank": 0, "exit_code": 1, "signal": None, "root_cause": True, "victim": True,
         "error": "RuntimeError: [../gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 8000ms for recv "
         "operation to complete", "error_at": T0 + 12},
        {"rank": 1, "exit_code": None, "signal": 15, "root_cause": False,
         "error": "Signal 15 (SIGTERM) received by PID 27632"},
    ],
}  # fmt: skip


def test_a_rank_its_launcher_stopped_while_the_others_waited_was_stuck_not_terminated(home: Path) -> None:
    run = _run(home)
    run.log_evidence("rank_error", "r0", {"rank": 0, "time": T0 + 12, "traceback": GLOO_TIMEOUT})
    run.log_evidence("launcher_exits", "attempt 1", _TORN_DOWN)
    run.finish("failed", exit_code=1)
    report = _diagnose(run)
    top = report["findings"][0]
    assert top["category"] == "hang" and top["confidence"] >= 0.5, report
    assert top["culprit"]["rank"] == 1 and [v["rank"] for v in top["victims"]] == [0]
    assert top["summary"].startswith("rank 1 was stuck: it never reached the collective the others waited in")
    # torchrun's "Signal 15 (SIGTERM) received by PID …" is the rank's end, never its error or a cause
    assert not any(f["category"] == "killed_by_signal" and f["confidence"] >= 0.3 for f in report["findings"])
    assert "received by PID" not in str(top["evidence"])


def test_a_stopped_rank_written_as_flightlog_run_writes_it_was_stuck_too(home: Path) -> None:
    """The same job as ``flightlog run`` records it: rank 1's end is signal 15 *and* exit code 143
    (issue 28). Read by its exit code, it was a silent exit ("rank 1 stopped making progress"),
    not the rank its launcher stopped while it was stuck."""
    run = _run(home)
    run.log_evidence("rank_error", "r0", {"rank": 0, "time": T0 + 12, "traceback": GLOO_TIMEOUT})
    ranks = [{**r, "exit_code": 143} if r["rank"] == 1 else r for r in _TORN_DOWN["ranks"]]
    run.log_evidence("launcher_exits", "attempt 1", {**_TORN_DOWN, "ranks": ranks})
    run.finish("failed", exit_code=1)
    report = _diagnose(run)
    top = report["findings"][0]
    assert top["category"] == "hang" and top["culprit"]["rank"] == 1, report
    assert top["summary"].startswith("rank 1 was stuck: it never reached the collective the others waited in")


def test_with_its_stacks_and_recorder_the_stopped_rank_is_named_with_its_collective_and_line(home: Path) -> None:
    run = _run(home)
    _stall(run, 1, T0 + 3.5, T0 + 7.5)
    _fr(run, 1, _entries(3, in_flight=False), T0 + 7.5)
    run.log_evidence("stacks", "rank1", _stacks(1, IN_READ_SHARD, T0 + 7.5))
    _stall(run, 0, T0 + 4, T0 + 8)
    _fr(run, 0, _entries(4), T0 + 8)
    run.log_evidence("rank_error", "r0", {"rank": 0, "time": T0 + 12, "traceback": GLOO_TIMEOUT})
    run.log_evidence("launcher_exits", "attempt 1", _TORN_DOWN)
    run.finish("failed", exit_code=1)
    top = _diagnose(run)["findings"][0]
    assert top["category"] == "hang" and top["confidence"] >= 0.8, top
    assert top["culprit"]["collective"] == {"op": "all_reduce", "seq": 4}
    assert top["culprit"]["where"] == {"file": "/job/data.py", "line": 88, "function": "read_shard"}
    assert "rank 1 was then stopped by its launcher (SIGTERM)" in top["summary"]


def test_a_job_stopped_from_outside_is_no_hang_of_one_rank(home: Path) -> None:
    """Every rank SIGTERMed (the launcher itself was stopped) and none waited: nothing points at a rank."""
    run = _run(home)
    run.log_evidence(
        "launcher_exits",
        "attempt 1",
        {"launcher": "torchrun", "ranks": [{"rank": 0, "signal": 15}, {"rank": 1, "signal": 15}]},
    )
    run.finish("killed", signal=15)
    report = _diagnose(run)
    assert not any(f["category"] == "hang" for f in report["findings"]), report


# ── what killed a culprit that was killed: the run's memory at its end (issue 29) ──────────────

_PEER_CLOSED = "RuntimeError: [pair.cc:553] Connection closed by peer"
_AT_LIMIT = "memory was at 1.9 GiB, 98% of the 2.0 GiB limit, in the last samples before the rank was killed"


@pytest.mark.parametrize(
    ("end", "memory", "category"),
    [
        # the store knows the rank only as lost (no launcher's summary: the SDK alone); the run's
        # memory at the limit says the OOM killer's, as for a process of its own that vanished
        ({"lost": True}, {"share": 0.98, "detail": _AT_LIMIT}, "oom_killed"),
        ({"lost": True}, {"share": 0.3, "detail": "memory was at 30% of its limit"}, "killed_by_signal"),
        ({"lost": True}, {"oom_killed": True}, "oom_killed"),
        # Python's subprocess reports a child killed by SIGKILL as -9
        ({"exit_code": -9}, {"share": 0.98, "detail": _AT_LIMIT}, "oom_killed"),
        ({"exit_code": -9}, {}, "killed_by_signal"),
        ({"signal": 9}, {"share": 0.98, "detail": _AT_LIMIT}, "oom_killed"),
        ({"signal": 9}, {"oom_killed": True, "share": 0.3, "detail": "memory was at 30% of its limit"}, "oom_killed"),
        ({"exit_code": 137}, {"oom_killed": True}, "oom_killed"),
        # the run's OOM record is the whole tree's: it says nothing of a rank that exited by itself
        ({"exit_code": 1}, {"oom_killed": True, "share": 0.98, "detail": _AT_LIMIT}, "code_error"),
    ],
)
def test_a_killed_culprit_is_read_against_the_run_s_memory_at_its_end(
    end: dict[str, Any], memory: dict[str, Any], category: str
) -> None:
    """``judge`` with the run's memory at its end: rank 0 failed waiting, rank 1 ended without an
    error of its own — how it ended and the run's OOM record and memory samples say why."""
    from flightlog.diagnose.culprit import MemoryAtTheEnd, judge
    from flightlog.diagnose.ranks import RankError, RankFacts

    ranks = {
        0: RankFacts(0, exit_code=1, errors=[RankError(T0 + 2, _PEER_CLOSED, "logs")]),
        1: RankFacts(1, **end),
    }
    verdict = judge(ranks, live=False, now=T0 + 10, memory=MemoryAtTheEnd(**memory))
    assert verdict is not None and verdict.culprit == 1
    assert verdict.category == category, verdict.signals
    assert verdict.confidence >= 0.4


# ── where a rank was at its end: stacks still current, else its traceback (issue 28) ───────────

IN_IMPORT = [("/job/train.py", 17, "<module>"), ("<frozen importlib._bootstrap>", 1176, "_find_and_load")]


def _slow_import(run: flightlog.Run, rank: int) -> None:
    """A stall while ``import torch`` was slow under load, its stacks, and its end: the rank ran on."""
    _stall(run, rank, T0, T0 + 3)
    run.log_evidence("stacks", f"rank{rank}-import", _stacks(rank, IN_IMPORT, T0 + 3))
    _stall(run, rank, T0, T0 + 4.5, state="resumed")


#: the launcher's exits: rank 1 exited with code 1, then rank 0 was stopped (SIGTERM, as 143 too)
_RANK_1_EXITED_RANK_0_STOPPED = {"ranks": [{"rank": 0, "exit_code": 143, "signal": 15}, {"rank": 1, "exit_code": 1}]}


def test_a_stall_that_resolved_before_the_rank_exited_is_not_where_it_ended(home: Path) -> None:
    """Rank 1 imported torch slowly (a stall, its stacks in ``<module>``), ran on, then exited with
    code 1 without a word; its launcher stopped rank 0. The culprit is rank 1, and its "where" is
    not the import it had long left: it was quoted as "rank 1 was in <module> at train.py:17"."""
    run = _run(home)
    for rank in (0, 1):
        _slow_import(run, rank)
    run.log_evidence("rank_error", "r0", {"rank": 0, "time": T0 + 12, "traceback": _PEER_CLOSED})
    run.log_evidence("launcher_exits", "attempt 1", _RANK_1_EXITED_RANK_0_STOPPED)
    run.finish("failed", exit_code=1)
    top = _diagnose(run)["findings"][0]
    assert top["culprit"]["rank"] == 1 and top["category"] == "code_error", top
    assert top["culprit"]["where"] is None, top["culprit"]
    assert "<module>" not in top["summary"] and "train.py" not in str(top["next_steps"]), top


def test_a_stopped_rank_whose_only_stall_had_resolved_has_no_where(home: Path) -> None:
    """Rank 1 was stuck (its launcher stopped it while rank 0 waited) somewhere its watch had not
    yet recorded; its only stacks are of a slow import it had left: where it was is unknown."""
    run = _run(home)
    _slow_import(run, 1)
    run.log_evidence("rank_error", "r0", {"rank": 0, "time": T0 + 12, "traceback": GLOO_TIMEOUT})
    run.log_evidence("launcher_exits", "attempt 1", _TORN_DOWN)
    run.finish("failed", exit_code=1)
    top = _diagnose(run)["findings"][0]
    assert top["category"] == "hang" and top["culprit"]["rank"] == 1, top
    assert top["culprit"]["where"] is None, top["culprit"]
    assert "<module>" not in top["summary"], top["summary"]


def test_past_a_resolved_stall_a_rank_s_where_is_its_traceback(home: Path) -> None:
    """Rank 1 never entered all_reduce #4 and failed with a timeout of its own waiting elsewhere:
    its "where" is its traceback's line, not the slow import it had resolved long before."""
    run = _run(home)
    for rank in (0, 1):
        _slow_import(run, rank)
    _fr(run, 0, _entries(4, t=T0 + 5), T0 + 10)
    _fr(run, 1, _entries(3, in_flight=False, t=T0 + 5), T0 + 10)
    run.log_evidence("rank_error", "r1", {"rank": 1, "time": T0 + 12, "traceback": GLOO_TIMEOUT})
    run.log_evidence("launcher_exits", "attempt 1", _RANK_1_EXITED_RANK_0_STOPPED)
    run.finish("failed", exit_code=1)
    top = _diagnose(run)["findings"][0]
    assert top["culprit"]["rank"] == 1 and top["culprit"]["collective"] == {"op": "all_reduce", "seq": 4}, top
    assert top["culprit"]["where"] == {"file": "/job/train.py", "line": 14, "function": "main"}, top["culprit"]


@pytest.mark.parametrize(
    "progress",
    [{}, {"last_step_at": T0 + 8}, {"samples": [{"time": T0 + 9, "collectives": {"default_pg": {"time": [T0 + 9]}}}]}],
    ids=["none", "a-step", "a-collective"],
)
def test_a_rank_s_stacks_say_where_it_ended_only_without_progress_after_them(progress: dict[str, Any]) -> None:
    """``judge`` on rank 1 that stalled in read_shard (its watch never said it resumed: it ended
    first), then exited: after a step or a collective logged later, its stacks are no longer where
    it was."""
    from flightlog.diagnose.culprit import judge
    from flightlog.diagnose.ranks import RankError, RankFacts

    stall = {"rank": 1, "state": "stalled", "since": T0 + 1, "time": T0 + 5}
    ranks = {
        0: RankFacts(0, exit_code=1, errors=[RankError(T0 + 12, _PEER_CLOSED, "logs")]),
        1: RankFacts(
            1, exit_code=1, exited_at=T0 + 10, stalls=[stall], stacks=[_stacks(1, IN_READ_SHARD, T0 + 5)], **progress
        ),
    }
    verdict = judge(ranks, live=False, now=T0 + 20)
    assert verdict is not None and verdict.culprit == 1
    expected = None if progress else {"file": "/job/data.py", "line": 88, "function": "read_shard", "code": None}
    assert verdict.where == expected, verdict


def test_a_rank_that_finished_while_the_others_still_waited_left_the_job_early() -> None:
    """``judge``: rank 1 ended well (exit 0, by its own record or its launcher's) while rank 0
    failed in a collective ("Connection closed by peer"): rank 1 left before a collective rank 0
    entered (a shorter shard, an early return) — the culprit, not a rank that merely succeeded
    (issue 28: no culprit was named, and the victim's message led as service_unavailable)."""
    from flightlog.diagnose.culprit import judge
    from flightlog.diagnose.ranks import RankError, RankFacts

    ranks = {
        0: RankFacts(0, exit_code=1, errors=[RankError(T0 + 12, _PEER_CLOSED, "logs")]),
        1: RankFacts(1, exited_at=T0 + 11, succeeded=True),
    }
    verdict = judge(ranks, live=False, now=T0 + 20)
    assert verdict is not None and verdict.culprit == 1 and verdict.rule == "left_early", verdict
    assert verdict.category == "code_error" and verdict.confidence >= 0.5
    assert [v["rank"] for v in verdict.victims] == [0]
    # a rank that finished while the other failed with an error of its own is no culprit
    ranks[0].errors = [RankError(T0 + 12, OWN_ERROR, "logs")]
    verdict = judge(ranks, live=False, now=T0 + 20)
    assert verdict is not None and verdict.culprit == 0, verdict


_PEER_RESET = (
    "Traceback (most recent call last):\n"
    '  File "/job/train.py", line 14, in main\n'
    "    dist.all_reduce(x)\n"
    "RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:5535. This is "
    "typically caused by a remote worker crashing. Check the logs of the remote worker before reporting an error."
)


@pytest.mark.parametrize("unseen", [True, False], ids=["a-rank-never-seen", "no-rank-evidence"])
def test_without_a_culprit_a_rank_that_only_waited_is_no_cause(home: Path, unseen: bool) -> None:
    """Rank 0 failed in its all_reduce because its peer went away ("Connection closed by peer"),
    and nothing names the culprit (rank 1 left no record: another node, no flightlog.init()). The
    run's last traceback is that victim's: its rules read "a service the run depends on was
    unreachable" at 0.89 (issue 28). In a run tagged distributed (its ranks or its runner saw
    ranks) it is a hint at most, said as what it is."""
    run = flightlog.init(project="dist", resources=False, tags={"distributed": "torchrun"})
    if unseen:
        run.log_evidence("rank_error", "r0", {"rank": 0, "world_size": 2, "time": T0 + 2, "traceback": _PEER_RESET})
    run.log_event(_PEER_RESET, level="error")
    run.finish("failed", exit_code=1)
    report = _diagnose(run)
    assert not [f for f in report["findings"] if f["confidence"] >= 0.5], report
    (waited,) = [f for f in report["findings"] if f["category"] == "service_unavailable"]
    assert "what a rank says when it only waited for another one" in waited["summary"], waited


def test_a_run_no_rank_tagged_keeps_its_reading_of_a_peer_that_went_away(home: Path) -> None:
    """The same text in a run that is not tagged distributed — a process that printed a launcher's
    words, no rank flightlog saw — is read as before: the demotion is for runs with ranks."""
    run = flightlog.init(project="dist", resources=False)
    run.log_event(_PEER_RESET, level="error")
    run.finish("failed", exit_code=1)
    top = _diagnose(run)["findings"][0]
    assert top["category"] == "service_unavailable" and top["confidence"] >= 0.5, top
    assert "only waited for another one" not in top["summary"]
