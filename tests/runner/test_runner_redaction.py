"""`flightlog run` keeps secrets out of what it stores, whatever shape the workload prints them in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import flightlog
from tests.helpers import cli
from tests.runner.test_runner import last_run, script

PY = sys.executable
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"


@pytest.mark.embedded_only("redaction happens in the runner, before any transport")
def test_prefixed_private_keys_interleaved_on_both_streams_are_stored_redacted(home: Path, tmp_path: Path) -> None:
    code = script(tmp_path, "keys.py", f"""
        import sys, time
        lines = ["-----BEGIN OPENSSH PRIVATE KEY-----"] + ["{KEY_BODY}"] * 5 + ["-----END OPENSSH PRIVATE KEY-----"]
        prefixes = [
            (sys.stdout, lambda i: f"2026-12-01 10:00:{{i:02d}},{{i * 37 % 1000:03d}} INFO app: "),
            (sys.stderr, lambda i: f"2026-12-01T10:00:00.{{i * 1234567 % 10**9}}Z "),
            (sys.stdout, lambda i: "[rank0]: "),
            (sys.stderr, lambda i: f"I1201 10:00:00.{{i * 31:06d}} 4242 train.cc:{{40 + i}}] "),
        ]
        for i, line in enumerate(lines):
            for stream, prefix in prefixes:  # one line of each key in turn, flushed: many reads
                stream.write(prefix(i) + line + "\\n")
                stream.flush()
            time.sleep(0.01)
        print("done")
        """)
    proc = cli(home, "run", "--project", "t", "--", PY, code)
    assert proc.stdout.count(KEY_BODY) == 10  # the terminal sees the workload's own output
    stored = flightlog.Client(home=home).logs(last_run(home).id)
    text = "\n".join(e.message for e in stored)
    assert "b3BlbnNz" not in text and "END OPENSSH" not in text
    redacted = sorted(e.stream for e in stored if "[REDACTED:private_key]" in e.message)
    assert redacted == ["stderr", "stderr", "stdout", "stdout"]
    assert stored[-1].message == "done" or any(e.message == "done" for e in stored)
