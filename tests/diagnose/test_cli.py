"""`flightlog diagnose | compare | rightsize` as users run them: real processes, real runs."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tests.helpers import cli, cli_json

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
FAIL = """
import pandas as pd
df = pd.DataFrame({"price_usd": [1.0, 2.0]})
print("rows", len(df))
df["price"].mean()
"""


def _run(home: Path, code: str, *args: str) -> str:
    script = home.parent / "job.py"
    script.write_text(code)
    proc = cli(
        home, "run", "--project", "shop", "--name", "prices", *args, "--", sys.executable, str(script), check=False
    )
    m = re.search(r"flightlog: run ([0-9a-f]{32}) started", proc.stderr)
    assert m, proc.stderr
    return m[1]


def test_diagnose_json_is_one_document_in_the_design_shape(home: Path) -> None:
    run = _run(home, FAIL)
    proc = cli(home, "diagnose", run[:8], "--format", "json")
    report = json.loads(proc.stdout)  # exactly one document: json.loads would refuse two
    assert set(report) == {"run", "status", "kind", "findings", "baseline", "baseline_choice", "runbook", "rightsizing"}
    assert report["run"] == run and report["status"] == "failed" and report["kind"] == "data"
    assert report["findings"], report
    confidences = [f["confidence"] for f in report["findings"]]
    assert confidences == sorted(confidences, reverse=True)
    for f in report["findings"]:
        assert set(f) == {"category", "confidence", "summary", "evidence", "next_steps"}
        assert 0 <= f["confidence"] <= 1
        for e in f["evidence"]:
            assert set(e) == {"source", "detail", "at"}
            assert e["at"] is None or ISO.match(e["at"])
    top = report["findings"][0]
    assert top["category"] == "data_error"
    assert "'price'" in top["summary"]
    assert any("KeyError: 'price'" in e["detail"] for e in top["evidence"])
    assert report["runbook"][0]["id"] == "renamed-column"
    # a run that failed in a second is too little evidence for a memory request (it says so)
    assert report["rightsizing"]["memory"]["recommended_bytes"] is None
    assert report["rightsizing"]["evidence"]["sufficient"] is False and report["rightsizing"]["evidence"]["reason"]


def test_diagnose_text_quotes_evidence_and_next_steps(home: Path) -> None:
    run = _run(home, FAIL)
    out = cli(home, "diagnose", run).stdout
    assert f"diagnosis of run {run}" in out, out
    assert "1. data_error" in out, out
    assert "KeyError: 'price'" in out
    assert "next" in out and "→" in out
    assert "runbook" in out and "rightsizing" in out


def test_team_runbook_from_the_working_directory(home: Path) -> None:
    run = _run(home, FAIL)
    (home.parent / "flightlog.runbook.yaml").write_text(
        "- id: prices-schema\n"
        "  title: The prices table changed its schema\n"
        "  match: {category: data_error, exception: price}\n"
        "  advice: ['Ask #data-platform which migration renamed the column']\n"
    )
    report = cli_json(home, "diagnose", run)
    assert report["runbook"][0]["id"] == "prices-schema"
    assert report["runbook"][0]["source"].endswith("flightlog.runbook.yaml:1")
    (home.parent / "flightlog.runbook.yaml").write_text("- id: x\n  title: y\n  mach: {}\n  advice: z\n")
    proc = cli(home, "diagnose", run, check=False)
    assert proc.returncode == 1
    assert "error: invalid runbook:" in proc.stderr
    assert "flightlog.runbook.yaml:3: entry 'x': unknown field 'mach'" in proc.stderr


def test_compare_and_rightsize_commands(home: Path) -> None:
    # enough samples for the peak to count (a run seen once says nothing: test_rightsize.py)
    ok = _run(home, "import time\ntime.sleep(0.6)\nprint('fine')", "--memory-limit", "1G", "--sample-interval", "0.1s")
    bad = _run(home, FAIL, "--param", "threshold=3")
    cmp = cli_json(home, "compare", bad, ok)
    assert cmp["run"] == bad and cmp["baseline"] == ok
    assert cmp["params"]["added"] == {"threshold": 3}
    text = cli(home, "compare", bad, ok).stdout
    assert "param threshold added: 3" in text
    rs = cli_json(home, "rightsize", "prices")
    assert rs["subject"] == {"name": "prices", "project": None, "runs": 2}
    assert [f["kind"] for f in rs["flags"]] == ["over_provisioned"]
    assert "rightsizing of 2 run(s) named 'prices'" in cli(home, "rightsize", "prices").stdout
    report = cli_json(home, "diagnose", bad)
    assert report["baseline"]["baseline"] == ok and report["baseline"]["chosen"] == "automatic"


def test_errors_are_one_line_and_exit_1(home: Path) -> None:
    _run(home, "print('x')")
    for args in (("diagnose", "nosuchrun"), ("compare", "nosuchrun", "other"), ("rightsize", "nosuchname")):
        proc = cli(home, *args, check=False)
        assert proc.returncode == 1, proc
        assert proc.stderr.startswith("error: "), proc.stderr
        assert proc.stdout == ""


def test_without_a_run_the_usage_error_names_the_newest_one(home: Path) -> None:
    empty = cli(home, "diagnose", check=False)
    assert empty.returncode == 2 and "there is no run yet: flightlog run -- python train.py" in empty.stderr
    _run(home, "print('first')")
    newest = _run(home, FAIL)
    proc = cli(home, "diagnose", check=False)
    assert proc.returncode == 2 and proc.stdout == "", proc
    assert f"the newest run is {newest[:12]} (prices, failed, project shop, " in proc.stderr, proc.stderr
    assert f"flightlog diagnose {newest[:12]}" in proc.stderr  # the command, one copy away


def test_a_param_that_names_the_missing_column_is_evidence_and_a_next_step(home: Path) -> None:
    run = _run(home, FAIL, "--param", "column=price", "--param", "other=price_usd")
    (top, *_) = cli_json(home, "diagnose", run[:8])["findings"]
    assert top["category"] == "data_error", top
    params = [e["detail"] for e in top["evidence"] if e["source"] == "params"]
    assert params == ["'price' is the value of param column"]  # price_usd is a column the input has
    assert "If the input is right, param column is not: rerun with column set to a column it has." in top["next_steps"]


def test_a_param_that_names_the_missing_file_by_its_file_name_is_evidence(home: Path) -> None:
    run = _run(home, "import pandas as pd\npd.read_csv('data/train.csv')\n", "--param", "train=/mnt/data/train.csv")
    (top, *_) = cli_json(home, "diagnose", run[:8])["findings"]
    assert top["category"] == "missing_file", top
    assert {
        "source": "params",
        "detail": "param train names a file of the same name as 'data/train.csv' (train=/mnt/data/train.csv)",
        "at": None,
    } in top["evidence"]
    assert any(s.startswith("The path is param train's (train=/mnt/data/train.csv)") for s in top["next_steps"])
