"""flightlog's own threads never leave an import half done for a fork to copy.

A thread importing a module holds that module's import lock, and ``os.fork()`` copies the lock,
taken, into a child that lacks the thread: the child's first import of that module then waits
forever. The SDK's threads (the shipper, the resource sampler) run just after ``init()``, when
training code forks its data-loader workers, and they first used code they had not imported yet
(the store's driver, the HTTP client, package metadata, the redactor). A child forked after
``init()`` that recorded on the run hung in about 1 run of 3 on PostgreSQL
(``test_durability.py::test_a_forked_child_attaches_and_writes_a_journal_only_when_it_records``).

Those threads now import only under :func:`flightlog.forksafe.no_fork`, which a fork waits for.
This test watches every import of a real run, on every store, and names each one such a thread
made outside the guard: it fails on every run, not one in three.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import run_script

WATCHED_RUN = """
import json, sys, threading
import flightlog.forksafe as forksafe

unguarded = []

class ImportWatch:  # asked first for every module not imported yet, on whichever thread imports it
    def find_spec(self, name, path=None, target=None):
        thread = threading.current_thread()
        if thread.name.startswith("flightlog-") and not forksafe._lock._is_owned():
            unguarded.append(f"{name} (on {thread.name})")
        return None

sys.meta_path.insert(0, ImportWatch())
import flightlog

run = flightlog.init(project="p", params={"lr": 0.1, "api_token": "abc123"}, tags={"team": "vision"})
with run.stage("train"):
    for step in range(50):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
run.note("done")
run.finish()
print(json.dumps(unguarded))
"""


def test_the_sdk_threads_import_nothing_a_fork_could_split(home: Path) -> None:
    unguarded = json.loads(run_script(home, WATCHED_RUN).stdout.splitlines()[-1])
    assert unguarded == [], f"imported by a flightlog thread outside forksafe.no_fork(): {unguarded}"
