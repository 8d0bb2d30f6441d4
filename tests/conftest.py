"""Fixtures shared by every test package: a fresh FLIGHTLOG_HOME, and helpers to run real
processes (scripts, the CLI) against it.

Every test that takes ``home`` runs twice, once per transport (docs/architecture.md: one Client, two
transports): ``embedded`` writes and reads the SQLite store under ``home``; ``http`` starts a
real server (uvicorn on a free loopback port, with --auth, over a separate server home) and
sets FLIGHTLOG_URL and an admin FLIGHTLOG_TOKEN, so the SDK, the CLI and child processes all
go through the API. A test about the local store itself is marked
``@pytest.mark.embedded_only("why")`` and runs once.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests run a fixed (derandomized) example set, so a red `make test` always reproduces;
# FLIGHTLOG_FUZZ_EXAMPLES=N (see tests/server/test_fuzz.py) switches every one to fresh random examples.
settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("soak", derandomize=False, database=None)
settings.load_profile("soak" if os.environ.get("FLIGHTLOG_FUZZ_EXAMPLES") else "fixed")

FLIGHTLOG_ENV = [name for name in os.environ if name.startswith("FLIGHTLOG_")]
TRANSPORTS = ("embedded", "http")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "embedded_only(reason): runs against the embedded store only (the reason says why)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "transport" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("embedded_only")
        metafunc.parametrize("transport", ["embedded"] if only else list(TRANSPORTS), indirect=True)


@pytest.fixture
def transport(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", "embedded"))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str) -> Iterator[Path]:
    """An empty FLIGHTLOG_HOME for this test, with every other FLIGHTLOG_ variable cleared
    (and, for the http transport, FLIGHTLOG_URL and FLIGHTLOG_TOKEN of a running server)."""
    for name in FLIGHTLOG_ENV:
        monkeypatch.delenv(name, raising=False)
    h = tmp_path / "home"
    monkeypatch.setenv("FLIGHTLOG_HOME", str(h))
    monkeypatch.chdir(tmp_path)
    if transport == "http":
        from flightlog.server.testing import serve_in_thread

        with serve_in_thread(tmp_path / "server", auth=True) as server:
            monkeypatch.setenv("FLIGHTLOG_URL", server.url)
            monkeypatch.setenv("FLIGHTLOG_TOKEN", server.token("admin", name="tests"))
            yield h
        return
    yield h


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs: a disk that fills up (skips where mounting is not allowed)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs here: {proc.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)
