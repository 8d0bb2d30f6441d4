"""Two processes resuming one ended run at the same instant (issue 18, item 21): one gets the
next attempt and the other a conflict (or, if it comes after the first has ended, the attempt
after): never one attempt written by both. On the embedded SQLite store, on PostgreSQL, and
through a server, with real processes released together by a barrier file."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from flightlog.server.testing import serve_in_thread
from tests.helpers import child_env, run_script

RESUMER = textwrap.dedent("""
    import os, sys, time
    import flightlog
    from flightlog.errors import Conflict

    barrier, me = sys.argv[1], sys.argv[2]
    open(f"{barrier}.{me}", "w").close()
    while not os.path.exists(f"{barrier}.go"):
        pass  # spin: both leave at the same instant
    try:
        run = flightlog.init(id="shared", resume=True, resources=False)
    except Conflict as exc:
        print("conflict", exc, flush=True)
        sys.exit(0)
    print("attempt", run.attempt, flush=True)
    run.log({f"by_{me}": 1.0})
    run.finish()
""")


@pytest.fixture(params=["embedded", "postgres", "http"])
def where(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The environment of a process that records to the store under test."""
    home = tmp_path / "home"
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_TOKEN", "FLIGHTLOG_STORE"):
        monkeypatch.delenv(name, raising=False)
    if request.param == "http":
        with serve_in_thread(tmp_path / "server", auth=True) as server:
            yield child_env(home, FLIGHTLOG_URL=server.url, FLIGHTLOG_TOKEN=server.token("writer"))
        return
    extra = {"FLIGHTLOG_STORE": str(request.getfixturevalue("postgres_uri"))} if request.param == "postgres" else {}
    yield child_env(home, **extra)


def test_two_processes_resuming_at_once_never_share_an_attempt(where: dict[str, str], tmp_path: Path) -> None:
    home = Path(where["FLIGHTLOG_HOME"])
    run_script(
        home,
        """
        import flightlog
        flightlog.init(project="p", id="shared", resources=False).finish()
    """,
        env=where,
    )
    expected = 1
    for round_ in range(4):
        barrier = tmp_path / f"barrier{round_}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", RESUMER, str(barrier), me],
                env=where,
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for me in ("a", "b")
        ]
        deadline = time.monotonic() + 60
        while not all(Path(f"{barrier}.{me}").exists() for me in ("a", "b")):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "a resumer did not get ready"
            time.sleep(0.01)
        Path(f"{barrier}.go").write_text("")
        outs = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            outs.append(out.strip())
        attempts = sorted(int(o.split()[1]) for o in outs if o.startswith("attempt"))
        conflicts = [o for o in outs if o.startswith("conflict")]
        assert attempts and len(attempts) + len(conflicts) == 2, outs
        assert len(set(attempts)) == len(attempts), f"round {round_}: two processes got one attempt: {outs}"
        assert attempts == list(range(expected + 1, expected + 1 + len(attempts))), outs
        assert all("resume" in c for c in conflicts), conflicts
        expected = attempts[-1]
    final = run_script(
        home,
        """
        import flightlog
        info = flightlog.Client().run("shared")
        print(info.attempt, info.status)
    """,
        env=where,
    )
    assert final.stdout.split() == [str(expected), "succeeded"]
