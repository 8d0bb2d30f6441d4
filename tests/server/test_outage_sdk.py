"""The SDK against a server that is down or going away: init(id=...) still records (journal-only
when the server never answered, shipped by `flightlog sync`), and a script that never calls
finish() still ships its last records at exit."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import flightlog
from flightlog.journal import list_journals
from tests.helpers import child_env, run_script
from tests.server.conftest import ServerProcess

RESUME = """
import flightlog
run = flightlog.init(project="p", id="r-1", resume=True, resources=False)
print("ready", flush=True)
run.log({"b": 2.0})
run.finish()
"""


def test_resume_while_the_server_is_down_warns_journals_and_sync_ships_when_it_is_back(
    tmp_path: Path, clean_env: Path, server_process: Callable[..., ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer's first connection is refused: it keeps to the journal and does not wait at
    finish() for a server that was never there (docs/server.md); `flightlog sync` ships it all."""
    server = server_process()
    url = server.start()
    env = child_env(clean_env, FLIGHTLOG_URL=url)
    run_script(
        clean_env,
        """
        import flightlog
        with flightlog.init(project="p", id="r-1", resources=False) as run:
            run.log({"a": 1.0})
        """,
        env=env,
    )
    server.stop()
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(RESUME)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"  # init did not raise
        deadline = time.monotonic() + 30
        while not list_journals(clean_env, "r-1"):
            assert time.monotonic() < deadline, "nothing journaled while the server is down"
            time.sleep(0.05)
        out, err = writer.communicate(timeout=15)  # no 30 s wait for a server that refused the first connection
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.communicate()
    assert writer.returncode == 0, err
    assert "cannot look run r-1 up" in err and "Traceback" not in err
    assert "waiting up to" not in err and err.count("flightlog sync") == 1, err
    server.start()
    synced = subprocess.run(
        [sys.executable, "-m", "flightlog", "sync"], env=env, capture_output=True, text=True, timeout=60
    )
    assert synced.returncode == 0, synced.stderr
    monkeypatch.setenv("FLIGHTLOG_URL", url)
    client = flightlog.Client(home=tmp_path / "reader")
    info = client.run("r-1")
    assert info.status == "succeeded" and info.project == "p"
    assert info.metrics["a"].count == 1 and info.metrics["b"].count == 1
    client.close()


NO_FINISH = """
import time, flightlog
run = flightlog.init(project="p", resources=False)
print(run.id, flush=True)
run.log({"x": 0.0})
client = flightlog.Client()
deadline = time.monotonic() + 30
while not client.runs(project="p"):  # shipped: the transport is open
    assert time.monotonic() < deadline
    time.sleep(0.01)
for i in range(1, 2500):
    run.log({"x": float(i)})
"""


def test_a_script_that_never_calls_finish_ships_everything_at_exit(
    tmp_path: Path, clean_env: Path, server_process: Callable[..., ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = server_process().start()
    proc = run_script(clean_env, NO_FINISH, env=child_env(clean_env, FLIGHTLOG_URL=url))
    assert "has been closed" not in proc.stderr and "only in the journal" not in proc.stderr, proc.stderr
    monkeypatch.setenv("FLIGHTLOG_URL", url)
    client = flightlog.Client(home=tmp_path / "reader")
    info = client.run(proc.stdout.strip())
    assert info.status == "succeeded" and info.metrics["x"].count == 2500
    assert list_journals(clean_env) == []
    client.close()
