"""Fail fast, say it once: a token that cannot write the project is refused at init() (and by
`flightlog run` before the workload starts); a server that refuses the first connection makes
the run journal-only at once, with one warning, and never costs the job a wait."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import flightlog
from flightlog.config import Settings
from flightlog.journal import list_journals
from flightlog.server.testing import RunningServer, serve_in_thread
from tests.helpers import SLEEP_LEDGER, child_env, run_script, slept
from tests.server.conftest import FLIGHTLOG, ServerProcess

QUICK_JOB = (
    SLEEP_LEDGER
    + """
import flightlog
run = flightlog.init(project="b", resources=False)
run.log({"loss": 0.5})
run.finish()
print("done", run.id, flush=True)
"""
)


@pytest.fixture
def srv(tmp_path: Path, clean_env: Path) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path / "srv", auth=True) as running:
        yield running


def reader(url: str, token: str | None, home: Path) -> flightlog.Client:
    """A Client of the server at ``url``, whatever this test process's environment says."""
    from flightlog.transport import HttpStore

    settings = Settings.from_env({}, home=home, url=url, token=token, store_uri=url)
    return flightlog.Client.for_lookups(settings, HttpStore(url, token=token, home=home))


def runs_on(server: RunningServer, home: Path) -> list[str]:
    with reader(server.url, server.token("admin"), home) as client:
        return [r.project for r in client.runs(limit=10)]


def no_journal(home: Path) -> bool:
    return not (home / "journal").exists() or not any((home / "journal").iterdir())


@pytest.mark.parametrize(
    ("role", "scope", "said"),
    [
        ("writer", "a", "it is a writer token limited to project 'a'"),
        ("reader", None, "its role is 'reader', which can only read"),
    ],
)
def test_init_raises_at_once_when_the_token_cannot_write_the_project(
    srv: RunningServer, clean_env: Path, tmp_path: Path, role: str, scope: str | None, said: str
) -> None:
    env = child_env(clean_env, FLIGHTLOG_URL=srv.url, FLIGHTLOG_TOKEN=srv.token(role, scope))
    proc = run_script(clean_env, QUICK_JOB, env=env, check=False)
    assert proc.returncode == 1 and "done" not in proc.stdout
    assert slept(proc.stdout) == [], "the job never waited"
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("flightlog.errors.Forbidden: ") and said in error, proc.stderr
    assert "project 'b'" in error and "flightlog token create --role writer --project b" in error
    assert "FLIGHTLOG_MODE=offline" in error and "next try" not in proc.stderr
    assert runs_on(srv, tmp_path / "reader") == [] and no_journal(clean_env)


def test_init_with_a_token_of_the_project_records_as_before(
    srv: RunningServer, clean_env: Path, tmp_path: Path
) -> None:
    env = child_env(clean_env, FLIGHTLOG_QUIET="1", FLIGHTLOG_URL=srv.url, FLIGHTLOG_TOKEN=srv.token("writer", "b"))
    proc = run_script(clean_env, QUICK_JOB, env=env)
    assert proc.stderr == "" and runs_on(srv, tmp_path / "reader") == ["b"]


