"""``init()`` alone: its console output becomes log events (passed through unchanged), its
uncaught exceptions fail the run with the traceback as one stderr event, and it says in one
line on stderr where the run went."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import flightlog
from flightlog.models import RunInfo
from tests.helpers import child_env
from tests.helpers import run_script as _run_script

FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))
BANNER = re.compile(r"^flightlog: run ([0-9a-f]{12}) in project (\S+) → (.+) \(look: (.+)\)$", re.M)

embedded = pytest.mark.embedded_only("console capture happens in the process, before any transport")

CHATTY = """
    import logging, sys
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    import flightlog
    run = flightlog.init(project="p", resources=False)
    print("epoch 1 loss=0.5")
    logging.getLogger("train").warning("learning rate is high")
    sys.stderr.write("progress 50%\\n")
    print("api token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB in the output")
    print("no newline at the end", end="")
"""


def run_script(
    home: Path, code: str, *, env: dict[str, str] | None = None, **kw: Any
) -> subprocess.CompletedProcess[str]:
    """The helpers' ``run_script`` with the console capture at its default (the helpers turn it off)."""
    return _run_script(home, code, env=env or console_env(home), **kw)


def console_env(home: Path, **extra: str) -> dict[str, str]:
    return child_env(home, **{"FLIGHTLOG_CONSOLE": "auto", **extra})


def _only_run() -> RunInfo:
    [info] = flightlog.Client().runs()
    return info


def _without_banner(stderr: str) -> str:
    return BANNER.sub("", stderr).lstrip("\n")


@embedded
def test_prints_and_logging_lines_land_as_events_redacted_and_pass_through_unchanged(home: Path) -> None:
    proc = run_script(home, CHATTY)
    info = _only_run()
    events = flightlog.Client().logs(info.id)
    by_text = {e.message: e for e in events}
    assert by_text["epoch 1 loss=0.5"].stream == "stdout"
    warning = by_text["WARNING train: learning rate is high"]  # a handler made before init() is captured too
    assert warning.stream == "stderr"
    assert by_text["progress 50%"].stream == "stderr"
    assert by_text["no newline at the end"].stream == "stdout"
    secret = [e.message for e in events if "api token" in e.message]
    assert len(secret) == 1 and "ghp_0123456789" not in secret[0] and "REDACTED" in secret[0]
    # what the user sees is what the script wrote, byte for byte (the secret too: it is theirs)
    plain = run_script(home, CHATTY, env=console_env(home, FLIGHTLOG_CONSOLE="off", FLIGHTLOG_QUIET="1"))
    assert (
        proc.stdout
        == plain.stdout
        == (
            "epoch 1 loss=0.5\napi token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB in the output\nno newline at the end"
        )
    )
    assert _without_banner(proc.stderr) == plain.stderr == "WARNING train: learning rate is high\nprogress 50%\n"
    assert info.status == "succeeded"
    assert info.counters["log_events"] == len(events) and info.counters["redactions"] >= 1


@embedded
@pytest.mark.parametrize("how", ["env", "argument"])
def test_console_capture_can_be_turned_off(home: Path, how: str) -> None:
    code = CHATTY.replace("resources=False)", "resources=False, console=False)") if how == "argument" else CHATTY
    run_script(home, code, env=console_env(home, FLIGHTLOG_CONSOLE="off") if how == "env" else None)
    assert flightlog.Client().logs(_only_run().id) == []


def test_a_bad_console_setting_is_refused_clearly(home: Path) -> None:
    proc = run_script(
        home,
        "import flightlog; flightlog.init(project='p')",
        check=False,
        env=console_env(home, FLIGHTLOG_CONSOLE="sometimes"),
    )
    assert (
        proc.returncode == 1 and "FLIGHTLOG_CONSOLE='sometimes' is not valid: use one of auto, on, off" in proc.stderr
    )


