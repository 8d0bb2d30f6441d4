"""Helpers for tests that run real processes (scripts, the CLI) against a FLIGHTLOG_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any


def child_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLIGHTLOG_")}
    env["FLIGHTLOG_HOME"] = str(home)
    env["FLIGHTLOG_MODEL_CACHE"] = str(home.parent / "model-cache")  # flightlog.models.load: never the user's cache
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_TOKEN", "FLIGHTLOG_STORE"):  # set by the `home` fixture (http, postgres)
        if name in os.environ and not (name == "FLIGHTLOG_STORE" and "FLIGHTLOG_URL" in extra):
            env[name] = os.environ[name]  # (a child told to use a server does not read the store itself)
    env["PYTHONUNBUFFERED"] = "1"
    # Test scripts print plumbing (their run id) for the test to read: not the workload's output.
    # The console tests (tests/sdk/test_console.py, tests/integrations/test_crashes.py) turn
    # init()'s console capture back on with FLIGHTLOG_CONSOLE="auto".
    env["FLIGHTLOG_CONSOLE"] = "off"
    env.update(extra)
    return env


def run_script(
    home: Path,
    code: str,
    *,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    check: bool = True,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a Python snippet in a real child process against ``home``."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env or child_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd or home.parent,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"script failed ({proc.returncode}):\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def cli(
    home: Path,
    *args: str,
    check: bool = True,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real `flightlog` command."""
    exe = Path(sys.executable).with_name("flightlog")
    proc = subprocess.run(
        [str(exe), *args],
        env=env or child_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=home.parent,
        input=input,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"flightlog {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def cli_json(home: Path, *args: str, **kw: Any) -> Any:
    proc = cli(home, *args, "--format", "json", **kw)
    return json.loads(proc.stdout)
