"""Fixtures shared by every test package: a fresh FLIGHTLOG_HOME, and helpers to run real
processes (scripts, the CLI) against it.

Every test that takes ``home`` runs once per transport (docs/architecture.md: one Client, two
transports, several stores): ``embedded`` writes and reads the SQLite store under ``home``;
``http`` starts a real server (uvicorn on a free loopback port, with --auth, over a separate
server home) and sets FLIGHTLOG_URL and an admin FLIGHTLOG_TOKEN, so the SDK, the CLI and child
processes all go through the API; ``postgres`` (the suites of ``POSTGRES_SUITES`` and the files
of ``POSTGRES_FILES``) sets FLIGHTLOG_STORE to a fresh database of a real PostgreSQL server that
this test session started (see ``postgres_server``). A test about the local store itself is
marked ``@pytest.mark.embedded_only("why")`` and runs once. tests/README.md: how the suite runs.
"""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.browser import build_ui, fail_without_chromium, launch

# Property tests run a fixed (derandomized) example set, so a red `make test` always reproduces;
# FLIGHTLOG_FUZZ_EXAMPLES=N (see tests/server/test_fuzz.py) switches every one to fresh random examples.
settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("soak", derandomize=False, database=None)
settings.load_profile("soak" if os.environ.get("FLIGHTLOG_FUZZ_EXAMPLES") else "fixed")

FLIGHTLOG_ENV = [name for name in os.environ if name.startswith("FLIGHTLOG_")]
TRANSPORTS = ("embedded", "http", "postgres")
# the behaviour suites that also run against PostgreSQL (issue 13): those whose own work reaches
# the store's queries and writes (several writers of one run, the alert feed and its leader, the
# CLI's filters); others stay on two transports. The runner writes through the SDK's writer (the
# sdk suite runs it on PostgreSQL), and the diagnosis reads through the Client's queries, which
# its baseline choice and comparison exercise; the rest of both suites runs twice, not three
# times (issue 33: the suite's time).
POSTGRES_SUITES = frozenset({"sdk", "cli", "store", "server", "alerts"})
# files of a suite that otherwise stays on two transports
POSTGRES_FILES = frozenset(
    {
        ("journal", "test_durability.py"),  # ran on PostgreSQL before they moved here
        ("runner", "test_runner_journals.py"),  # a runner's journals shipped into the store
        ("diagnose", "test_baseline_choice.py"),  # the baseline is found with the store's filters
        ("diagnose", "test_compare.py"),
    }
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "embedded_only(reason, postgres=False): runs against the embedded store only "
        "(and PostgreSQL with postgres=True), never through a server (the reason says why)",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    fail_without_chromium(item)  # a browser test without Chromium fails, saying how to install it


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "transport" in metafunc.fixturenames:
        only = metafunc.definition.get_closest_marker("embedded_only")
        choices = [t for t in TRANSPORTS if t != "postgres" or on_postgres(metafunc.definition.path)]
        if only:  # embedded_only(why, postgres=True): every store read directly, never through a server
            choices = [t for t in choices if t == "embedded" or (t == "postgres" and only.kwargs.get("postgres"))]
        metafunc.parametrize("transport", choices, indirect=True)


def on_postgres(path: Path) -> bool:
    """Whether a test file belongs to a suite that also runs against PostgreSQL."""
    parts = path.relative_to(Path(__file__).parent).parts
    return len(parts) > 1 and (parts[0] in POSTGRES_SUITES or parts[:2] in POSTGRES_FILES)


ROOT = Path(__file__).resolve().parents[1]


def peer_python(target: str, venv: str) -> Path:
    """The interpreter of a peer's environment (MLflow's), which `make TARGET` builds; `make test`
    builds every one before the suite starts (beside lint), so no test waits on a pip install.
    A missing or stale one fails the test that needs it, saying what to run (never a skip)."""
    question = subprocess.run(["make", "-q", target], cwd=ROOT, capture_output=True, text=True)
    if question.returncode != 0:
        pytest.fail(
            f"{venv} is missing or out of date: run `make {target}` (or `make peers`; `make test` builds it)",
            pytrace=False,
        )
    return ROOT / venv / "bin" / "python"


@pytest.fixture(scope="session")
def mlflow_python() -> Path:
    """The pinned MLflow 3 client and server (.bench-venv, `make bench-venv`)."""
    return peer_python("bench-venv", ".bench-venv")


@pytest.fixture(scope="session")
def mlflow2_python() -> Path:
    """The last MLflow 2.x client, skinny (.mlflow2-venv, `make mlflow2-venv`)."""
    return peer_python("mlflow2-venv", ".mlflow2-venv")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """One PostgreSQL server per test session (per xdist worker), from the system's binaries,
    with a migrated template database that each test copies (CREATE DATABASE … TEMPLATE)."""
    from flightlog.store.postgres.testing import TemporaryPostgres
    from flightlog.store.registry import open_store

    with TemporaryPostgres() as pg:
        open_store(pg.create_database("flightlog_template")).close()
        yield pg


@pytest.fixture
def postgres_uri(postgres_server: Any) -> Iterator[str]:
    """A fresh, migrated, empty database of the session's PostgreSQL server, dropped afterwards."""
    name = f"t{next(_DATABASES)}"
    uri = postgres_server.create_database(name, template="flightlog_template")
    yield uri
    postgres_server.drop_database(name)


_DATABASES = itertools.count(1)


@pytest.fixture
def transport(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", "embedded"))


@pytest.fixture
def home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str, request: pytest.FixtureRequest
) -> Iterator[Path]:
    """An empty FLIGHTLOG_HOME for this test, with every other FLIGHTLOG_ variable cleared
    (and, for the http transport, FLIGHTLOG_URL and FLIGHTLOG_TOKEN of a running server)."""
    for name in FLIGHTLOG_ENV:
        monkeypatch.delenv(name, raising=False)
    h = tmp_path / "home"
    monkeypatch.setenv("FLIGHTLOG_HOME", str(h))
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "off")  # as in child_env: the console tests turn it on
    monkeypatch.chdir(tmp_path)
    if transport == "postgres":
        monkeypatch.setenv("FLIGHTLOG_STORE", request.getfixturevalue("postgres_uri"))
    if transport == "http":
        from flightlog.server.testing import serve_in_thread

        with serve_in_thread(tmp_path / "server", auth=True) as server:
            monkeypatch.setenv("FLIGHTLOG_URL", server.url)
            monkeypatch.setenv("FLIGHTLOG_TOKEN", server.token("admin", name="tests"))
            yield h
        return
    yield h


@pytest.fixture(scope="session")
def built_ui() -> Path:
    """The web UI's built files (tests/browser.py)."""
    return build_ui()


@pytest.fixture(scope="module")
def browser(built_ui: Path) -> Iterator[Any]:
    """Headless Chromium, one per test module, closed when the module's tests are done. Not per
    package: a package-scoped fixture lives until the package that *defines* it ends — this one,
    ``tests``, i.e. the whole session — and while Playwright's sync API is up, the test process's
    main thread has a running event loop, so every later ``asyncio.run`` in that worker failed.
    A test that looks at a page takes it, with ``tests.browser.open_page``, so that it fails,
    never skips, when Chromium is missing."""
    with launch() as b:
        yield b


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs: a disk that fills up (skips where mounting is not allowed)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs here: {proc.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)
