"""Per-project diagnosis settings (``$FLIGHTLOG_HOME/diagnose.yaml``, ``flightlog.diagnose.yaml``):
parsed strictly, applied per project, and used by a real diagnosis."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from flightlog.client import Client
from flightlog.diagnose.evidence import Thresholds
from flightlog.diagnose.settings import load_thresholds, parse_settings
from flightlog.errors import InvalidInput
from tests.helpers import cli


def test_defaults_then_project_and_home_then_working_directory(tmp_path: Path) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    (home / "diagnose.yaml").write_text(
        "defaults:\n  startup_s: 5\n  queue_wait_s: 120\nprojects:\n  vision:\n    startup_s: 30\n"
    )
    (cwd / "flightlog.diagnose.yaml").write_text(
        "projects:\n  vision:\n    queue_wait_s: 600\n    higher_is_better: [dice, 'val/*iou*']\n    metric_regression: 0.05\n"
    )
    vision = load_thresholds("vision", home, cwd)
    assert (vision.startup_s, vision.queue_wait_s, vision.metric_regression) == (30.0, 600.0, 0.05)
    assert vision.higher_is_better == ("dice", "val/*iou*")
    other = load_thresholds("nlp", home, cwd)
    assert (other.startup_s, other.queue_wait_s) == (5.0, 120.0)
    assert other.import_s == Thresholds().import_s  # untouched settings keep their defaults
    assert load_thresholds("nlp", tmp_path / "nowhere", tmp_path / "nowhere") == Thresholds()


def test_every_problem_is_named_with_the_file_and_the_key() -> None:
    text = "defaults:\n  startup: 5\n  share: fast\nprojects:\n  vision:\n    plateau_patience: 2.5\n    lower_is_better: 3\nextra: 1\n"
    with pytest.raises(InvalidInput) as info:
        parse_settings(text, "flightlog.diagnose.yaml")
    message = str(info.value)
    assert (
        "flightlog.diagnose.yaml: defaults.startup: unknown setting (settings: " in message and "startup_s" in message
    )
    assert "defaults.share: expected a number (0 or more), got 'fast'" in message
    assert "projects.vision.plateau_patience: expected a whole number" in message
    assert "projects.vision.lower_is_better: expected a list of metric names or globs" in message
    assert "unknown section 'extra'" in message
    with pytest.raises(InvalidInput, match="not valid YAML"):
        parse_settings("defaults: [", "x.yaml")


SLOW_SETUP = """
import time
import flightlog
run = flightlog.init()
print("indexing the dataset", flush=True)
time.sleep(3.0)
for step in range(20):
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.05)
"""


@pytest.mark.embedded_only("the settings are read where the diagnosis runs: FLIGHTLOG_HOME of the embedded store here")
def test_a_project_setting_changes_a_real_diagnosis(home: Path) -> None:
    script = home.parent / "slow_setup.py"
    script.write_text(SLOW_SETUP)
    runs = {}
    for project in ("default-thresholds", "patient"):
        proc = cli(home, "run", "--project", project, "--", sys.executable, str(script))
        runs[project] = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    home.mkdir(exist_ok=True)
    (home / "diagnose.yaml").write_text("projects:\n  patient:\n    startup_s: 60\n")
    with Client(home) as c:
        strict = c.diagnose(runs["default-thresholds"])
        patient = c.diagnose(runs["patient"])
    assert any(f["category"] == "slow_startup" for f in strict["findings"])
    assert not any(f["category"] == "slow_startup" for f in patient["findings"])
    (home / "diagnose.yaml").write_text("projects:\n  patient:\n    startup_seconds: 60\n")
    failed = cli(home, "diagnose", runs["patient"], check=False)
    assert failed.returncode != 0 and "projects.patient.startup_seconds: unknown setting" in failed.stderr


def test_every_setting_is_documented() -> None:
    """docs/troubleshooting.md lists every setting with its default: a new knob cannot hide."""
    import dataclasses

    docs = (Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md").read_text()
    for field in dataclasses.fields(Thresholds):
        row = re.search(rf"^\| `{field.name}` \| ([^|]+) \|", docs, re.M)
        assert row, f"setting {field.name} is not in the settings table of docs/troubleshooting.md"
        shown = row[1].strip()
        if isinstance(field.default, tuple):
            assert shown == "—"
        else:
            assert float(shown) == float(field.default), (field.name, shown, field.default)