@embedded
def test_under_flightlog_run_output_is_captured_once_by_the_runner(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "chatty.py"
    script.write_text("import flightlog\nrun = flightlog.init()\nprint('said once', flush=True)\n")
    proc = subprocess.run(
        [FLIGHTLOG, "run", "--project", "p", "--", sys.executable, str(script)],
        env=console_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "said once\n"
    assert [e.message for e in flightlog.Client().logs(_only_run().id) if "said once" in e.message] == ["said once"]
    assert "in project" not in proc.stderr  # the runner says where the run went, not the SDK inside it


@embedded
def test_the_logging_handler_records_each_line_once_with_console_capture(home: Path) -> None:
    run_script(
        home,
        """
        import logging
        import flightlog
        run = flightlog.init(project="p", resources=False)
        log = logging.getLogger("train")
        log.addHandler(flightlog.logging_handler())
        log.warning("one event, not two")
    """,
    )
    events = [e for e in flightlog.Client().logs(_only_run().id) if "one event, not two" in e.message]
    assert len(events) == 1 and events[0].level == 30


@embedded
def test_uncaught_exception_keeps_the_users_own_hook_and_fails_the_run_with_one_traceback_event(home: Path) -> None:
    proc = run_script(
        home,
        """
        import sys
        def mine(kind, exc, tb):
            print(f"my hook saw {kind.__name__}", file=sys.stderr)
            sys.__excepthook__(kind, exc, tb)
        sys.excepthook = mine
        import flightlog
        flightlog.init(project="p", resources=False)
        print("before the crash")
        {}["missing_key"]
    """,
        check=False,
    )
    assert proc.returncode == 1 and "my hook saw KeyError" in proc.stderr and "KeyError: 'missing_key'" in proc.stderr
    info = _only_run()
    assert info.status == "failed" and info.end_reason == "exception" and info.exit_code == 1
    assert info.failure is not None and info.failure["exception"] == "KeyError"
    assert info.failure["last_lines"] == ["before the crash"]
    errors = flightlog.Client().logs(info.id, level="error")
    assert [(e.stream, e.message.splitlines()[0], e.message.splitlines()[-1]) for e in errors] == [
        ("stderr", "Traceback (most recent call last):", "KeyError: 'missing_key'")
    ]
    assert all("my hook saw" not in e.message for e in flightlog.Client().logs(info.id))  # printed, not recorded twice


@embedded
def test_a_hook_set_after_init_that_replaces_ours_still_leaves_a_failed_run(home: Path) -> None:
    proc = run_script(
        home,
        """
        import sys
        import flightlog
        flightlog.init(project="p", resources=False)
        sys.excepthook = lambda kind, exc, tb: print("replaced", file=sys.stderr)
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)")
    """,
        check=False,
    )
    assert proc.returncode == 1 and "replaced" in proc.stderr
    info = _only_run()
    assert info.status == "failed" and info.end_reason == "exception"
    assert info.failure is not None and "mat1 and mat2" in info.failure["message"]


@embedded
def test_an_exception_that_ends_a_thread_is_an_error_event_not_the_runs_end(home: Path) -> None:
    proc = run_script(
        home,
        """
        import threading
        import flightlog
        run = flightlog.init(project="p", resources=False)
        thread = threading.Thread(target=lambda: 1 / 0, name="loader")
        thread.start()
        thread.join()
        print("main goes on")
    """,
    )
    assert "ZeroDivisionError" in proc.stderr and "main goes on" in proc.stdout
    info = _only_run()
    assert info.status == "succeeded"
    [error] = flightlog.Client().logs(info.id, level="error")
    assert error.stream == "stderr" and error.component == "thread loader"
    assert "Exception in thread loader" in error.message and "ZeroDivisionError: division by zero" in error.message


def test_init_says_where_the_run_went_once_on_stderr(home: Path) -> None:
    proc = run_script(home, "import flightlog\nrun = flightlog.init(project='vision')\nprint(run.id)\n")
    run_id = proc.stdout.strip()
    [match] = BANNER.finditer(proc.stderr)
    assert match[1] == run_id[:12] and match[2] == "vision"
    url = console_env(home).get("FLIGHTLOG_URL")
    if url:
        assert match[3] == url and match[4] == f"open {url}, or flightlog runs show {run_id[:8]}"
    else:
        assert match[3] == str(home) or match[3].startswith("the postgresql store")
        assert match[4] == f"flightlog ui, or flightlog runs show {run_id[:8]}"
    assert "token" not in proc.stderr.lower() and "password" not in proc.stderr.lower()


def test_flightlog_quiet_silences_the_line(home: Path) -> None:
    proc = run_script(
        home, "import flightlog\nflightlog.init(project='vision')\n", env=console_env(home, FLIGHTLOG_QUIET="1")
    )
    assert proc.stderr == ""


@embedded
def test_a_sweeps_trials_do_not_each_print_a_line(home: Path) -> None:
    proc = run_script(
        home,
        """
        import flightlog
        parent = flightlog.init(project="p", resources=False)
        for i in range(3):
            flightlog.init(project="p", parent=parent, resources=False).finish()
    """,
    )
    assert len(BANNER.findall(proc.stderr)) == 1


@embedded
def test_a_forked_child_prints_through_and_never_hangs_on_the_capture(home: Path) -> None:
    proc = run_script(
        home,
        """
        import os, sys, time
        import flightlog
        run = flightlog.init(project="p", resources=False)
        for i in range(20):
            for j in range(2000):
                print(f"parent {i}.{j}")
            sys.stdout.flush()  # (else the child inherits, and writes, the parent's buffer)
            pid = os.fork()
            if pid == 0:
                print(f"child {i}", flush=True)
                os._exit(0)
            os.waitpid(pid, 0)
        run.finish()
    """,
        timeout=120,
    )
    assert all(f"child {i}\n" in proc.stdout for i in range(20))
    events = flightlog.Client().logs(_only_run().id, grep="parent")
    assert len(events) == 40_000  # the parent's own output, every line; the children's went to the terminal only


@embedded
def test_flightlogs_own_messages_are_printed_not_recorded_as_the_workloads_output(home: Path) -> None:
    proc = run_script(
        home,
        """
        import flightlog
        from flightlog.sdk.writer import warn
        run = flightlog.init(project="p", resources=False)
        warn("a message of flightlog's own")
        print("the workload's own line")
    """,
    )
    assert "flightlog: a message of flightlog's own" in proc.stderr
    assert [e.message for e in flightlog.Client().logs(_only_run().id)] == ["the workload's own line"]
