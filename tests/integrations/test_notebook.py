"""Notebooks: a real Jupyter kernel (ipykernel, driven by nbclient) runs a notebook that
re-runs an init() cell, raises in a cell, and displays a run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import flightlog

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

pytestmark = pytest.mark.embedded_only("the kernel writes through the SDK; transports are covered in tests/core")

INIT_CELL = """\
import flightlog
run = flightlog.init(project="nb", name="explore", resources=False)
run.log({"loss": 0.25}, step=0)
ids = globals().setdefault("ids", [])
ids.append(run.id)
"""


def _wait_until_ended(client: flightlog.Client, run_id: str, timeout: float = 30) -> flightlog.Client:
    deadline = time.monotonic() + timeout
    while client.run(run_id).status == "running":
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} still running {timeout}s after the kernel shut down")
        time.sleep(0.1)
    return client


def test_rerun_cell_stops_the_previous_run_cell_errors_are_recorded_and_a_run_renders_as_html(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter"))
    cells = [
        nbformat.v4.new_code_cell(INIT_CELL),
        nbformat.v4.new_code_cell(INIT_CELL),  # the same cell, run again
        nbformat.v4.new_code_cell("run.log({'loss': 0.125}, step=1)\n1 / 0"),
        nbformat.v4.new_code_cell("run"),
        nbformat.v4.new_code_cell("print(' '.join(ids))"),
    ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()

    assert notebook.cells[2].outputs[0]["ename"] == "ZeroDivisionError"  # the notebook still shows the error
    html = notebook.cells[3].outputs[0]["data"]["text/html"]
    assert "flightlog run" in html and "explore" in html and "running" in html and "loss=0.125" in html
    first, second = notebook.cells[4].outputs[0]["text"].split()

    client = _wait_until_ended(flightlog.Client(), second)
    old = client.run(first)
    assert old.status == "stopped" and old.end_reason == "rerun"
    new = client.run(second)
    assert new.status == "succeeded"  # the kernel shut down normally
    assert new.metrics["loss"].last == 0.125
    [error] = client.logs(second, level="error")
    assert "ZeroDivisionError: division by zero" in error.message and error.component == "notebook"
    assert "1 / 0" in (error.fields or {}).get("cell", "")
    assert client.logs(first, level="error") == []
