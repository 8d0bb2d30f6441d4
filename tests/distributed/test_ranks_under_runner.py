"""Plain torchrun scripts (no ``flightlog.init()``) under ``flightlog run``: the culprit rank is
named while it hangs (test_hangs.py's (a)), after it raised ((d)), and a healthy job has no
finding ((g)); and the runner speaks for each rank it sees its launcher start (runner/ranks.py),
so ``flightlog ranks``, ``logs --rank``, ``runs show`` and the ranks' API work as they do for
ranks with the SDK; a rank with the SDK under the runner is still one rank, not two.

One job per scenario, shared by the tests that read it (module fixtures, on the embedded
store; test_hangs.py runs one job of each kind through a server): what a test looks at while
the job hangs is taken then, before the job is let go.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.distributed.test_hangs import _STARTED, EMBEDDED, FLIGHTLOG, JOB, TORCHRUN, Job, _leads, _line_of, _stop
from tests.helpers import child_env

pytestmark = pytest.mark.skipif(not TORCHRUN.exists(), reason="torchrun")


@pytest.fixture(autouse=True)
def _no_job_left_behind() -> Any:
    yield
    while _STARTED:
        _stop(_STARTED.pop())


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(FLIGHTLOG), *args], env=child_env(home), capture_output=True, text=True, timeout=60)


def _ranks(home: Path, run_id: str) -> list[dict[str, Any]]:
    done = _cli(home, "ranks", run_id, "--format", "json")
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


# ── the shared jobs ────────────────────────────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def _isolated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """What the ``home`` fixture does for one test, for the module's shared jobs: no FLIGHTLOG_
    variable of this process reaches them or the CLI that reads them (each job has its own home),
    and the working directory is a fresh one."""
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith("FLIGHTLOG_")]:
            mp.delenv(name)
        mp.setenv("FLIGHTLOG_CONSOLE", "off")
        mp.chdir(tmp_path_factory.mktemp("cwd"))
        yield


@dataclass
class Ended:
    """A shared job, run to its end."""

    job: Job
    code: int
    err: str

    @property
    def home(self) -> Path:
        return self.job.home


def _run_to_end(tmp_path_factory: pytest.TempPathFactory, scenario: str, **options: Any) -> Ended:
    tmp = tmp_path_factory.mktemp(scenario)
    job = Job(tmp / "home", tmp, scenario, **options)
    try:
        code, err = job.finish()
    finally:
        job.stop()
    return Ended(job, code, err)


@pytest.fixture(scope="module")
def raised(_isolated: None, tmp_path_factory: pytest.TempPathFactory) -> Ended:
    """Rank 1 of three raises in its fourth step; the others wait in the collective."""
    return _run_to_end(tmp_path_factory, "raises", ranks=3, GROUP_TIMEOUT="60")


@pytest.fixture(scope="module")
def healthy(_isolated: None, tmp_path_factory: pytest.TempPathFactory) -> Ended:
    return _run_to_end(tmp_path_factory, "healthy", STEPS="10", FLIGHTLOG_COLLECTIVE_SAMPLE="1")


@dataclass
class Hung(Ended):
    """The stuck job: what was seen while rank 1 hung, then its end once it was let go."""

    status: str  # the run's
    rank_errors: list[dict[str, Any]]
    report: dict[str, Any]  # the diagnosis
    warnings: list[Any]  # flightlog's warning events
    states: dict[int, str]  # rank → state, the ranks' table
    stacks: subprocess.CompletedProcess[str]  # flightlog ranks RUN --stacks
    stacks_doc: list[dict[str, Any]]  # the same, --format json


def _in_read_shard(job: Job) -> bool:
    latest = job.evidence("stacks", rank=1)[-1:]
    return bool(latest) and "read_shard" in json.dumps(latest[0]["data"]["threads"])


@pytest.fixture(scope="module")
def stuck(_isolated: None, tmp_path_factory: pytest.TempPathFactory) -> Hung:
    """Rank 1 of three stops in read_shard before all_reduce #4 until the job's ``release``
    file appears; the group's timeout (300 s) never fires."""
    tmp = tmp_path_factory.mktemp("stuck")
    job = Job(tmp / "home", tmp, "stuck", ranks=3, GROUP_TIMEOUT="300")
    try:
        try:
            run_id = job.run_id()
            job.wait_for("rank 1 stalled", lambda: job.evidence("stall", rank=1))
            job.wait_for(
                "every rank's Flight Recorder",
                lambda: {e["data"]["rank"] for e in job.evidence("flight_recorder")} >= {0, 1, 2},
            )
            job.wait_for("rank 1's stacks in read_shard", lambda: _in_read_shard(job))
            # its own stall follows (the stacks may have come first, asked for when rank 0 stalled)
            states = job.wait_for(
                "rank 1 reads hung",
                lambda: (found := {r.rank: r.state for r in job.client.ranks(run_id)}).get(1) == "hung" and found,
            )
            status = job.client.run(run_id).status
            rank_errors = job.evidence("rank_error")
            report = job.diagnose()
            warnings = job.client.logs(run_id, level="warning", component="flightlog")
            stacks = _cli(job.home, "ranks", run_id, "--stacks")
            stacks_doc = json.loads(_cli(job.home, "ranks", run_id, "--stacks", "--format", "json").stdout)
        finally:
            (job.signals / "release").write_text("go")
        code, err = job.finish()
    finally:
        job.stop()
    return Hung(job, code, err, status, rank_errors, report, warnings, states, stacks, stacks_doc)