def test_an_unknown_token_keeps_the_run_in_the_journal_with_one_warning_and_no_retry(
    srv: RunningServer, clean_env: Path, tmp_path: Path
) -> None:
    """A token the server does not know may be a server restored from a backup: the job goes on,
    journal-only, told once; nothing is sent again, and `flightlog sync` with a good token ships it."""
    env = child_env(
        clean_env,
        FLIGHTLOG_QUIET="1",
        FLIGHTLOG_URL=srv.url,
        FLIGHTLOG_TOKEN="flt_000000000000_wrong",
        FLIGHTLOG_FLUSH_INTERVAL="0.05",
    )
    job = QUICK_JOB.replace('run.log({"loss": 0.5})', 'run.log({"loss": 0.5})\nimport time; time.sleep(0.5)')
    proc = run_script(clean_env, job, env=env)
    assert slept(proc.stdout) == [0.5], "the job waited for its own sleep only"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "refuses this token" in lines[0] and "not retried" in lines[0], proc.stderr
    assert "flightlog sync" in lines[0] and "flt_000000000000_wrong" not in proc.stderr
    run_id = proc.stdout.split()[1]
    synced = subprocess.run(
        [FLIGHTLOG, "sync"],
        env={**env, "FLIGHTLOG_TOKEN": srv.token("writer", "b")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert synced.returncode == 0, synced.stderr
    with reader(srv.url, srv.token("admin"), tmp_path / "reader") as client:
        assert client.run(run_id).metrics["loss"].count == 1


def test_flightlog_run_refuses_to_start_the_workload_for_a_token_of_another_project(
    srv: RunningServer, clean_env: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "the-workload-ran"
    env = child_env(clean_env, FLIGHTLOG_URL=srv.url, FLIGHTLOG_TOKEN=srv.token("writer", "a"))
    proc = subprocess.run(
        [FLIGHTLOG, "run", "--project", "b", "--", sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("error: the server at ") and "limited to project 'a'" in proc.stderr
    assert "started" not in proc.stderr and not marker.exists()
    assert runs_on(srv, tmp_path / "reader") == [] and no_journal(clean_env)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_first_connection_is_journal_only_at_once_with_one_warning_and_sync_ships_it(
    srv: RunningServer, clean_env: Path, tmp_path: Path
) -> None:
    down = f"http://127.0.0.1:{closed_port()}"
    env = child_env(clean_env, FLIGHTLOG_QUIET="1", FLIGHTLOG_URL=down, FLIGHTLOG_TOKEN=srv.token("writer", "b"))
    proc = run_script(clean_env, QUICK_JOB, env=env)
    assert slept(proc.stdout) == [], "a refused first connection cost the job a wait"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Connection refused" in lines[0] and "journal-only" in lines[0] and "`flightlog sync`" in lines[0]
    run_id = proc.stdout.split()[1]
    assert list_journals(clean_env, run_id)
    synced = subprocess.run(
        [FLIGHTLOG, "sync"], env={**env, "FLIGHTLOG_URL": srv.url}, capture_output=True, text=True, timeout=60
    )
    assert synced.returncode == 0, synced.stderr
    with reader(srv.url, srv.token("admin"), tmp_path / "reader") as client:
        info = client.run(run_id)
        assert info.status == "succeeded" and info.metrics["loss"].count == 1


def test_flightlog_run_with_a_refused_first_connection_says_it_once_and_does_not_wait(
    clean_env: Path, tmp_path: Path
) -> None:
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(QUICK_JOB))
    env = child_env(clean_env, FLIGHTLOG_URL=f"http://127.0.0.1:{closed_port()}")
    proc = subprocess.run(
        [FLIGHTLOG, "run", "--project", "b", "--", sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stdout.startswith("done"), proc.stderr
    assert slept(proc.stdout) == [], "a refused first connection cost the job a wait"
    assert proc.stderr.count("journal-only") == 1 and proc.stderr.count("flightlog sync") == 1, proc.stderr
    assert "waiting up to" not in proc.stderr and "only in the journal" not in proc.stderr


COMES_BACK = """
import time, flightlog
run = flightlog.init(project="b", resources=False)
print(run.id, flush=True)
run.log({"x": 0.0})
client = flightlog.Client()
deadline = time.monotonic() + 60
while True:  # the server comes up during the run: the shipper's backoff finds it
    try:
        if client.runs(project="b"):
            break
    except flightlog.errors.StoreUnavailable:
        pass
    assert time.monotonic() < deadline, "the records never reached the server that came back"
    time.sleep(0.1)
run.log({"x": 1.0})
run.finish()
"""


def test_a_server_that_comes_up_during_the_run_gets_the_records_without_sync(
    clean_env: Path, tmp_path: Path, server_process: Callable[..., ServerProcess]
) -> None:
    server = server_process()
    server.port = closed_port()
    env = child_env(clean_env, FLIGHTLOG_URL=f"http://127.0.0.1:{server.port}")
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(COMES_BACK)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        run_id = writer.stdout.readline().strip()
        server.start()
        out, err = writer.communicate(timeout=90)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    assert writer.returncode == 0, err
    assert err.count("journal-only") == 1 and "only in the journal" not in err, err
    with reader(server.url, None, tmp_path / "reader") as client:
        info = client.run(run_id)
        assert info.status == "succeeded" and info.metrics["x"].count == 2
    assert list_journals(clean_env, run_id) == []


REVOKED = (
    SLEEP_LEDGER
    + """
import os, time, flightlog
run = flightlog.init(project="b", resources=False)
run.log({"x": 0.0})
run._w.flush()  # shipped with the token still good
print(run.id, flush=True)
while not os.path.exists(os.environ["REVOKED_FLAG"]):
    time.sleep(0.02)
for i in range(1, 50):
    run.log({"x": float(i)})
    time.sleep(0.02)  # many flushes: a refused token must not be tried again at each
run.finish()
"""
)


def test_a_token_revoked_during_the_run_is_said_once_and_not_retried(
    srv: RunningServer, clean_env: Path, tmp_path: Path
) -> None:
    from flightlog.server.tokens import revoke_token

    secret = srv.token("writer", "b")
    flag = tmp_path / "revoked"
    env = child_env(
        clean_env,
        FLIGHTLOG_QUIET="1",
        FLIGHTLOG_URL=srv.url,
        FLIGHTLOG_TOKEN=secret,
        FLIGHTLOG_FLUSH_INTERVAL="0.02",
        REVOKED_FLAG=str(flag),
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(REVOKED)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        run_id = writer.stdout.readline().strip()
        revoke_token(srv.app.state.store, secret.split("_")[1])
        flag.touch()
        out, err = writer.communicate(timeout=60)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    assert writer.returncode == 0, err
    assert set(slept(out)) == {0.02}, "the job waited for its own sleeps only, never for the refused token"
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "refuses this token" in lines[0] and "not retried" in lines[0], err
    assert "waiting up to" not in err and secret not in err
    synced = subprocess.run(
        [FLIGHTLOG, "sync"],
        env={**env, "FLIGHTLOG_TOKEN": srv.token("writer", "b")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert synced.returncode == 0, synced.stderr
    with reader(srv.url, srv.token("admin"), tmp_path / "reader") as client:
        info = client.run(run_id)
        assert info.status == "succeeded" and info.metrics["x"].count == 50
