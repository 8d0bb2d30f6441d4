"""Headless Chromium for every test that looks at the web UI (tests/ui, and the pages that the
pipeline and triage suites check): one launch per test module (the ``browser`` fixture of
tests/conftest.py), a fresh context per page (:func:`open_page`).

Without Chromium a browser test fails (never skips: a skipped browser test looks like a green
one) and says how to install it. FLIGHTLOG_TEST_CHROMIUM names another Chromium binary.
`make test` builds the UI and installs Chromium first (scripts/setup-ui.sh --browser).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from flightlog.server.testing import HEADLESS_CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("FLIGHTLOG_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = list(HEADLESS_CHROMIUM_ARGS)
TIMEOUT_MS = 15_000
NO_CHROMIUM = (
    f"the browser tests need Chromium at {CHROMIUM} and it is missing: install it with "
    "`sudo apt-get install chromium` (Debian/Ubuntu) or `scripts/setup-ui.sh --browser`, "
    "or leave these tests out with `pytest --ignore=tests/ui`"
)


def fail_without_chromium(item: pytest.Item) -> None:
    """Fail a browser test before its fixtures make runs and start servers for nothing."""
    if {"browser", "page"} & set(getattr(item, "fixturenames", ())) and not os.access(CHROMIUM, os.X_OK):
        pytest.fail(NO_CHROMIUM, pytrace=False)


def build_ui() -> Path:
    """The built UI; built here when it is missing (scripts/setup-ui.sh is idempotent)."""
    from flightlog.server import ui

    if not (ui.STATIC / "index.html").exists():
        subprocess.run([str(ROOT / "scripts" / "setup-ui.sh")], check=False, timeout=600)
    if not (ui.STATIC / "index.html").exists():
        pytest.fail("the web UI is not built and could not be: run scripts/setup-ui.sh (it needs Node.js and npm)")
    return ui.STATIC


@contextmanager
def launch() -> Iterator[Any]:
    """Chromium under Playwright, closed on exit.

    Assertions (``expect``) wait as long as actions do (TIMEOUT_MS; Playwright's own default for
    them is 5 s): a page fills itself as its data comes (a first fetch, a live stream), and on a
    loaded machine that took longer than 5 s (tests/ui under -n 2 beside tests/distributed, load
    average 14-21: a live run's first log line, a runs table). They still wait on what the page
    shows, never on the clock."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
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
