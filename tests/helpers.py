"""Helpers for tests that run scripts (real processes) and the CLI against a FLIGHTLOG_HOME."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeVar

import psutil
import pytest

from tests.inprocess import run_cli

T = TypeVar("T")


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


#: commands whose behaviour is the process itself (it supervises a workload, serves, watches, runs
#: steps as its children, installs signal handlers): `cli` always starts the real `flightlog`
REAL_PROCESS_COMMANDS = frozenset({("run",), ("server",), ("ui",), ("sweep",), ("pipeline", "run"),
                                   ("pipeline", "resume"), ("alerts", "watch")})  # fmt: skip
#: FLIGHTLOG_TEST_CLI=process makes every `cli` call a real process (to tell the two apart when in doubt)
ALWAYS_A_PROCESS = os.environ.get("FLIGHTLOG_TEST_CLI") == "process"


def plugin_site(tmp_path: Path, name: str, source: str) -> Path:
    """A feature installed the way a package is — module ``name`` with its ``flightlog`` entry
    point's dist-info — in a directory to put on ``PYTHONPATH``."""
    site = tmp_path / "site"
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir(parents=True)
    (site / f"{name}.py").write_text(source)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[flightlog]\n{name} = {name}\n")
    return site


def needs_a_process(args: tuple[str, ...]) -> bool:
    """Whether `flightlog ARGS` must be a real process (see REAL_PROCESS_COMMANDS)."""
    words = tuple(a for a in args[:2] if not a.startswith("-"))
    following = any(a in ("-f", "--follow") for a in args)
    return ALWAYS_A_PROCESS or following or words[:1] in REAL_PROCESS_COMMANDS or words in REAL_PROCESS_COMMANDS


def cli(
    home: Path,
    *args: str,
    check: bool = True,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    input: str | None = None,
    process: bool | None = None,
) -> subprocess.CompletedProcess[str]:
    """`flightlog ARGS` against ``home``, as a user runs it: the same environment, working
    directory, stdin, stdout, stderr and exit status as the real command.

    Argument, format and error behaviour runs in this process (``tests/inprocess.py``: the same
    ``main`` the script calls, without the cost of a new interpreter); the commands of
    REAL_PROCESS_COMMANDS, ``--follow``, and a call with ``process=True`` start the real
    `flightlog` (``timeout`` applies to those; pytest's timeout covers the others)."""
    env = env or child_env(home)
    if process is None:
        process = needs_a_process(args)
    if process:
        exe = Path(sys.executable).with_name("flightlog")
        proc = subprocess.run(
            [str(exe), *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=home.parent,
            input=input,
        )
    else:
        proc = run_cli(args, env=env, cwd=home.parent, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"flightlog {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def cli_json(home: Path, *args: str, **kw: Any) -> Any:
    proc = cli(home, *args, "--format", "json", **kw)
    return json.loads(proc.stdout)


def wait_for(check: Callable[[], T | None], what: str, timeout: float = 30.0, every: float = 0.02) -> T:
    """``check()``'s first truthy value: the test goes on at the component's own signal (a row
    written, a line printed, a counter moved), never after a guessed sleep. ``timeout`` only
    bounds a wait for something that never comes (then AssertionError, naming ``what``); it is
    not a claim about speed, so make it generous."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {value!r})")
        time.sleep(every)


class Lines:
    """A child's text stream read line by line in a thread, so a test can wait on a line while
    the child runs and still have the whole text at the end (``text``)."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        with stream:  # closed at its end: the child is gone
            for line in stream:
                with self._lock:
                    self.lines.append(line)

    def wait_for(self, needle: str, timeout: float = 60.0) -> str:
        """The first line containing ``needle``, once the child has written it."""

        def found() -> str | None:
            with self._lock:
                return next((line for line in self.lines if needle in line), None)

        return wait_for(found, f"a line with {needle!r}", timeout)

    @property
    def text(self) -> str:
        """Everything read (after the child ended: all it wrote)."""
        self._thread.join(timeout=60)
        with self._lock:
            return "".join(self.lines)


#: Put before a child's script: each ``time.sleep`` that flightlog or the script itself calls in
#: the main thread is noted (not the standard library's own polling, e.g. ``subprocess`` waiting
#: for git), and the list is printed last on stdout as ``slept: [...]`` (at exit, after
#: flightlog's own exit hook). A test of "flightlog never makes the job wait" asserts on that list
#: (``slept(stdout)``): what the job was made to do, counted, instead of a bound on wall time
#: that a loaded machine breaks.
SLEEP_LEDGER = """
import atexit as _atexit, sys as _sys, threading as _threading, time as _time
_real_sleep, _slept = _time.sleep, []
def _noted_sleep(seconds):
    caller = _sys._getframe(1).f_globals.get("__name__", "")
    if _threading.current_thread() is _threading.main_thread() and (
        caller == "__main__" or caller.startswith("flightlog")
    ):
        _slept.append(round(seconds, 3))
    _real_sleep(seconds)
_time.sleep = _noted_sleep
_atexit.register(lambda: print("slept:", _slept, flush=True))
"""


def slept(stdout: str) -> list[float]:
    """The main thread's sleeps a SLEEP_LEDGER child noted, in order."""
    line = next(line for line in reversed(stdout.splitlines()) if line.startswith("slept: "))
    return [float(s) for s in ast.literal_eval(line.removeprefix("slept: "))]


def needs(module: str) -> None:
    """Skip when ``module`` is not installed, without importing it: a framework that only the
    test's child processes run costs this process nothing (``pytest.importorskip`` imports it)."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")


def gone(pid: int, within: float) -> bool:
    """Whether process ``pid`` is gone (or a zombie nobody reaped yet) within ``within`` seconds:
    the tests' check that flightlog left nothing running."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def kill_if_alive(*pids: int) -> None:
    """SIGKILL what a failed test may have left running (a daemon the workload started); a pid
    already gone is fine."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


#: a process busy on one CPU, as another job on a shared machine is
_SPINNER = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


@contextmanager
def busy_cpu(count: int) -> Iterator[int]:
    """``count`` processes spinning on one CPU of this process's (yielded) for the block: put a
    workload, or a runner, on it to starve them of CPU as a busy machine does. Checks at the end
    that the spinners were spinning all along (a spinner that died would make the test vacuous)."""
    cpu = min(os.sched_getaffinity(0))
    spinners = [subprocess.Popen([sys.executable, "-c", _SPINNER, str(cpu)]) for _ in range(count)]
    try:
        yield cpu
        assert all(p.poll() is None for p in spinners), [p.returncode for p in spinners]
    finally:
        kill_if_alive(*(p.pid for p in spinners))
        for p in spinners:
            p.wait()
