"""The order of a workload's stdout and stderr as captured: two pipes lose the interleaving of
their bytes, and the runner's output pump puts what it reads in one burst stdout first, stderr
last (runner/pump.py). On a busy machine the pump can be preempted between seeing which pipe
is ready and reading it; before, an error block written to stderr *after* the progress lines
on stdout was stored first and the progress lines last, and the diagnosis read a healthy line
as the process's last words (a held-out failure's confidence fell from 0.64 to 0.23)."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

import flightlog
from flightlog.capture.pipeline import CaptureConfig, CapturePipeline
from flightlog.runner.pump import OutputPump
from tests.helpers import busy_cpu, child_env, wait_for

pytestmark = pytest.mark.embedded_only("the capture's order is the runner's, whatever store it writes to")

#: a progress bar on stderr, the steps on stdout, then the failure on stderr, as a training script prints them
WORKLOAD = """
import os, sys, time
from tqdm import tqdm
os.sched_setaffinity(0, {int(sys.argv[1])})
for _ in tqdm(range(40), desc="epoch 1", mininterval=0):  # a progress bar on stderr, redrawn each step
    time.sleep(0.001)
for step in range(1, 4):
    print(f"step {step * 100}: loss={2.0 / step:.4f}", flush=True)
sys.stderr.write("ERROR: failed to pull data from the cloud\\nimages.tar\\nIs your cache up to date?\\n")
sys.stderr.flush()
sys.exit(1)
"""

FLIGHTLOG = Path(sys.executable).with_name("flightlog")


def test_progress_on_stdout_stays_before_the_error_on_stderr_on_a_busy_cpu(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(WORKLOAD)
    orders = []
    with busy_cpu(4) as busy:
        cpu = str(busy)
        for _ in range(6):  # before the change, most of these runs stored the steps last
            done = subprocess.run(  # the runner too on the busy CPU: its pump is what gets preempted
                ["taskset", "-c", cpu, str(FLIGHTLOG), "run", "--project", "p", "--", sys.executable, str(script), cpu],
                env=child_env(home),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 1, done.stderr
            run_id = re.findall(r"run ([0-9a-f]{32}) started", done.stderr)[0]
            with flightlog.Client() as client:
                orders.append([e.message for e in client.logs(run_id)])
    for messages in orders:
        steps = [i for i, m in enumerate(messages) if m.startswith("step ")]
        error = messages.index("ERROR: failed to pull data from the cloud")
        assert len(steps) == 3 and max(steps) < error, messages
        assert messages[-1] == "Is your cache up to date?", messages


def test_a_burst_is_stored_stdout_first_even_when_stdout_is_read_in_its_second_round() -> None:
    """The pump's own contract, without a scheduler to race: its first round finds stdout empty
    and stderr holding the error; passing the error through to a terminal that is not reading
    holds the pump there while the workload's stdout gets its line; the second round reads it.
    The burst is stored stdout first all the same (before, in the order the rounds read it)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    terminal_r, terminal_w = os.pipe()  # stderr's pass-through, which nobody reads yet
    full = 0
    os.set_blocking(terminal_w, False)
    try:
        while True:  # fill the terminal's pipe: the next pass-through write blocks
            full += os.write(terminal_w, b"x" * 65536)
    except BlockingIOError:
        pass
    os.set_blocking(terminal_w, True)
    devnull = os.open(os.devnull, os.O_WRONLY)
    stored: list[tuple[str, str]] = []
    pipeline = CapturePipeline(CaptureConfig(env={}))
    pump = OutputPump(
        {"stdout": (out_r, devnull), "stderr": (err_r, terminal_w)},
        pipeline,
        lambda batch: stored.extend(zip(batch.stream, batch.message, strict=True)),
    )
    try:
        os.write(err_w, b"ERROR: failed to pull data from the cloud\n")
        pump.start()
        # stderr's pipe emptied: the pump read it, after finding stdout empty, and now waits to
        # pass it through to the terminal
        wait_for(lambda: _unread(err_r) == 0, "the pump to read stderr")
        os.write(out_w, b"step 300: loss=0.6667\n")
        drained = 0
        while drained < full + 42:  # the terminal reads again: the pump goes on
            drained += len(os.read(terminal_r, 1 << 20))
        os.close(out_w)
        os.close(err_w)
        assert pump.join(30)
    finally:
        for fd in (terminal_r, terminal_w, devnull):
            os.close(fd)
    assert stored == [("stdout", "step 300: loss=0.6667"), ("stderr", "ERROR: failed to pull data from the cloud")]


def _unread(fd: int) -> int:
    """The bytes waiting in pipe ``fd`` (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
