"""The ranks of a run in every store (embedded, through a server, PostgreSQL), from the records
the ranks' writers send: their rows, heartbeats, last steps, ends and first errors; the end of a
run of peer ranks derived from theirs; bad input kept and said on the run; replays change nothing."""

from __future__ import annotations

import time
from array import array
from pathlib import Path
from typing import Any

import pytest

import flightlog
from flightlog.errors import NotFound
from flightlog.logevents import LogBatch
from flightlog.schema import record
from flightlog.schema.values import encode_series, log_chunk_payload

RUN = "a" * 32
T0 = time.time() - 60


class Rank:
    """One rank's writer, forming records as the SDK's does (sequence numbers from 1)."""

    def __init__(self, rank: int | None, *, writer: str | None = None, world: int = 2, restart: int = 0, **more: Any):
        self.rank, self.world, self.restart = rank, world, restart
        self.w = writer or f"w{rank}r{restart}"
        self.seq = 0
        self.more = more

    def rec(self, kind: str, t: float, **payload: Any) -> dict[str, Any]:
        self.seq += 1
        return record(kind, r=RUN, w=self.w, s=self.seq, t=t, **payload)

    def join(self, t: float, *, peer: bool = True, pid: int = 0) -> list[dict[str, Any]]:
        fields = dict(
            host="node-a",
            pid=pid or 1000 + (self.rank or 0) + 100 * self.restart,
            owner=False,
            attempt=self.restart + 1,
            rank=self.rank,
            local_rank=self.rank,
            world_size=self.world,
            node_rank=0,
            local_world_size=self.world,
            restart=self.restart,
            launcher="torchrun",
        )
        fields.update({"job": "torchrun:job-1", **self.more})
        if peer:
            fields["peer"] = True
        out = [self.rec("writer", t, **fields)]
        if peer:
            out.append(
                self.rec(
                    "run",
                    t,
                    project="dist",
                    status="running",
                    started=t,
                    created=t,
                    attempt=self.restart + 1,
                    peer=True,
                    timeline={"process_start": t - 0.5},
                )
            )
        return out

    def metrics(self, t: float, steps: list[int], values: list[float]) -> dict[str, Any]:
        cols = (array("q", steps), array("d", [t] * len(steps)), array("d", values))
        return self.rec("metrics", t, attempt=self.restart + 1, series={"loss": encode_series(*cols)})

    def logs(self, t: float, *events: tuple[int, str, int | None]) -> dict[str, Any]:
        batch = LogBatch()
        for i, (level, message, rank) in enumerate(events):
            batch.append(t + i * 0.01, "stderr", level, message, rank=rank, attempt=self.restart + 1)
        return self.rec("logs", t, **log_chunk_payload(batch))

    def end(self, t: float, status: str, **fields: Any) -> dict[str, Any]:
        return self.rec("writer_end", t, status=status, **fields)


def ingest(*batches: list[dict[str, Any]] | dict[str, Any]) -> None:
    records: list[dict[str, Any]] = []
    for b in batches:
        records.extend(b if isinstance(b, list) else [b])
    result = flightlog.Client().store.ingest(records)
    assert not result.skipped, result.skipped


def notices() -> list[str]:
    return [e.message for e in flightlog.Client().logs(RUN, component="flightlog.ranks")]


TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\nRuntimeError: rank 1 broke'


def test_peer_ranks_make_one_run_that_ends_with_them(home: Path) -> None:
    r0, r1 = Rank(0), Rank(1)
    runner = Rank(None, writer="capture")  # a writer without a rank, whose events name theirs
    ingest(r0.join(T0), r1.join(T0 + 0.2), runner.rec("writer", T0, host="node-a", pid=1))
    ingest(r0.metrics(T0 + 1, [0, 1, 2], [1.0, 0.5, 0.25]), r1.metrics(T0 + 1.2, [0, 1, 2], [2.0, 1.5, 1.25]))
    ingest(runner.logs(T0 + 2, (20, "step 2", 1), (40, TRACEBACK, 1), (40, "later error", 1)))
    client = flightlog.Client()
    run = client.run(RUN)
    assert (run.status, run.project, run.started, run.timeline["first_process_start"]) == (
        "running",
        "dist",
        pytest.approx(T0),
        pytest.approx(T0 - 0.5),
    )
    ranks = client.ranks(RUN)
    assert [(r.rank, r.world_size, r.state, r.last_step, r.host) for r in ranks] == [
        (0, 2, "running", 2, "node-a"),
        (1, 2, "running", 2, "node-a"),
    ]
    assert ranks[1].first_error is not None and ranks[1].first_error["message"] == "RuntimeError: rank 1 broke"
    assert ranks[0].first_error is None and ranks[0].last_heartbeat == pytest.approx(T0 + 1)

    failure = {"exception": "RuntimeError", "message": "rank 1 broke", "frames": []}
    ingest(r1.end(T0 + 3, "failed", end_reason="exception", exit_code=1, failure=failure))
    assert client.run(RUN).status == "running"  # rank 0 has not ended
    ingest(r0.end(T0 + 4, "killed", end_reason="signal", signal=15))
    run = client.run(RUN)
    assert (run.status, run.end_reason, run.exit_code, run.ended) == ("failed", "exception", 1, pytest.approx(T0 + 4))
    assert run.failure is not None and run.failure["rank"] == 1 and run.failure["exception"] == "RuntimeError"
    states = {r.rank: (r.state, r.exit_code, r.signal) for r in client.ranks(RUN)}
    assert states == {0: ("killed", None, 15), 1: ("failed", 1, None)}
    assert notices() == []  # nothing wrong was said


