"""The links an MLflow client prints open what they name: the real MLflow 3 client (.bench-venv)
logs a run against a real `flightlog server` and prints `View run … at: http://…/#/experiments/N/runs/ID`;
headless Chromium follows it to the run's page (not the projects list), and the experiment's
link to its project's runs."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
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


def test_an_experiment_link_opens_its_project_when_the_lookup_answers_before_the_app_listens(
    browser: Any, mlflow_server: RunningServer
) -> None:
    """The page asks the MLflow API for the experiment's name as it loads and moves to its project
    when the answer comes; the app starts listening for moves after its first paint. Here the
    page's clock is held (Playwright's fake timers: no frame, no timeout fires), so the answer
    always comes first: the app must still show the project it moved to, not the projects list
    it drew before (the race behind a runs table that stayed empty under load)."""
    from playwright.sync_api import expect

    with httpx.Client(base_url=mlflow_server.url) as http:
        experiment = http.post("/api/2.0/mlflow/experiments/create", json={"name": "vision"}).json()["experiment_id"]
        created = http.post("/api/2.0/mlflow/runs/create", json={"experiment_id": experiment, "run_name": "early"})
        assert created.status_code == 200, created.text
    with open_page(browser, mlflow_server.url) as page:
        page.clock.install(time=datetime(2026, 12, 1, 12, 0))
        page.clock.pause_at(datetime(2026, 12, 1, 12, 1))
        page.goto(f"{mlflow_server.url}/#/experiments/{experiment}")
        expect(page).to_have_url(re.compile(r"/projects/vision$"))  # the answer came, and the app moved
        page.clock.resume()  # now the app's effects run, and it listens
        expect(page.locator(".runs-table .row[data-run] .run-name")).to_have_text(["early"])
