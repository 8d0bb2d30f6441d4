"""No noise from start-up: a run that fails at start-up, right after importing torch, gets no
``memory_leak`` from the import; its report leaves out what it has nothing to say about (a
right-sizing without a recommendation, one line per baseline stage it never reached). Real
runs in child processes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from flightlog.client import Client
from tests.helpers import child_env, cli

FAILS_AFTER_IMPORTS = """
import time
import torch  # hundreds of MiB, loaded once

weights = []
for _ in range(60):  # a checkpoint read in chunk by chunk: steady growth, once
    weights.append(torch.ones(3 * 1024 * 1024 // 4))
    time.sleep(0.1)
raise ValueError("invalid config: batch_size must be positive, got -1")
"""


STAGES = """
import sys
import flightlog

run = flightlog.init(project="etl", name="nightly", params={"rows": 10}, resources=False)
if sys.argv[1] == "fail":
    raise ValueError("invalid config: rows must be positive")
for name in ("download", "decode", "validate", "featurize", "train", "export"):
    with run.stage(name):
        pass
run.log({"loss": 0.5})
run.finish()
"""


@pytest.mark.embedded_only("the same evidence over every transport")
def test_a_run_failing_after_importing_torch_has_no_memory_leak(home: Path) -> None:
    pytest.importorskip("torch")
    script = home.parent / "train.py"
    script.write_text(FAILS_AFTER_IMPORTS)
    proc = cli(
        home, "run", "--project", "vision", "--sample-interval", "0.1s", "--", sys.executable, str(script), check=False
    )
    assert proc.returncode == 1, proc.stderr
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        assert len(c.resources(run)) >= 6  # the import was sampled while memory grew
        report = c.diagnose(run)
    assert report["findings"][0]["category"] == "bad_parameter" or report["findings"][0]["category"] == "code_error", (
        report
    )
    assert not any(f["category"] == "memory_leak" for f in report["findings"]), report["findings"]


def test_a_run_failing_at_startup_reports_no_empty_sections(home: Path) -> None:
    script = home.parent / "etl.py"
    script.write_text(STAGES)
    env = child_env(home)
    subprocess.run(
        [sys.executable, str(script), "ok"], env=env, cwd=home.parent, check=True, capture_output=True, timeout=60
    )
    failed = subprocess.run(
        [sys.executable, str(script), "fail"], env=env, cwd=home.parent, capture_output=True, timeout=60
    )
    assert failed.returncode == 1
    with Client(home) as c:
        run = next(r.id for r in c.runs() if r.status == "failed")
    text = cli(home, "diagnose", run).stdout
    assert not re.search(r"stage \S+ only in the baseline", text), text
    assert (
        "stages: the run reached none of the baseline's 6 stages (decode, download, export, featurize, train, validate)"
        in text
    )
    rightsizing = [line for line in text.splitlines() if "rightsizing" in line or "recommendation" in line]
    assert len(rightsizing) == 1 and rightsizing[0].startswith("rightsizing: nothing to recommend"), text
    assert "memory:" not in text and "cpu:" not in text, text
    doc = cli(home, "diagnose", run, "--format", "json").stdout
    assert '"rightsizing"' in doc  # the JSON keeps every section, empty or not
