"""A memory trend without training steps (a run that records no metrics or compute stages)
spans start-up too: it is a hint, never a lead, and says so."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from flightlog.client import Client
from tests.helpers import cli

GROWS_WITHOUT_STEPS = """
import time
chunks = []
for _ in range(25):
    chunks.append(bytearray(6 * 1024 * 1024))
    chunks[-1][::4096] = b"x" * len(chunks[-1][::4096])
    time.sleep(0.1)
"""


def _diagnose(home: Path, code: str) -> dict[str, Any]:
    """Run ``code`` under ``flightlog run`` (resources sampled every 0.1 s); its diagnosis."""
    script = home.parent / "load.py"
    script.write_text(code)
    proc = cli(home, "run", "--project", "etl", "--sample-interval", "0.1s", "--", sys.executable, str(script))
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        return c.diagnose(run)


@pytest.mark.embedded_only("the same evidence over either transport")
def test_growth_without_steps_is_a_hint(home: Path) -> None:
    report = _diagnose(home, GROWS_WITHOUT_STEPS)
    leak = next(f for f in report["findings"] if f["category"] == "memory_leak")
    assert leak["confidence"] < 0.5, leak
    assert "no training steps were recorded" in leak["summary"]
    assert report["kind"] == "none"


LOADS_WHILE_STEPPING_THEN_FLAT = """
import time
import flightlog
run = flightlog.init()
chunks = []
for step in range(60):
    if step < 20:  # reads its data in over the first second of training, then holds it
        chunks.append(bytearray(4 * 1024 * 1024))
        chunks[-1][::4096] = b"x" * len(chunks[-1][::4096])
    run.log({"loss": 1.0 / (step + 1)}, step=step)
    time.sleep(0.05)
"""


@pytest.mark.embedded_only("the same evidence over either transport")
def test_a_load_that_stops_growing_is_not_a_leak(home: Path) -> None:
    """Regression: a load phase inside the training window, then flat memory, read as a
    steady trend (a straight line through a ramp and a plateau); a leak grows in both halves."""
    report = _diagnose(home, LOADS_WHILE_STEPPING_THEN_FLAT)
    assert [f for f in report["findings"] if f["category"] == "memory_leak"] == [], report["findings"]


LOADS_THEN_TRAINS_BRIEFLY = """
import time
import flightlog
chunks = []
for _ in range(15):  # start-up: imports and data read in, then held
    chunks.append(bytearray(8 * 1024 * 1024))
    chunks[-1][::4096] = b"x" * len(chunks[-1][::4096])
    time.sleep(0.08)
run = flightlog.init()
for step in range(20):  # a training over before the sampler takes a few samples of it
    run.log({"loss": 1.0 / (step + 1)}, step=step)
run.finish()
"""


@pytest.mark.embedded_only("the same evidence over either transport")
def test_start_up_growth_before_a_brief_training_is_not_a_leak(home: Path) -> None:
    """Regression: a run that recorded its steps, over too short a time for the sampler, was
    judged over its whole life: the start-up load (scikit-learn's and scipy's imports in the
    healthy set) read as a steady trend, "no training steps were recorded" (they were)."""
    report = _diagnose(home, LOADS_THEN_TRAINS_BRIEFLY)
    assert [f for f in report["findings"] if f["category"] == "memory_leak"] == [], report["findings"]


LOADS_THEN_SPEAKS = """
import time
chunks = []
for _ in range(20):  # start-up: imports and a model read in (stretched out by a busy machine)
    chunks.append(bytearray(8 * 1024 * 1024))
    chunks[-1][::4096] = b"x" * len(chunks[-1][::4096])
    time.sleep(0.1)
print("scored 3 reviews", flush=True)  # its first line: the work itself, over in a moment
time.sleep(0.3)
"""


@pytest.mark.embedded_only("the same evidence over either transport")
def test_start_up_growth_before_the_first_output_is_not_a_leak(home: Path) -> None:
    """Regression (issue 29): a short inference script without steps (Transformers imported,
    a model loaded, three reviews scored) read as a leak of 0.42 on a loaded machine, where
    its start-up spread over a dozen samples; what grew before its first line is start-up."""
    report = _diagnose(home, LOADS_THEN_SPEAKS)
    assert [f for f in report["findings"] if f["category"] == "memory_leak"] == [], report["findings"]
