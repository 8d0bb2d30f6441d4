"""The links an MLflow client prints open what they name: the real MLflow 3 client (.bench-venv)
logs a run against a real `flightlog server` and prints `View run … at: http://…/#/experiments/N/runs/ID`;
headless Chromium follows it to the run's page (not the projects list), and the experiment's
link to its project's runs."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flightlog.server.testing import RunningServer, serve_in_thread
from tests.ui.conftest import open_page

pytestmark = pytest.mark.timeout(600)

_LOG = """
import mlflow
mlflow.set_experiment("vision")
with mlflow.start_run(run_name="resnet-from-mlflow"):
    mlflow.log_metric("loss", 0.5, step=1)
"""


@pytest.fixture
def mlflow_server(tmp_path: Path, clean_env: None, built_ui: Path) -> Iterator[RunningServer]:
    with serve_in_thread(tmp_path / "srv") as running:
        yield running


def test_the_run_link_an_mlflow_client_prints_opens_the_run(
    browser: Any, mlflow_python: Path, mlflow_server: RunningServer, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    proc = subprocess.run(
        [str(mlflow_python), "-c", _LOG],
        capture_output=True,
        text=True,
        timeout=180,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "MLFLOW_TRACKING_URI": mlflow_server.url,
            "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
        },  # fmt: skip
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = proc.stdout + proc.stderr
    run_link = re.search(r"View run \S+ at: (\S+)", printed)
    experiment_link = re.search(r"View experiment at: (\S+)", printed)
    assert run_link and experiment_link, printed
    assert "/#/experiments/" in run_link.group(1)
    run_id = run_link.group(1).rsplit("/", 1)[-1]
    with open_page(browser, mlflow_server.url) as page:
        page.goto(run_link.group(1))
        expect(page.locator("#run-name")).to_have_text("resnet-from-mlflow")
        expect(page).to_have_url(re.compile(rf"/runs/{run_id}$"))
        page.goto(experiment_link.group(1))
        expect(page).to_have_url(re.compile(r"/projects/vision$"))
        expect(page.locator(".runs-table .row[data-run] .run-name")).to_have_text(["resnet-from-mlflow"])
