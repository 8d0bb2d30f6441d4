"""One lone surrogate must not lose data (issue 18, item 19). A file name that is not UTF-8,
decoded by ``os.fsdecode``, ``os.listdir`` or ``sys.argv``, holds one (``caf\\xe9`` → ``"caf\\udce9"``):
it is stored escaped (``caf\\xe9``, four characters), and everything that came with it is kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import flightlog
from tests.helpers import child_env, run_script

NAME = os.fsdecode(b"caf\xe9.csv")  # "caf\udce9.csv"
SHOWN = "caf\\xe9.csv"


def _client(home: Path) -> flightlog.Client:
    return flightlog.Client(home=home)


def test_a_surrogate_in_params_keeps_every_param_and_the_context(home: Path) -> None:
    proc = run_script(
        home,
        """
        import os, sys, flightlog
        sys.argv = ["train.py", os.fsdecode(b"--data=caf\\xe9.csv")]
        run = flightlog.init(project="s", params={"file": os.fsdecode(b"caf\\xe9.csv"), "lr": 0.1,
                                                   os.fsdecode(b"k\\xff"): 1}, resources=False)
        run.log({"loss": 0.5}, step=1)
        run.finish()
        print(run.id)
    """,
    )
    run_id = proc.stdout.split()[-1]
    client = _client(home)
    try:
        info = client.run(run_id)
        params = info.params
        context = client.context(run_id)
    finally:
        client.close()
    assert info.status == "succeeded", proc.stderr
    assert params == {"file": SHOWN, "lr": 0.1, "k\\xff": 1}
    assert context["command"][-1] == "--data=caf\\xe9.csv", context
    assert "could not be encoded" not in proc.stderr


def test_a_surrogate_in_a_log_event_keeps_the_event_and_the_final_status(home: Path) -> None:
    proc = run_script(
        home,
        """
        import os, flightlog
        run = flightlog.init(project="s", resources=False)
        run.log_event("opened " + os.fsdecode(b"caf\\xe9.csv"), fields={"path": os.fsdecode(b"/d/caf\\xe9.csv")})
        run.log_event("and a lone \\ud800 from JSON")
        run.log({"acc": 1.0}, step=0)
        run.finish()
        print(run.id)
    """,
    )
    run_id = proc.stdout.split()[-1]
    client = _client(home)
    try:
        info = client.run(run_id)
        messages = [e.message for e in client.logs(run_id)]
        fields = [e.fields for e in client.logs(run_id) if e.fields]
    finally:
        client.close()
    assert info.status == "succeeded", proc.stderr
    assert f"opened {SHOWN}" in messages and "and a lone \ufffd from JSON" in messages
    assert {"path": "/d/caf\\xe9.csv"} in fields
    assert "internal error" not in proc.stderr


def test_a_surrogate_in_a_metric_name_keeps_the_flush(home: Path) -> None:
    proc = run_script(
        home,
        """
        import os, flightlog
        run = flightlog.init(project="s", resources=False)
        run.log({"loss": 0.5, "acc": 0.7, os.fsdecode(b"val/caf\\xe9"): 0.1}, step=1)
        run.finish()
        print(run.id)
    """,
    )
    run_id = proc.stdout.split()[-1]
    client = _client(home)
    try:
        metrics = client.metrics(run_id)
        status = client.run(run_id).status
    finally:
        client.close()
    assert sorted(metrics) == ["acc", "loss", "val/caf\\xe9"], proc.stderr
    assert status == "succeeded"


def test_the_runner_keeps_the_context_of_a_command_with_a_non_utf8_argument(home: Path, tmp_path: Path) -> None:
    exe = os.fsencode(Path(sys.executable).with_name("flightlog"))
    proc = subprocess.run(
        [exe, "run", "--project", "s", "--", b"echo", b"caf\xe9"],
        env=child_env(home),
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"caf\xe9\n"  # the workload's output passes through byte for byte
    client = _client(home)
    try:
        (run,) = client.runs()
        context = client.context(run.id)
    finally:
        client.close()
    assert run.status == "succeeded"
    assert context["command"][-2:] == ["echo", "caf\\xe9"], context


def test_a_note_given_on_the_command_line_with_a_surrogate_is_kept(home: Path, tmp_path: Path) -> None:
    proc = run_script(
        home,
        """
        import flightlog
        run = flightlog.init(project="s", resources=False)
        run.finish()
        print(run.id)
    """,
    )
    run_id = proc.stdout.split()[-1]
    exe = os.fsencode(Path(sys.executable).with_name("flightlog"))
    note = subprocess.run(
        [exe, "runs", "note", run_id.encode(), b"read caf\xe9.csv"],
        env=child_env(home),
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert note.returncode == 0, note.stderr
    client = _client(home)
    try:
        notes = [n["text"] if isinstance(n, dict) else n.text for n in client.notes(run_id)]
    finally:
        client.close()
    assert notes == ["read caf\\xe9.csv"]