def test_a_lost_rank_ends_the_run_crashed_and_is_said(home: Path) -> None:
    r0, r1 = Rank(0), Rank(1)
    ingest(r0.join(T0), r1.join(T0), r0.metrics(T0 + 1, [0], [1.0]))
    settler = record("writer_lost", r=RUN, w="lost-w1r0", s=1, t=T0 + 5, writer=r1.w, at=T0 + 1.5, reason="pid gone")
    ingest(settler)
    assert flightlog.Client().run(RUN).status == "running"
    ingest(r0.end(T0 + 6, "succeeded", end_reason="exit", exit_code=0))
    run = flightlog.Client().run(RUN)
    assert (run.status, run.end_reason, run.exit_code) == ("crashed", "lost", None)
    lost = flightlog.Client().ranks(RUN)[1]
    assert (lost.state, lost.ended) == ("lost", pytest.approx(T0 + 1.5))
    [said] = notices()
    assert "rank 1" in said and "vanished" in said and "pid gone" in said
    # its own end, arriving late (it was cut off, not dead), wins over the mark
    ingest(r1.end(T0 + 7, "succeeded", end_reason="exit", exit_code=0))
    assert flightlog.Client().run(RUN).status == "succeeded"
    # a replayed batch (a sync, an HTTP retry) changes nothing and says nothing twice
    ingest(settler)
    assert flightlog.Client().run(RUN).status == "succeeded" and len(notices()) == 1


def test_rank_zero_alone_ends_the_run(home: Path) -> None:
    r0 = Rank(0, world=4)
    ingest(r0.join(T0), r0.end(T0 + 1, "succeeded", end_reason="exit", exit_code=0))
    run = flightlog.Client().run(RUN)
    assert (run.status, run.exit_code) == ("succeeded", 0)


def test_two_jobs_claiming_one_rank_are_kept_and_said(home: Path) -> None:
    first, second = Rank(0), Rank(0, writer="other-job", job="torchrun:job-2")
    ingest(first.join(T0), first.metrics(T0 + 1, [0, 1], [1.0, 0.9]))
    ingest(second.join(T0 + 2, pid=5555))
    ranks = flightlog.Client().ranks(RUN)
    assert sorted(r.writer or "" for r in ranks) == sorted([first.w, "other-job"])  # both kept, both shown
    [said] = notices()
    assert "rank 0 of attempt 1 (restart 0) was claimed twice" in said and "5555" in said
    assert "'torchrun:job-1' and 'torchrun:job-2'" in said


def test_different_world_sizes_are_said(home: Path) -> None:
    ingest(Rank(0, world=2).join(T0), Rank(1, world=3).join(T0 + 0.1))
    [said] = notices()
    assert "rank 1" in said and "world size of 3" in said and "report 2" in said


def test_a_rank_that_begins_after_the_run_ended_reopens_it_and_is_said(home: Path) -> None:
    r0, r1 = Rank(0), Rank(1)
    ingest(r0.join(T0), r0.end(T0 + 1, "succeeded", end_reason="exit", exit_code=0))
    assert flightlog.Client().run(RUN).status == "succeeded"
    ingest(r1.join(T0 + 10))  # its process began 9.5 s after the run ended
    assert flightlog.Client().run(RUN).status == "running"
    [said] = notices()
    assert "rank 1" in said and "after it had ended (succeeded" in said
    ingest(r1.end(T0 + 11, "failed", end_reason="exception", exit_code=1))
    assert flightlog.Client().run(RUN).status == "failed"


