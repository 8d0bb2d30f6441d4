"""Notebooks: a real Jupyter kernel (ipykernel, driven by nbclient) runs a notebook that
re-runs an init() cell, raises in a cell, and displays a run; a notebook that stops at a shape
mismatch leaves a failed run diagnosed as the same code run as a script under ``flightlog run``;
one whose user carries on after the error keeps its run going."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import flightlog
from tests.helpers import child_env, cli, cli_json

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

pytestmark = pytest.mark.embedded_only("the kernel writes through the SDK; transports are covered in tests/sdk")

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
    nbclient.NotebookClient(
        notebook, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()

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


FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))
SETUP = """\
import numpy as np
import flightlog
run = flightlog.init(project="nb", name="mismatch", resources=False)
print("run", run.id, flush=True)
"""
TRAIN = """\
for epoch in range(3):
    print(f"epoch {epoch} loss {1.0 / (epoch + 1):.3f}", flush=True)
    run.log({"loss": 1.0 / (epoch + 1)}, step=epoch)
"""
MISMATCH = "scores = np.zeros(20) - np.zeros(60)  # a real shape mismatch\n"
MESSAGE = "operands could not be broadcast together with shapes (20,) (60,)"


def _execute(tmp_path: Path, cells: list[str], *, allow_errors: bool) -> Any:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    if allow_errors:
        client.execute()
    else:
        with pytest.raises(nbclient.exceptions.CellExecutionError, match="broadcast"):
            client.execute()  # executed top to bottom, the notebook stops at the error
    return notebook


def _stdout(cell: Any) -> str:
    return "".join(o["text"] for o in cell.outputs if o.get("name") == "stdout")


def _logs(home: Path, run_id: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in cli(home, "logs", run_id, "--format", "json").stdout.splitlines()]


def test_a_notebook_that_stops_at_a_shape_mismatch_fails_its_run_as_flightlog_run_would(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter"))
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "auto")  # the default, which the test fixtures turn off
    notebook = _execute(tmp_path, [SETUP, TRAIN, MISMATCH, "run.finish()"], allow_errors=False)
    assert notebook.cells[2].outputs[-1]["ename"] == "ValueError"  # the notebook still shows the error
    run_id = _stdout(notebook.cells[0]).split()[1]

    _wait_until_ended(flightlog.Client(), run_id)
    info = cli_json(home, "runs", "show", run_id)
    assert info["status"] == "failed" and info["end_reason"] == "exception", info
    failure = info["failure"]
    assert MESSAGE in failure["traceback"] and "Traceback (most recent call last)" in failure["traceback"]
    assert failure["exception"] == "ValueError" and failure["last_lines"][-1] == "epoch 2 loss 0.333"
    logs = _logs(home, run_id)
    tracebacks = [e for e in logs if "Traceback (most recent call last)" in e["message"]]
    assert len(tracebacks) == 1, logs  # recorded once: after the cell, not again at the kernel's exit
    [event] = tracebacks
    assert event["stream"] == "stderr" and event["level"] == "error" and MESSAGE in event["message"]
    assert event["component"] == "notebook" and "np.zeros(60)" in (event["fields"] or {})["cell"]
    printed = [e["message"] for e in logs if e["stream"] == "stdout"]
    assert printed[-3:] == ["epoch 0 loss 1.000", "epoch 1 loss 0.500", "epoch 2 loss 0.333"]
    assert logs.index(event) > max(i for i, e in enumerate(logs) if e["stream"] == "stdout")  # the cell's lines first

    # the same code as a script under `flightlog run`: the same cause comes first
    script = tmp_path / "train.py"
    script.write_text(SETUP + TRAIN + MISMATCH)
    proc = subprocess.run(
        [FLIGHTLOG, "run", "--project", "runner", "--", sys.executable, str(script)],
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    [runner] = cli_json(home, "runs", "ls", "--project", "runner")
    expected = cli_json(home, "diagnose", runner["id"])
    diagnosis = cli_json(home, "diagnose", run_id)
    top = diagnosis["findings"][0]
    assert top["category"] == expected["findings"][0]["category"] == "code_error", (top, expected["findings"][0])
    assert top["confidence"] >= 0.5 and diagnosis["kind"] == expected["kind"]
    assert "could not be broadcast" in top["summary"] + json.dumps(top["evidence"])


def test_a_user_who_carries_on_after_a_cell_error_keeps_the_run_until_finish(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter"))
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "auto")
    status = textwrap.dedent("""\
        run._w.flush()
        print("status", flightlog.Client().run(run.id).status)
    """)
    notebook = _execute(
        tmp_path,
        [SETUP, MISMATCH, status, "scores = np.zeros(20) - np.zeros(20)\n" + TRAIN, "run.finish()", status],
        allow_errors=True,
    )
    run_id = _stdout(notebook.cells[0]).split()[1]
    assert _stdout(notebook.cells[2]).strip() == "status running"  # the error did not end the run
    assert _stdout(notebook.cells[5]).strip() == "status succeeded"  # the user's finish() did

    info = flightlog.Client().run(run_id)
    assert info.status == "succeeded" and info.failure is None and info.metrics["loss"].last == pytest.approx(1 / 3)
    [error] = [e for e in _logs(home, run_id) if e["level"] == "error"]
    assert error["stream"] == "stderr" and MESSAGE in error["message"]  # the error stays on the record


def test_a_kernel_that_shuts_down_after_an_interrupted_cell_stops_its_run(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter"))
    notebook = _execute(
        tmp_path, [SETUP, TRAIN, "raise KeyboardInterrupt  # as the kernel's interrupt does"], allow_errors=True
    )
    run_id = _stdout(notebook.cells[0]).split()[1]
    info = _wait_until_ended(flightlog.Client(), run_id).run(run_id)
    assert info.status == "stopped" and info.end_reason == "signal" and info.failure is None, info