# ── (a) a rank stuck before a collective, found while it hangs ─────────────────────────────────


def test_a_stuck_rank_is_named_while_it_hangs_before_any_timeout(stuck: Hung) -> None:
    assert stuck.status == "running"
    assert not stuck.rank_errors  # no timeout has fired: the ranks still wait
    report = stuck.report
    top = report["findings"][0]
    assert top["category"] == "hang" and top["confidence"] >= 0.8, report
    culprit = top["culprit"]
    assert culprit["rank"] == 1 and culprit["collective"] == {"op": "all_reduce", "seq": 4}
    assert culprit["where"]["file"] == str(JOB) and culprit["where"]["function"] == "read_shard"
    loop = _line_of('while not (SIGNALS / "release").exists()')
    assert culprit["where"]["line"] in (loop, loop + 1)  # the loop, or the sleep inside it
    assert [v["rank"] for v in top["victims"]] == [0, 2]
    assert top["summary"].startswith("rank 1 never entered all_reduce #4 and has made no progress for")
    assert "ranks 0 and 2 have waited" in top["summary"] and "rank 1 is in read_shard at job.py:" in top["summary"]
    assert any(e.rank == 1 and "no progress for" in e.message for e in stuck.warnings)
    assert stuck.code == 0, stuck.err
    assert "flightlog: rank 1: no progress for" in stuck.err
    # once it went on and the job succeeded, no hang is left to report
    assert not _leads(stuck.job.diagnose())


def test_a_stuck_plain_rank_reads_hung_while_it_hangs_and_its_stacks_are_one_command_away(stuck: Hung) -> None:
    assert stuck.states[0] in ("running", "hung"), stuck.states
    assert "in read_shard" in stuck.stacks.stdout and "rank 1" in stuck.stacks.stdout, stuck.stacks.stdout
    assert stuck.stacks_doc[1]["hang_evidence"]["stall"]["state"] == "stalled"
    assert stuck.code == 0, stuck.err
    assert {r["state"] for r in _ranks(stuck.home, stuck.job.run_id())} == {"succeeded"}


# ── (d) a rank that raises while the others wait ───────────────────────────────────────────────


def test_a_rank_s_exception_is_the_finding_and_the_others_are_its_victims(raised: Ended) -> None:
    assert raised.code == 1, raised.err
    report = raised.job.diagnose()
    leads = _leads(report)
    assert len(leads) == 1, report
    top = leads[0]
    assert top["category"] in ("code_error", "data_error") and top["culprit"]["rank"] == 1
    assert top["summary"].startswith("rank 1 failed first: ValueError: shard 7 has 0 rows (rank 1)")
    assert top["culprit"]["where"]["function"] == "read_shard"
    assert [v["rank"] for v in top["victims"]] == [0, 2]
    assert all("ValueError" not in (v["error"] or "") for v in top["victims"])


