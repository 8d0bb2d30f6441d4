"""What `flightlog run` makes of a workload's output: stored text and levels, metrics from lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import flightlog
from tests.helpers import child_env, cli, cli_json
from tests.runner.test_runner import last_run, script

PY = sys.executable
FLIGHTLOG = str(Path(PY).with_name("flightlog"))


@pytest.mark.embedded_only("capture happens in the runner, before any transport")
def test_colour_codes_reach_the_terminal_but_not_the_store(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "colours.py",
        """
        import sys
        sys.stderr.write("\\x1b[31mERROR\\x1b[0m: disk full\\n")
        print("\\x1b[1;33mWARNING\\x1b[0m:root:slow batch")
        """,
    )
    proc = subprocess.run(
        [FLIGHTLOG, "run", "--project", "t", "--", PY, code], env=child_env(home), capture_output=True, cwd=tmp_path
    )
    assert proc.returncode == 0
    assert proc.stdout == b"\x1b[1;33mWARNING\x1b[0m:root:slow batch\n"  # passthrough: raw bytes
    assert b"\x1b[31mERROR\x1b[0m: disk full\n" in proc.stderr
    events = flightlog.Client(home=home).logs(last_run(home).id)
    assert sorted((e.message, e.level_name) for e in events) == [
        ("ERROR: disk full", "error"),
        ("WARNING:root:slow batch", "warning"),
    ]


@pytest.mark.embedded_only("capture happens in the runner, before any transport")
def test_a_traceback_printed_right_after_an_open_progress_bar_is_the_run_s_failure(home: Path, tmp_path: Path) -> None:
    """Issue 29: a bar nobody closed (Trainer's evaluation bar) leaves its line without a newline
    and Python's traceback header lands on it; the traceback is still one event and the failure."""
    code = script(
        tmp_path,
        "bar.py",
        """
        import sys
        from tqdm import tqdm
        def compute_metrics(logits):
            return logits.argmax(-1)
        bar = tqdm(total=5, file=sys.stderr, mininterval=0)
        for step in range(5):
            bar.update()
            if step == 2:
                compute_metrics((0.1, 0.9))
        """,
    )
    proc = subprocess.run(
        [FLIGHTLOG, "run", "--project", "t", "--", PY, code],
        env=child_env(home),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 1
    assert "3/5 [" in proc.stderr and "]Traceback (most recent call last):" in proc.stderr  # the shape of the bug
    info = last_run(home)
    failure = info.failure or {}
    assert failure["exception"] == "AttributeError" and "argmax" in failure["message"]
    assert failure["frames"][-1]["function"] == "compute_metrics"
    events = flightlog.Client(home=home).logs(info.id)
    tracebacks = [e for e in events if "Traceback (most recent call last):" in e.message]
    assert len(tracebacks) == 1 and tracebacks[0].level_name == "error"
    assert tracebacks[0].message.startswith("Traceback (most recent call last):")
    assert tracebacks[0].message.endswith("AttributeError: 'tuple' object has no attribute 'argmax'")
    bars = [e.message for e in events if "3/5 [" in e.message]
    assert bars[0].endswith("it/s]") and bars[0].startswith(" 60%|")  # the bar's part kept as progress
    shown = cli(home, "logs", info.id).stdout.splitlines()
    assert "Traceback (most recent call last):" in shown


PROGRESS = """
    import sys
    for i in range(5):
        print(f"step={i} loss={1.0 / (i + 1):.3f} lr=0.01")
    print("loss=nan")
    print("retrying in: 5")
    """


def test_an_unmodified_script_printing_progress_gets_metrics_and_a_nan_finding(home: Path, tmp_path: Path) -> None:
    code = script(tmp_path, "progress.py", PROGRESS)
    proc = subprocess.run(
        [FLIGHTLOG, "run", "--project", "t", "--", PY, code],
        env=child_env(home),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    info = last_run(home)
    client = flightlog.Client(home=home)
    assert sorted(client.metrics(info.id)) == ["loss", "lr"]
    loss = client.metric_history(info.id, "loss")
    assert list(loss.steps) == [0, 1, 2, 3, 4, 5]
    assert list(loss.values[:5]) == [1.0, 0.5, 0.333, 0.25, 0.2] and np.isnan(loss.values[5])
    assert info.counters["line_metrics"] == 11
    report = cli_json(home, "diagnose", info.id)
    assert report["findings"][0]["category"] == "nan_loss"


@pytest.mark.embedded_only("the switch is the runner's, whatever the transport")
@pytest.mark.parametrize("how", ["option", "environment"])
def test_metrics_from_lines_can_be_turned_off(home: Path, tmp_path: Path, how: str) -> None:
    code = script(tmp_path, "progress.py", PROGRESS)
    args = ["--no-log-metrics"] if how == "option" else []
    env = child_env(home, **({"FLIGHTLOG_LOG_METRICS": "0"} if how == "environment" else {}))
    proc = subprocess.run(
        [FLIGHTLOG, "run", "--project", "t", *args, "--", PY, code],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert flightlog.Client(home=home).metrics(last_run(home).id) == {}


def test_a_metric_the_sdk_logs_is_never_also_read_from_lines(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "sdk.py",
        """
        import flightlog
        run = flightlog.init()
        for i in range(5):
            run.log({"loss": 1.0 / (i + 1)}, step=i)
            print(f"step={i} loss=999 acc=0.5", flush=True)
        run.finish()
        """,
    )
    proc = subprocess.run(
        [FLIGHTLOG, "run", "--project", "t", "--", PY, code],
        env=child_env(home),
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    client = flightlog.Client(home=home)
    info = last_run(home)
    assert sorted(client.metrics(info.id)) == ["acc", "loss"]  # acc only printed: read from the lines
    assert list(client.metric_history(info.id, "loss").values) == [1.0, 0.5, 1 / 3, 0.25, 0.2]  # the SDK's alone
    assert info.counters["line_metric_names_sdk"] == 1
