"""A script that ends with ``sys.exit(n)`` is recorded with that status (argparse's usage error
exits 2, click and ``sys.exit(main())`` the same way): it used to be recorded as succeeded."""

from __future__ import annotations

from pathlib import Path

import pytest

import flightlog
from tests.helpers import run_script

# the status is decided in the process and carried as any record: one store is enough
pytestmark = pytest.mark.embedded_only("the exit status is decided in the process, whatever the store")

SCRIPT = """
import sys, flightlog
run = flightlog.init(project="exits", name="job")
run.log({{"loss": 0.5}}, step=1)
print(run.id, flush=True)
{ending}
"""


def ended(home: Path, ending: str) -> flightlog.models.RunInfo:  # type: ignore[name-defined]
    proc = run_script(home, SCRIPT.format(ending=ending), check=False)
    run_id = proc.stdout.split()[0]
    return flightlog.Client(home=home).run(run_id)


@pytest.mark.parametrize(
    ("ending", "code"),
    [
        ("sys.exit(2)", 2),
        ("sys.exit(main := 3)", 3),
        ("import argparse; argparse.ArgumentParser().parse_args(['--nope'])", 2),
        ("sys.exit(-1)", 255),
    ],
)
def test_a_failing_exit_status_fails_the_run(home: Path, ending: str, code: int) -> None:
    info = ended(home, ending)
    assert (info.status, info.exit_code, info.end_reason) == ("failed", code, "exit")


def test_an_exit_message_fails_the_run_with_it(home: Path) -> None:
    info = ended(home, "sys.exit('config file train.yaml has no key lr')")
    assert (info.status, info.exit_code) == ("failed", 1)
    assert (info.failure or {}).get("message") == "config file train.yaml has no key lr"


@pytest.mark.parametrize("ending", ["sys.exit(0)", "sys.exit()", "sys.exit(None)", "pass"])
def test_a_clean_exit_succeeds(home: Path, ending: str) -> None:
    info = ended(home, ending)
    assert (info.status, info.exit_code, info.end_reason) == ("succeeded", 0, "exit")


def test_an_exit_in_another_thread_ends_only_that_thread(home: Path) -> None:
    info = ended(home, "import threading; t = threading.Thread(target=sys.exit, args=(4,)); t.start(); t.join()")
    assert info.status == "succeeded"
