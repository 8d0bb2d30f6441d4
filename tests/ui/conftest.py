"""Browser tests of the web UI: Playwright driving Debian's headless Chromium against a real
flightlog server (uvicorn in a thread) over runs made by the SDK and `flightlog run`.

The runs are made once per test process (``seeded``); each test gets a fresh browser context
(``page``), fails on any uncaught JavaScript error, and may save screenshots with ``shot`` into
test-artifacts/ui/. The browser itself, and failing (never skipping) without Chromium, are
tests/browser.py's, shared with every suite that looks at a page.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import open_page
from tests.ui.workloads import (
    ROOT,
    Seeded,
    make_distributed,
    make_distributed_alike,
    make_edges,
    make_oom,
    make_resumed,
    seed,
)

ARTIFACTS = ROOT / "test-artifacts" / "ui"


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


@pytest.fixture(scope="session")
def distributed_alike(seeded: Seeded) -> str:
    """A 2-rank torchrun job whose ranks both failed alike on a missing data directory (project "dist-alike")."""
    return make_distributed_alike(seeded.home, seeded.work)


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