def test_a_plain_script_s_ranks_are_listed_with_their_ends_and_first_errors(raised: Ended) -> None:
    assert raised.code == 1, raised.err
    home, run_id = raised.home, raised.job.run_id()
    ranks = {r["rank"]: r for r in _ranks(home, run_id)}
    assert sorted(ranks) == [0, 1, 2]
    assert all(r["world_size"] == 3 and r["launcher"] == "torchrun" and r["pid"] for r in ranks.values())
    one = ranks[1]
    assert one["state"] == "failed" and one["exit_code"] == 1, one
    assert one["first_error"]["message"] == "ValueError: shard 7 has 0 rows (rank 1)"
    assert one["writer"].startswith("observed-") and one["last_heartbeat"] is not None
    # the others failed waiting for it, or torchrun stopped them (SIGTERM): never "running" after the end
    assert all(ranks[r]["state"] in ("failed", "killed") for r in (0, 2)), ranks
    text = _cli(home, "ranks", run_id).stdout
    assert "ValueError: shard 7 has 0 rows (rank 1)" in text
    # the rank's own output, by rank
    logs = _cli(home, "logs", run_id, "--rank", "1")
    assert logs.returncode == 0 and "ValueError: shard 7 has 0 rows (rank 1)" in logs.stdout, logs.stderr
    # runs show has the ranks at a glance, the run's failure is the culprit's
    show = " ".join(_cli(home, "runs", "show", run_id).stdout.split())
    # the culprit leads; rank 0 may fail too (its collective gave up) or be stopped, like rank 2
    assert "ranks 3 (torchrun): rank 1 failed (exit 1), the culprit; " in show, show
    assert "looks like" in raised.err and "on rank 1" in raised.err
    doc = json.loads(_cli(home, "runs", "show", run_id, "--format", "json").stdout)
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2]
    assert doc["failure"]["culprit"]["rank"] == 1
    assert doc["tags"]["distributed"] == "torchrun"


# ── (g) a healthy job ──────────────────────────────────────────────────────────────────────────


def test_a_healthy_job_has_no_finding(healthy: Ended) -> None:
    assert healthy.code == 0, healthy.err
    report = healthy.job.diagnose()
    assert not _leads(report) and report["kind"] == "none", report


def test_a_healthy_plain_script_s_ranks_all_succeeded(healthy: Ended) -> None:
    assert healthy.code == 0, healthy.err
    ranks = _ranks(healthy.home, healthy.job.run_id())
    assert [(r["rank"], r["state"], r["exit_code"]) for r in ranks] == [(0, "succeeded", 0), (1, "succeeded", 0)]
    assert all(r["first_error"] is None for r in ranks)
    show = " ".join(_cli(healthy.home, "runs", "show", healthy.job.run_id()).stdout.split())
    assert "ranks 2 (torchrun): all succeeded" in show


# ── a rank with the SDK under the runner ───────────────────────────────────────────────────────


@EMBEDDED
def test_a_rank_with_the_sdk_under_flightlog_run_is_one_rank_with_its_steps(home: Path, tmp_path: Path) -> None:
    job = Job(home, tmp_path, "raises", USE_SDK="1", GROUP_TIMEOUT="60")
    code, err = job.finish()
    assert code != 0
    ranks = _ranks(home, job.run_id())
    assert [r["rank"] for r in ranks] == [0, 1], ranks  # the SDK's row and the runner's are one
    one = ranks[1]
    assert not one["writer"].startswith("observed-")  # the rank's own account first
    assert one["last_step"] == 2 and one["state"] == "failed"
    assert "ValueError: shard 7 has 0 rows (rank 1)" in one["first_error"]["message"]
    logs = job.client.logs(job.run_id(), component="flightlog.ranks")
    assert not [e for e in logs if "claimed twice" in e.message]  # no false "two jobs" notice
