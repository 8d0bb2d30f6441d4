"""`flightlog run` keeps secrets out of what it stores, whatever shape the workload prints them in."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import flightlog
from tests.helpers import child_env, cli
from tests.runner.test_runner import last_run, script

PY = sys.executable
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"


@pytest.mark.embedded_only("redaction happens in the runner, before any transport")
def test_prefixed_private_keys_interleaved_on_both_streams_are_stored_redacted(home: Path, tmp_path: Path) -> None:
    code = script(
        tmp_path,
        "keys.py",
        f"""
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
        """,
    )
    proc = cli(home, "run", "--project", "t", "--", PY, code)
    assert proc.stdout.count(KEY_BODY) == 10  # the terminal sees the workload's own output
    stored = flightlog.Client(home=home).logs(last_run(home).id)
    text = "\n".join(e.message for e in stored)
    assert "b3BlbnNz" not in text and "END OPENSSH" not in text
    redacted = sorted(e.stream for e in stored if "[REDACTED:private_key]" in e.message)
    assert redacted == ["stderr", "stderr", "stdout", "stdout"]
    assert stored[-1].message == "done" or any(e.message == "done" for e in stored)


def test_secrets_in_the_command_line_params_tags_and_notes_are_stored_redacted(home: Path, tmp_path: Path) -> None:
    """Each way a user string reaches the store (issue 15): the recorded command lines (the
    runner's and the workload's), params by name and by value, tags, notes from the SDK and
    from the CLI, the failure summary and the runner's configuration evidence."""
    ghp = "ghp_" + "Z" * 36
    env_secret = "value-of-my-env-token-123"
    leaks = [ghp, "rawtokenvalue9", "apikeyvalue77", "s3cr3tpw", "bobsecretuser", env_secret, "hunter2pass"]
    code = script(
        tmp_path,
        "job.py",
        f"""
        import sys
        import flightlog
        run = flightlog.init()
        run.log_params({{"nested": {{"password": "hunter2pass"}}, "batch": 32}})
        run.set_tags(auth="rawtokenvalue9")
        run.note("cloned with {ghp}")
        print("args", len(sys.argv))
        sys.exit(3)
        """,
    )
    env = child_env(home, MY_SERVICE_TOKEN=env_secret)
    proc = cli(
        home,
        "run",
        "--project",
        "t",
        "--name",
        f"job {ghp}",
        "--param",
        "api_key=apikeyvalue77",
        "--param",
        "credentials.user=bobsecretuser",
        "--param",
        "db=postgresql://u:s3cr3tpw@db/x",
        "--param",
        f"from_env={env_secret}",
        "--param",
        "lr=0.1",
        "--tag",
        "token=rawtokenvalue9",
        "--tag",
        "team=vision",
        "--",
        PY,
        code,
        "--token",
        "rawtokenvalue9",
        "--api-key=apikeyvalue77",
        f"--repo=https://x:{ghp}@github.com/o/r",
        check=False,
        env=env,
    )
    assert proc.returncode == 3, proc.stderr
    info = last_run(home)
    cli(home, "runs", "note", info.id, "password=hunter2pass for the replica", env=env)
    client = flightlog.Client(home=home)
    info = client.run(info.id)
    stored = json.dumps(
        {
            "run": info.to_dict(),
            "context": client.context(info.id),
            "notes": [n.to_dict() for n in client.notes(info.id)],
            "evidence": client.evidence(info.id),
        },
        default=str,
    )
    for leak in leaks:
        assert leak not in stored, leak
    assert info.params["lr"] == 0.1 and info.params["batch"] == 32 and info.tags["team"] == "vision"
    assert info.params["db"] == "postgresql://u:[REDACTED:url_password]@db/x"
    assert info.params["api_key"] == info.params["credentials.user"] == "[REDACTED:secret]"
    assert "--token" in stored and "[REDACTED" in stored
