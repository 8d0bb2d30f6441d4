"""Failures that arrive wrapped — a Ray task's exception inside ``RayTaskError``/``ActorDiedError``,
a notebook cell's inside nbclient's ``CellExecutionError``, a database's inside SQLAlchemy's
and then a library's own error — and the waits and limits of orchestrated jobs, each as a
complete run under ``flightlog run`` diagnosed in full. Each was misread on a complete run
written for the purpose (issue 29, the eleventh set: sweeps, orchestrated jobs, wrapped errors)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.diagnose.test_issue29_runs import _lead, _run, _top
from tests.diagnose.test_ranker import _lead as _lead_of_text
from tests.diagnose.test_ranker import _printed_traceback

pytestmark = pytest.mark.embedded_only("the report is the same over either transport (tests/diagnose/test_api.py)")

_NBCLIENT = pytest.mark.skipif(
    importlib.util.find_spec("nbclient") is None or importlib.util.find_spec("ipykernel") is None,
    reason="runs a notebook with nbclient and the Python kernel",
)

# What a Ray 2 job printed when an actor's __init__ raised (recorded from a real run): the
# actor's frames and its exception line come inside ActorDiedError's message, at the margin.
RAY_ACTOR_DIED = r'''
import sys
sys.stderr.write("""Traceback (most recent call last):
  File "/jobs/score.py", line 20, in <module>
    results = ray.get([scorer.score.remote(b) for b in batches])
              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/ray/_private/worker.py", line 3009, in get
    values, debugger_breakpoint = worker.get_objects(
                                  ^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/ray/_private/worker.py", line 1055, in get_objects
    raise value
ray.exceptions.ActorDiedError: The actor died because of an error raised in its creation task, \x1b[36mray::Scorer.__init__()\x1b[39m (pid=19257, ip=192.0.2.2, actor_id=5d04e8000c3498f827423ab401000000, repr=<score.Scorer object at 0x7fe39e3f8250>)
  File "/jobs/score.py", line 10, in __init__
    with open(model_path, "rb") as f:
         ^^^^^^^^^^^^^^^^^^^^^^
FileNotFoundError: [Errno 2] No such file or directory: '/models/churn/v7/model.pkl'
""")
sys.stderr.flush()
# the actor's own log, forwarded by Ray to the driver's output after the driver's traceback
tag = "\x1b[36m(Scorer pid=19257)\x1b[0m "
sys.stderr.write(tag + "Exception raised in creation task: The actor died because of an error raised in its creation task, \x1b[36mray::Scorer.__init__()\x1b[39m (pid=19257, ip=192.0.2.2, actor_id=5d04e8000c3498f827423ab401000000, repr=<score.Scorer object at 0x7fe39e3f8250>)\n")
for line in ('           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^', '           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^',
             '  File "/jobs/score.py", line 10, in __init__', '    with open(model_path, "rb") as f:',
             '         ^^^^^^^^^^^^^^^^^^^^^^', "FileNotFoundError: [Errno 2] No such file or directory: '/models/churn/v7/model.pkl'"):
    sys.stderr.write(tag + line + "\n")
sys.exit(1)
'''


def test_an_actor_s_exception_inside_ray_s_wrapper_is_the_cause(home: Path) -> None:
    """The actor's ``FileNotFoundError`` is the last line of ``ActorDiedError``'s message. The
    capture cut it off into an event of its own, and the real Ray job's diagnosis read the
    wrapper's words: code_error 0.49 (missing_file 0.99 after). The cut is tested where it was
    made (tests/capture/test_capture_grouping.py); this replay of the job's output, which read
    right before as well, guards the whole reading."""
    _, report = _run(home, RAY_ACTOR_DIED)
    top = _lead(report, "missing_file")
    assert "model.pkl" in top["summary"], top


RAY_GET_TIMEOUT = r'''
import sys
print("episode 2 reward 3.0", flush=True)
sys.stderr.write("""Traceback (most recent call last):
  File "/jobs/evaluate.py", line 20, in <module>
    reward = ray.get(ref, timeout=8)
             ^^^^^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/ray/_private/worker.py", line 3009, in get
    values, debugger_breakpoint = worker.get_objects(
                                  ^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/ray/_private/worker.py", line 1007, in get_objects
    ] = self.core_worker.get_objects(
        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "python/ray/_raylet.pyx", line 3471, in ray._raylet.CoreWorker.get_objects
  File "python/ray/includes/common.pxi", line 107, in ray._raylet.check_status
ray.exceptions.GetTimeoutError: Get timed out: some object(s) not ready.
""")
sys.exit(1)
'''


def test_ray_get_past_its_timeout_is_a_time_limit(home: Path) -> None:
    """``ray.get(refs, timeout=…)`` on the run's own tasks ran out: a deadline the process set
    on its own work, as a future's ``result(timeout=…)`` is (slow_startup 0.45 before)."""
    _, report = _run(home, RAY_GET_TIMEOUT)
    _lead(report, "timeout")


NOTEBOOK_JOB = """
import nbformat, pandas as pd
from nbclient import NotebookClient
pd.DataFrame({"region_code": ["N", "S"], "revenue": [10.0, 12.5]}).to_csv("sales.csv", index=False)
nb = nbformat.v4.new_notebook()
nb.cells = [
    nbformat.v4.new_code_cell("import pandas as pd\\ndf = pd.read_csv('sales.csv')"),
    nbformat.v4.new_code_cell(CELL),
]
NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3").execute()
"""


@_NBCLIENT
def test_a_notebook_cell_s_error_inside_nbclient_s_wrapper_is_the_cause(home: Path) -> None:
    """nbclient prints the cell's source and its IPython traceback inside ``CellExecutionError``'s
    message, with blank lines between: the cell's ``KeyError`` raised in pandas was never read,
    and the wrapper's "An error occurred while executing the following cell:" led as
    dependency_error 0.26 (data_error after)."""
    script = NOTEBOOK_JOB.replace("CELL", repr("df.groupby('region')['revenue'].sum()")).replace("TIMEOUT", "60")
    _, report = _run(home, script)
    top = _lead(report, "data_error")
    assert "region" in top["summary"], top


@_NBCLIENT
def test_a_notebook_cell_past_its_time_limit_is_a_timeout(home: Path) -> None:
    """nbclient's per-cell limit (``CellTimeoutError``) was a timeout at 0.24 only; the run's last
    event is the blank line that ends the cell's preview, and reading it crashed ``diagnose``
    (IndexError) once timeout was the category."""
    script = NOTEBOOK_JOB.replace("CELL", repr("import time\nfor i in range(600):\n    time.sleep(0.05)"))
    _, report = _run(home, script.replace("TIMEOUT", "3"))
    _lead(report, "timeout")


SQLITE_FULL = """
import sqlalchemy as sa

class StorageError(Exception):
    pass

engine = sa.create_engine("sqlite:///trials.db")

@sa.event.listens_for(engine, "connect")
def cap(dbapi_connection, record):
    # the volume's room, as SQLite sees it: a database that may not grow past a few pages
    dbapi_connection.execute("PRAGMA max_page_count = 8")

def record(rows):
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("CREATE TABLE IF NOT EXISTS attrs (k TEXT, v TEXT)"))
            conn.execute(sa.text("INSERT INTO attrs VALUES (:k, :v)"), rows)
    except sa.exc.OperationalError as e:
        raise StorageError("An exception is raised during the commit.") from e

record([{"k": f"fold_{i}", "v": "x" * 2000} for i in range(200)])
"""


def test_a_driver_error_under_sqlalchemy_s_background_line_keeps_its_chain(home: Path) -> None:
    """SQLAlchemy prints "(Background on this error at: …)" after its exception line, at the
    margin: an event of its own, which cut the chain there, so the wrapper raised from it (an
    Optuna storage's ``StorageInternalError``) was read alone: bad_parameter 0.23 for SQLite's
    "database or disk is full" (disk_full after)."""
    _, report = _run(home, SQLITE_FULL)
    _lead(report, "disk_full")


# a notebook job that prints its cell's outputs, a caught traceback among them, on one stream
CAUGHT_THEN_FINISHED = """
import sys, traceback
vals = []
for r in ["1.5", "2.0", "n/a", "4.25"]:
    try:
        vals.append(float(r))
    except ValueError:
        traceback.print_exc(file=sys.stdout)
print("notebook finished")
"""


def test_a_caught_traceback_then_the_end_of_the_work_in_a_run_that_exited_0(home: Path) -> None:
    """A traceback the job caught and printed, then one line that says the work finished, in a
    run that exited 0: the traceback was not the ending (data_error 0.70 on a healthy run)."""
    _, report = _run(home, CAUGHT_THEN_FINISHED)
    assert _top(report)[1] < 0.5, report["findings"][:2]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # Keras's refusal of a name it does not know, given as a string: code_error 0.53
        (
            "import os\nos.environ.setdefault('KERAS_BACKEND', 'torch')\nimport keras\n"
            "keras.losses.get('binary_crossentropy_loss')\n",
            "bad_parameter",
        ),
        # a notebook whose kernel the image lacks: dependency_error 0.32
        (
            "from jupyter_client.kernelspec import KernelSpecManager\nKernelSpecManager().get_kernel_spec('ir')\n",
            "dependency_error",
        ),
    ],
    ids=["keras-loss-identifier", "notebook-kernel-missing"],
)
def test_a_library_s_words_for_a_refused_name(tmp_path: Path, code: str, expected: str) -> None:
    """Two libraries' words for a name they refused, read wrongly or below 0.5 on complete runs:
    Keras's "Could not interpret loss identifier" and jupyter_client's ``NoSuchKernel``."""
    module = {"bad_parameter": "keras", "dependency_error": "jupyter_client"}[expected]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    category, confidence = _lead_of_text(_printed_traceback(tmp_path, code))
    assert category == expected and confidence >= 0.5, (category, confidence)


POLARS_LAZY = """
import polars as pl
pl.DataFrame({"sku": ["a", "b"] * 50, "qty": [1, 2] * 50, "unit_price_eur": [9.5] * 100}).write_parquet("orders.parquet")
q = (pl.scan_parquet("orders.parquet")
       .with_columns((pl.col("qty") * pl.col("unit_price")).alias("revenue"))
       .group_by("sku").agg(pl.col("revenue").sum()))
print(q.collect())
"""


@pytest.mark.skipif(importlib.util.find_spec("polars") is None, reason="runs a polars query")
def test_a_column_a_polars_lazy_query_cannot_find_is_the_data_s(home: Path) -> None:
    """polars raises ``ColumnNotFoundError`` ('unable to find column "unit_price"; valid columns:
    [...]') when the query is collected, and prints the plan after it: data_error 0.39 only."""
    _, report = _run(home, POLARS_LAZY)
    _lead(report, "data_error")
