"""Browser tests of the web UI: Playwright driving Debian's headless Chromium against a real
flightlog server (uvicorn in a thread) over runs made by the SDK and `flightlog run`.

The runs are made once per test process (``seeded``); each test gets a fresh browser context
(``page``), fails on any uncaught JavaScript error, and may save screenshots with ``shot`` into
test-artifacts/ui/. `make test` installs chromium and builds the UI (scripts/setup-ui.sh).

Without Chromium a browser test fails (never skips: a skipped UI suite looks like a green one)
and says how to install it. FLIGHTLOG_TEST_CHROMIUM names another Chromium binary.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from flightlog.server import ui
from tests.ui.workloads import ROOT, Seeded, make_distributed, make_edges, make_oom, make_resumed, seed

CHROMIUM = os.environ.get("FLIGHTLOG_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
ARTIFACTS = ROOT / "test-artifacts" / "ui"
TIMEOUT_MS = 15_000


NO_CHROMIUM = (
    f"the browser tests need Chromium at {CHROMIUM} and it is missing: install it with "
    "`sudo apt-get install chromium` (Debian/Ubuntu) or `scripts/setup-ui.sh --browser`, "
    "or leave these tests out with `pytest --ignore=tests/ui`"
)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Fail a browser test before its fixtures make runs and start servers for nothing."""
    if {"browser", "page"} & set(getattr(item, "fixturenames", ())) and not os.access(CHROMIUM, os.X_OK):
        pytest.fail(NO_CHROMIUM, pytrace=False)


@pytest.fixture(scope="session")
def built_ui() -> Path:
    """The built UI; built here when it is missing (scripts/setup-ui.sh is idempotent)."""
    if not (ui.STATIC / "index.html").exists():
        subprocess.run([str(ROOT / "scripts" / "setup-ui.sh")], check=False, timeout=600)
    if not (ui.STATIC / "index.html").exists():
        pytest.fail("the web UI is not built and could not be: run scripts/setup-ui.sh (it needs Node.js and npm)")
    return ui.STATIC


@pytest.fixture(scope="session")
def clean_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith("FLIGHTLOG_")]:
            mp.delenv(name)
        yield


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory, clean_env: None, built_ui: Path) -> Seeded:
    return seed(tmp_path_factory.mktemp("ui"))


@pytest.fixture(scope="session")
def edges(seeded: Seeded) -> list[str]:
    """Three runs with long names, a one-point metric and a metric up to 1e195 (project "edges")."""
    return make_edges(seeded.home, seeded.work)


@pytest.fixture(scope="session")
def resumed(seeded: Seeded) -> str:
    """A run resumed with `flightlog run --resume` after its first attempt failed (project "resume")."""
    return make_resumed(seeded.home, seeded.work)


@pytest.fixture(scope="session")
def oom(seeded: Seeded) -> str:
    """A run killed at its memory limit (project "oom")."""
    return make_oom(seeded.home, seeded.work)


@pytest.fixture(scope="session")
def distributed(seeded: Seeded) -> str:
    """A 2-rank torchrun job whose rank 1 hung before all_reduce #4 (project "dist")."""
    return make_distributed(seeded.home, seeded.work)


ALERT_RULES = """\
settings:
  interval: 1s
  lookback: 1d
rules:
  - name: sweep-failed
    kind: consecutive_failures
    count: 1
    project: sweep
    severity: critical
  - name: broken-environment
    kind: diagnosis
    categories: [missing_file]
    project: vision
"""


@pytest.fixture(scope="session")
def server(seeded: Seeded) -> Iterator[Any]:
    """The server over the seeded store; it evaluates ALERT_RULES in the background (docs/alerting.md)."""
    from flightlog.server.testing import serve_in_thread

    (seeded.home / "alerts.yaml").write_text(ALERT_RULES)
    with serve_in_thread(seeded.home) as running:
        yield running


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """Chromium, closed when this package's tests are done (its processes would otherwise count
    as children of the test process in other packages' tests)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@contextmanager
def open_page(browser: Any, base_url: str, **options: Any) -> Iterator[Any]:
    """A page in a fresh browser context on a server; any uncaught script error or dialog fails the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 900}, base_url=base_url, **options)
    context.set_default_timeout(TIMEOUT_MS)
    pg = context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    yield pg
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"
    assert not dialogs, f"a dialog was opened (script ran from a workload value?): {dialogs}"


@pytest.fixture
def page(browser: Any, server: Any) -> Iterator[Any]:
    """A fresh browser context on the server (open_page)."""
    with open_page(browser, server.url, accept_downloads=True) as pg:
        yield pg


@pytest.fixture
def shot() -> Callable[[Any, str], Path]:
    """Save a screenshot of the page (or an element) as a test artifact."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(target: Any, name: str, full_page: bool = True) -> Path:
        path = ARTIFACTS / f"{name}.png"
        if hasattr(target, "goto"):
            target.screenshot(path=str(path), full_page=full_page)
        else:
            target.screenshot(path=str(path))
        return path

    return take
