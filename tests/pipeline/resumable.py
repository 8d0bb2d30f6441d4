"""A pipeline that fails until it is mended, for the tests of what a resume keeps (`pipeline
show`, the UI's pipeline tab): prepare → (train, a check gate) → report. ``train`` fails inside a
library under a site-packages folder, so its traceback ends in the library's frames with the
user's own line further up, until a file ``fixed`` exists; the gate fails until expect.yaml asks
for one row (``mend`` does both)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

PY = sys.executable

LIBRARY = """
def forward(rows):
    return _check(rows)


def _check(rows):
    raise ValueError(f"shape mismatch: {rows} rows vs 4")
"""
TRAIN = """
import os
import fakelib


def step():
    if not os.path.exists("fixed"):
        fakelib.forward(3)


step()
"""


def write_pipeline(folder: Path, name: str, project: str | None = None) -> Path:
    """The pipeline file and everything its steps read, in ``folder``; the file's path."""
    lib = folder / "venv" / "lib" / "python3.11" / "site-packages"
    lib.mkdir(parents=True)
    (lib / "fakelib.py").write_text(LIBRARY)
    (folder / "train.py").write_text(f"import sys; sys.path.insert(0, {str(lib)!r})\n" + TRAIN)
    (folder / "rows.csv").write_text("x\n1\n2\n")
    (folder / "expect.yaml").write_text("row_count: {min: 100}\n")
    path = folder / "p.yaml"
    path.write_text(
        f"name: {name}\n"
        + (f"project: {project}\n" if project else "")
        + textwrap.dedent(f"""\
        steps:
          prepare: {{command: [{PY}, -c, "pass"]}}
          train: {{command: [{PY}, train.py], needs: [prepare]}}
          check: {{needs: [prepare], gate: [{{expect: expect.yaml, data: rows.csv}}]}}
          report: {{command: [{PY}, -c, "pass"], needs: [train, check]}}
    """)
    )
    return path


def mend(folder: Path) -> None:
    """What makes the next attempt pass: train's file and a gate that asks for one row."""
    (folder / "fixed").touch()
    (folder / "expect.yaml").write_text("row_count: {min: 1}\n")
