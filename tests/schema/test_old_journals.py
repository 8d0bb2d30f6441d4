"""A journal written by the code before the schema (``main``'s, from ``git archive``) still reads,
and every record in it passes the schema's check as its kind's Struct."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from flightlog.journal import list_journals
from flightlog.journal.format import read_records
from flightlog.schema import check_record, kind_struct
from tests.helpers import child_env

ROOT = Path(__file__).resolve().parents[2]
BASE_REF = os.environ.get("FLIGHTLOG_SCHEMA_BASE_REF", "main")

WRITE = """
import flightlog
run = flightlog.init(project="old", name="before the schema", params={"lr": 0.1, "cfg": {"depth": 3}},
                     tags={"team": "a"})
for step in range(50):
    run.log({"loss": 1.0 / (step + 1), "acc": step / 50}, step=step)
print("hello from the workload")
run.note("a note")
run.log_evidence("custom", "thing", {"rows": 3})
run.finish()
print(run.id)
"""


@pytest.fixture(scope="module")
def base_src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proc = subprocess.run(["git", "-C", str(ROOT), "archive", BASE_REF, "src"], capture_output=True, timeout=120)
    if proc.returncode != 0:
        pytest.skip(f"no {BASE_REF} ref to write an old journal with: {proc.stderr.decode()[:200]}")
    dest = tmp_path_factory.mktemp("base")
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest / "src"


def test_a_journal_written_before_the_schema_reads_and_checks(tmp_path: Path, base_src: Path) -> None:
    home = tmp_path / "home"
    env = child_env(
        home, FLIGHTLOG_MODE="offline", FLIGHTLOG_KEEP_JOURNAL="1", PYTHONPATH=str(base_src), FLIGHTLOG_CONSOLE="auto"
    )
    proc = subprocess.run(
        [sys.executable, "-c", WRITE], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    run_id = proc.stdout.strip().splitlines()[-1]
    journals = list_journals(home, run_id)
    assert journals, f"the old code left no journal under {home}"
    seen = set()
    for journal in journals:
        result = read_records(journal.path.read_bytes())
        assert result.damage is None
        for _, rec in result.records:
            checked = check_record(rec)
            assert isinstance(checked, kind_struct(rec["k"]))  # type: ignore[arg-type]
            seen.add(rec["k"])
    assert {"writer", "run", "params", "tags", "context", "metrics", "note", "evidence", "writer_end"} <= seen
    shutil.rmtree(home, ignore_errors=True)