def test_a_slow_peer_reopens_the_run_quietly(home: Path) -> None:
    r0, r1 = Rank(0), Rank(1)
    ingest(r0.join(T0), r0.end(T0 + 3, "succeeded", end_reason="exit", exit_code=0))
    ingest(r1.join(T0 + 1))  # began before the run ended; its first records only arrived now
    assert flightlog.Client().run(RUN).status == "running" and notices() == []
    ingest(r1.end(T0 + 4, "succeeded", end_reason="exit", exit_code=0))
    assert flightlog.Client().run(RUN).status == "succeeded"


def test_a_launcher_restart_is_the_next_attempt(home: Path) -> None:
    a0, a1 = Rank(0), Rank(1)
    ingest(a0.join(T0), a1.join(T0), a1.end(T0 + 2, "failed", exit_code=1), a0.end(T0 + 3, "killed", signal=15))
    assert flightlog.Client().run(RUN).status == "failed"
    b0, b1 = Rank(0, restart=1), Rank(1, restart=1)
    ingest(b0.join(T0 + 5), b1.join(T0 + 5.1))
    run = flightlog.Client().run(RUN)
    assert (run.status, run.attempt, run.ended, run.exit_code) == ("running", 2, None, None)
    current = flightlog.Client().ranks(RUN)
    assert [(r.rank, r.restart, r.attempt, r.state) for r in current] == [(0, 1, 2, "running"), (1, 1, 2, "running")]
    every = flightlog.Client().ranks(RUN, all_attempts=True)
    assert [(r.attempt, r.rank) for r in every] == [(1, 0), (1, 1), (2, 0), (2, 1)]
    ingest(b0.end(T0 + 8, "succeeded", exit_code=0), b1.end(T0 + 8.5, "succeeded", exit_code=0))
    run = flightlog.Client().run(RUN)
    assert (run.status, run.attempt, run.exit_code) == ("succeeded", 2, 0)
    assert any("attempt 2 of the job began" in n for n in notices())


def test_metrics_logs_and_resources_per_rank(home: Path) -> None:
    r0, r1, loner = Rank(0), Rank(1), Rank(None, writer="runner")
    ingest(r0.join(T0), r1.join(T0), loner.rec("writer", T0, host="node-a", pid=1))
    ingest(r1.metrics(T0 + 1, [0, 1, 2], [2.0, 1.5, 1.25]), r0.metrics(T0 + 1.1, [0, 1, 2], [1.0, 0.5, 0.25]))
    ingest(
        r1.rec(
            "metrics",
            T0 + 1.2,
            attempt=1,
            series={"only1": encode_series(array("q", [5]), array("d", [T0]), array("d", [7.0]))},
        )
    )
    ingest(
        r0.logs(T0 + 2, (20, "hello 0", 0)),
        r1.logs(T0 + 2, (20, "hello 1", 1)),
        r0.rec("resources", T0 + 2, samples=[{"time": T0 + 2, "cpu_percent": 10.0}]),
        r1.rec("resources", T0 + 2, samples=[{"time": T0 + 2.5, "cpu_percent": 90.0}]),
    )
    client = flightlog.Client()
    # one rank's points, never both interleaved: rank 0's unless another is asked for
    assert client.metric_history(RUN, "loss").values.tolist() == [1.0, 0.5, 0.25]
    assert client.metric_history(RUN, "loss", rank=1).values.tolist() == [2.0, 1.5, 1.25]
    assert client.metric_history(RUN, "only1").values.tolist() == [7.0]  # the lowest rank that logged it
    with pytest.raises(NotFound, match="rank 0 .* logged no points of 'only1'; ranks that did: 1"):
        client.metric_history(RUN, "only1", rank=0)
    # the run's summary: every rank's points; `last` is the lowest rank's at the last step
    summary = client.run(RUN).metrics["loss"]
    assert (summary.count, summary.min, summary.max, summary.last) == (6, 0.25, 2.0, 0.25)
    assert [e.message for e in client.logs(RUN, rank=1)] == ["hello 1"]
    assert [s["cpu_percent"] for s in client.resources(RUN, rank=1)] == [90.0]
    assert len(client.resources(RUN)) == 2
    # each rank's own stages (the UI's lane per rank): its spans and totals, never the others'
    hist = [0] * 4
    for rank, took in ((r0, 0.1), (r1, 0.5)):
        ingest(
            rank.rec("spans", T0 + 3, spans=[["data_loading", T0 + 2, T0 + 2 + took, 1, True, None]]),
            rank.rec("stage_stats", T0 + 3, stats={"data_loading": {"count": 1, "total": took, "min": took,
                                                                     "max": took, "hist": hist, "first_start": T0 + 2,
                                                                     "last_end": T0 + 2 + took}}),
        )  # fmt: skip
    [both] = client.stages(RUN)
    assert both.count == 2 and len(both.spans) == 2
    [mine] = client.stages(RUN, rank=1)
    assert (mine.count, mine.total, [s.duration for s in mine.spans]) == (1, pytest.approx(0.5), [pytest.approx(0.5)])
    assert client.stages(RUN, rank=7) == []


