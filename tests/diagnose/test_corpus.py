"""The diagnosis against real failure messages quoted from public issue trackers (PyTorch, NCCL,
Hugging Face, Ray, TensorFlow, XGBoost, AWS, Google Cloud, Azure, W&B): see
``corpus/real_failures.yaml`` for each message, its category and the thread it comes from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from flightlog.diagnose.classify import classify_failure
from flightlog.diagnose.taxonomy import CATEGORIES

CORPUS: dict[str, Any] = yaml.safe_load((Path(__file__).parent / "corpus" / "real_failures.yaml").read_text())
FAILURES: list[dict[str, Any]] = CORPUS["failures"]
BENIGN: list[dict[str, Any]] = CORPUS["benign"]


def _id(entry: dict[str, Any]) -> str:
    return f"{entry['expected']}:{entry['source'].rsplit('/', 3)[-3]}#{entry['source'].rsplit('/', 1)[-1]}"


def test_the_corpus_is_wide_and_sourced() -> None:
    assert len(FAILURES) >= 60
    for entry in FAILURES:
        assert entry["expected"] in CATEGORIES, entry
        assert entry["source"].startswith("https://github.com/"), entry
        assert entry["message"].strip(), entry
    stacks = {e["source"].split("/")[3].lower() for e in FAILURES}
    assert {"pytorch", "nvidia", "huggingface", "ray-project", "tensorflow", "dmlc", "boto", "googleapis", "azure", "wandb"} <= stacks


@pytest.mark.parametrize("entry", FAILURES, ids=[_id(e) for e in FAILURES])
def test_real_failure_is_named(entry: dict[str, Any]) -> None:
    """The message as the last log event of a run that exited 1."""
    category, confidence = classify_failure(exit_code=1, signal=None, timed_out=False, oom_killed=False,
                                            traceback_text=None, last_lines=["starting", entry["message"]])
    assert (category, confidence >= 0.4) == (entry["expected"], True), f"{category} {confidence}: {entry['message'][:200]}"


@pytest.mark.parametrize("entry", BENIGN, ids=[e["message"][:40] for e in BENIGN])
def test_benign_line_is_not_a_lead(entry: dict[str, Any]) -> None:
    category, confidence = classify_failure(exit_code=1, signal=None, timed_out=False, oom_killed=False,
                                            traceback_text=None, last_lines=[entry["message"]])
    assert confidence < 0.5, (category, confidence)


def _first_of_each_stack() -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for entry in FAILURES:
        seen.setdefault(entry["source"].split("/")[3].lower(), entry)
    return [seen[k] for k in ("pytorch", "nvidia", "huggingface", "ray-project", "tensorflow", "dmlc", "boto", "googleapis",
                              "azure", "wandb") if k in seen]


PRINT_AND_FAIL = "import sys\nsys.stderr.write(open(sys.argv[1]).read() + '\\n')\nsys.exit(1)\n"


@pytest.mark.embedded_only("the same report over either transport (tests/diagnose/test_api.py covers http)")
@pytest.mark.parametrize("entry", _first_of_each_stack(), ids=lambda e: _id(e))
def test_real_failure_under_flightlog_run(home: Path, entry: dict[str, Any]) -> None:
    """The full diagnosis of a run whose last words were the message (stderr, exit 1)."""
    import re
    import sys

    from flightlog.client import Client
    from tests.helpers import cli

    (home.parent / "message.txt").write_text(entry["message"])
    (home.parent / "fail.py").write_text(PRINT_AND_FAIL)
    proc = cli(home, "run", "--project", "corpus", "--", sys.executable, str(home.parent / "fail.py"),
               str(home.parent / "message.txt"), check=False)
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        report = c.diagnose(run)
    top = report["findings"][0]
    assert top["category"] == entry["expected"] and top["confidence"] >= 0.5, report["findings"]


@pytest.mark.embedded_only("the same report over either transport")
def test_benign_lines_in_a_successful_run_are_no_lead(home: Path) -> None:
    import sys

    from flightlog.client import Client
    from tests.helpers import cli

    (home.parent / "benign.txt").write_text("\n".join(e["message"] for e in BENIGN))
    (home.parent / "ok.py").write_text("import sys\nfor line in open(sys.argv[1]):\n    print(line, end='')\n")
    proc = cli(home, "run", "--project", "corpus", "--", sys.executable, str(home.parent / "ok.py"), str(home.parent / "benign.txt"))
    import re

    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        report = c.diagnose(run)
    assert all(f["confidence"] < 0.5 for f in report["findings"]), report["findings"]
    assert report["kind"] == "none"
