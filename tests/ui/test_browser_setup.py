"""The browser tests need Chromium: without it they fail and say how to install it, never skip
(a skipped UI suite in CI reads as a green one); those of other suites too (a page the
pipeline suite checks)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.ui.workloads import ROOT


def test_a_missing_chromium_fails_the_browser_tests_with_how_to_install_it() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLIGHTLOG_", "PYTEST_"))}
    env["FLIGHTLOG_TEST_CHROMIUM"] = str(ROOT / "no-such-chromium")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/ui/test_app.py::test_dark_mode_is_readable_and_remembered",
            "tests/pipeline/test_ui.py::test_the_api_returns_the_pipeline_and_refuses_a_plain_run[embedded]",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "2 errors" in out and "skipped" not in out, out
    assert "no-such-chromium" in out and "apt-get install chromium" in out and "scripts/setup-ui.sh --browser" in out, (
        out
    )
