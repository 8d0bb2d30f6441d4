"""The run-life hooks, the record hook and a feature's notifier, called for real.

A feature of the test's own is installed the way a package is: a module and a ``*.dist-info``
with its ``flightlog`` entry point, on the path of a fresh process, so the process's own table
finds it. The workload is a real script (``init``, records, ``finish``) or ``flightlog run``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import child_env, plugin_site

FEATURE = """
import json, os
from flightlog.plugins import hookimpl

OUT = os.environ["HOOKY_OUT"]

def _write(doc):
    with open(OUT, "a") as f:
        f.write(json.dumps(doc) + "\\n")

@hookimpl
def flightlog_run_start(run_id, project):
    if os.environ.get("HOOKY_RAISE"):
        raise RuntimeError("boom at the start")
    _write({"hook": "start", "run": run_id, "project": project})

@hookimpl
def flightlog_run_end(run_id, status):
    if os.environ.get("HOOKY_RAISE"):
        raise RuntimeError("boom at the end")
    _write({"hook": "end", "run": run_id, "status": status})

@hookimpl
def flightlog_record_kinds():
    return ["evidence"]

@hookimpl
def flightlog_record(run_id, record):
    if os.environ.get("HOOKY_RAISE"):
        raise RuntimeError("boom on a record")
    _write({"hook": "record", "run": run_id, "kind": record["k"], "name": record.get("name")})

class FileNotifier:
    kind = "hooky-file"
    def __init__(self, name, route, retry, path):
        self.name, self.route, self.retry, self.path = name, route, retry, path
    def send(self, notification):
        with open(self.path, "a") as f:
            for view in notification.alerts:
                f.write(json.dumps({"rule": view.alert.rule, "status": view.status}) + "\\n")
    def references(self):
        return []
    def describe(self):
        return f"hooky-file {self.path}"

def parse_file_notifier(f, index):
    from flightlog.alerts.notifiers.base import common_fields
    name, route, retry = common_fields(f, "hooky-file", index)
    path = f.text("path", required=True)
    return None if path is None else FileNotifier(name, route, retry, path)

@hookimpl
def flightlog_notifiers():
    return {"hooky-file": parse_file_notifier}
"""

SCRIPT = """
import flightlog
run = flightlog.init(project="hooks", name="life", quiet=True, resources=False)
run.log({"loss": 1.0}, step=0)
run.log_evidence("note", "hello", {"a": 1})
run.finish()
print("after finish", run.id)
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = child_env(tmp_path / "home")
    env["PYTHONPATH"] = os.pathsep.join([str(plugin_site(tmp_path, "hooky", FEATURE)), env.get("PYTHONPATH", "")])
    env["HOOKY_OUT"] = str(tmp_path / "hooks.jsonl")
    env.update(extra)
    return env


def _calls(tmp_path: Path) -> list[dict[str, object]]:
    path = tmp_path / "hooks.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_run_calls_the_start_end_and_record_hooks(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    run_id = proc.stdout.split()[-1]
    calls = _calls(tmp_path)
    assert calls[0] == {"hook": "start", "run": run_id, "project": "hooks"}
    assert calls[-1] == {"hook": "end", "run": run_id, "status": "succeeded"}
    records = [c for c in calls if c["hook"] == "record"]
    assert records == [
        {"hook": "record", "run": run_id, "kind": "evidence", "name": "hello"}
    ]  # only the kind asked for


def test_a_feature_that_raises_is_reported_and_never_reaches_the_user(tmp_path: Path) -> None:
    env = _env(tmp_path, HOOKY_RAISE="1")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "after finish" in proc.stdout
    assert "the feature 'hooky' failed in flightlog_run_start: RuntimeError: boom at the start" in proc.stderr
    assert "the feature 'hooky' failed in flightlog_run_end: RuntimeError: boom at the end" in proc.stderr
    assert "the feature 'hooky' failed in flightlog_record: RuntimeError: boom on a record" in proc.stderr
    run_id = proc.stdout.split()[-1]
    shown = subprocess.run(
        [sys.executable, "-m", "flightlog", "logs", run_id, "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    messages = [json.loads(line)["message"] for line in shown.stdout.splitlines() if line.strip()]
    assert any("boom at the start" in m for m in messages), messages  # the run keeps the report too


def test_a_features_notifier_delivers_a_real_alert(tmp_path: Path) -> None:
    delivered = tmp_path / "delivered.jsonl"
    rules = tmp_path / "rules.yaml"
    rules.write_text(f"""settings:
  interval: 0.2s
rules:
  - name: always-failing
    kind: consecutive_failures
    count: 1
notifiers:
  - kind: hooky-file
    path: {delivered}
""")
    env = _env(tmp_path)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "flightlog",
            "run",
            "--project",
            "hooks",
            "--alerts",
            str(rules),
            "--",
            sys.executable,
            "-c",
            "raise SystemExit(3)",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    lines = [json.loads(line) for line in delivered.read_text().splitlines()] if delivered.exists() else []
    assert {"rule": "always-failing", "status": "firing"} in lines, proc.stderr