def test_a_run_of_one_process_has_no_ranks(home: Path) -> None:
    with flightlog.init(project="p", resources=False) as run:
        run.log({"loss": 1.0})
    client = flightlog.Client()
    assert client.ranks(run.id) == []
    assert client.metric_history(run.id, "loss").values.tolist() == [1.0]
    with pytest.raises(NotFound, match="has no ranks"):
        client.metric_history(run.id, "loss", rank=0)


def test_a_rank_never_reopens_a_run_its_owner_ended(home: Path) -> None:
    owner = Rank(None, writer="owner")
    ingest(
        owner.rec("writer", T0, host="node-a", pid=1, owner=True, attempt=1),
        owner.rec("run", T0, project="dist", status="running", started=T0, created=T0, owner="owner", attempt=1),
        owner.rec("run", T0 + 1, status="succeeded", ended=T0 + 1, end_reason="exit", exit_code=0),
    )
    late = Rank(0)
    ingest(late.join(T0 + 5), late.end(T0 + 6, "failed", exit_code=1))
    run = flightlog.Client().run(RUN)
    assert (run.status, run.exit_code, run.project) == ("succeeded", 0, "dist")  # the owner's, as it was
    assert [r.state for r in flightlog.Client().ranks(RUN)] == ["failed"]  # the rank's own end is kept
    [said] = notices()
    assert "rank 0" in said and "status is its owner's" in said


def test_flightlog_run_s_account_of_a_rank_yields_to_the_rank_s_own_and_fills_what_it_lacks(home: Path) -> None:
    """``flightlog run -- torchrun`` speaks for each rank it sees (runner/ranks.py: writers named
    ``observed-…``): alone, it is the rank's row; beside the rank's own SDK writer (the same
    process), the rank's own row leads and takes from it only the end and first error it lacks."""
    owner = Rank(None, writer="owner")
    ingest(
        owner.rec("writer", T0, host="node-a", pid=1, owner=True, attempt=1),
        owner.rec("run", T0, project="dist", status="running", started=T0, created=T0, owner="owner", attempt=1),
    )
    sdk0 = Rank(0, writer="sdk-rank-0")  # rank 0 called flightlog.init(): its steps are its own
    seen0, seen1 = Rank(0, writer="observed-0"), Rank(1, writer="observed-1")  # the runner's accounts
    ingest(sdk0.join(T0, peer=False), seen0.join(T0, peer=False), seen1.join(T0, peer=False))
    ingest(sdk0.metrics(T0 + 1, [0, 1, 2], [1.0, 0.5, 0.25]))
    client = flightlog.Client()
    ranks = client.ranks(RUN)
    assert [(r.rank, r.writer, r.last_step) for r in ranks] == [(0, "sdk-rank-0", 2), (1, "observed-1", None)]
    # the job fails: torchrun's summary gives each rank's end; rank 0's SDK was killed before it could say
    failure = {"exception": "ValueError", "message": "bad shard", "first_error": {"message": "ValueError: bad shard",
                                                                                  "time": T0 + 2}}  # fmt: skip
    ingest(
        seen1.end(T0 + 3, "failed", end_reason="exit", exit_code=1, failure=failure),
        seen0.end(T0 + 3, "killed", end_reason="signal", exit_code=143, signal=15),
    )
    ranks = client.ranks(RUN)
    assert [(r.rank, r.state, r.exit_code, r.signal) for r in ranks] == [(0, "killed", 143, 15), (1, "failed", 1, None)]
    assert ranks[0].writer == "sdk-rank-0" and ranks[0].last_step == 2
    assert ranks[1].first_error == {"message": "ValueError: bad shard", "time": pytest.approx(T0 + 2)}
    assert not [m for m in notices() if "claimed twice" in m]  # one process, two accounts: no false alarm
    # a rank's own end, where it recorded one, is never replaced by the runner's
    sdk1 = Rank(1, writer="sdk-rank-1")
    ingest(sdk1.join(T0 + 0.1, peer=False), sdk1.end(T0 + 2.5, "failed", end_reason="exception", exit_code=1))
    one = next(r for r in client.ranks(RUN) if r.rank == 1)
    assert (one.writer, one.end_reason, one.first_error) == ("sdk-rank-1", "exception", ranks[1].first_error)
