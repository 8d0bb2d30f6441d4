"""The diagnosis against real failure messages quoted from public issue trackers across the ML
stack: see ``tests/diagnose/corpus/README.md``.

SPLIT RULE (issue 29): an entry is held out when the GitHub repository of its source
(``owner/name``, lower-cased) hashes into the held-out share —
``int(sha256(repository)[:8], 16) % 100 < 35`` — so whole repositories are on one side and a
repository is never on both. The ranker is trained on ``dev.yaml`` only; ``heldout.yaml`` is
only ever scored, here and by ``python -m tests.diagnose.corpus.endtoend`` (whole runs).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flightlog.diagnose.taxonomy import FAILURE_CATEGORIES
from tests.diagnose.corpus.endtoend import failure_workload, healthy_workloads, run_workload
from tests.diagnose.corpus.fold import EXPECTED, validate
from tests.diagnose.corpus.load import HELD_OUT_PERCENT, SETS, held_out, load_set, repository
from tests.diagnose.corpus.score import LEAD, classify_benign, classify_message, score_set

DEV = load_set("dev")
HELDOUT = load_set("heldout")
FAILURES: list[dict[str, Any]] = DEV["failures"] + HELDOUT["failures"]
BENIGN: list[dict[str, Any]] = DEV["benign"] + HELDOUT["benign"]

#: what the held-out side scores at the commit that trained the shipped model (README.md): a
#: floor, so that a change that makes the diagnosis worse on data nobody tuned on fails here.
#: The bar of issue 29 (90 % top-1 at 0.5, 97 % in the right kind) is not met: see README.md.
HELDOUT_FLOOR = {"top1_at_0_5": 0.65, "right_kind": 0.83}
#: the development side, trained on: held to more
DEV_FLOOR = {"top1_at_0_5": 0.70, "right_kind": 0.88}


def _id(entry: dict[str, Any]) -> str:
    return f"{entry['expected']}:{entry['source'].rsplit('/', 3)[-3]}#{entry['source'].rsplit('/', 1)[-1]}"


def test_the_corpus_is_wide_and_sourced() -> None:
    assert len(FAILURES) >= 900 and len(BENIGN) >= 100
    for entry in FAILURES:
        assert validate(entry, "failures") is None, entry
    for entry in BENIGN:
        assert entry["message"].strip(), entry
    assert len({" ".join(e["message"].split()) for e in FAILURES + BENIGN}) == len(FAILURES) + len(BENIGN), (
        "an entry is repeated"
    )
    libraries = {e["library"] for e in FAILURES if e.get("library")}
    assert len(libraries) >= 25, sorted(libraries)
    assert len({repository(e["source"]) for e in FAILURES}) >= 300
    for data in (DEV, HELDOUT):  # every category a message can show, on both sides
        assert {e["expected"] for e in data["failures"]} >= set(EXPECTED)


def test_the_split_is_the_recorded_rule() -> None:
    """Split by repository: the rule decides every entry's side, no repository is on both, and
    the held-out side holds at least 30 % of the failures."""
    sides: dict[str, set[str]] = {}
    for name, data in (("dev", DEV), ("heldout", HELDOUT)):
        for entry in data["failures"] + data["benign"]:
            assert held_out(entry) == (name == "heldout"), (name, entry.get("source"))
            sides.setdefault(repository(entry.get("source", "")) or "", set()).add(name)
    assert all(len(s) == 1 for s in sides.values())
    assert len(HELDOUT["failures"]) / len(FAILURES) >= 0.30
    header = (Path(__file__).parent / "corpus" / "heldout.yaml").read_text().split("failures:", 1)[0]
    assert f"% 100 < {HELD_OUT_PERCENT}" in header and "repository" in header


@pytest.mark.parametrize("name", SETS)
def test_message_level_scores_hold(name: str) -> None:
    """The message-level score of each side, against its recorded floor; no benign line is a lead."""
    report = score_set(name)
    floor = HELDOUT_FLOOR if name == "heldout" else DEV_FLOOR
    assert report["top1_at_0_5"] >= floor["top1_at_0_5"], report["top1_at_0_5"]
    assert report["right_kind"] >= floor["right_kind"], report["right_kind"]
    assert len(report["benign_at_0_5"]) <= (1 if name == "heldout" else 0), report["benign_at_0_5"]


def test_calibration_is_honest_on_the_held_out_side() -> None:
    """Of the held-out answers given at 0.9 or more, nine in ten or more are right; of those
    given below 0.5, fewer than seven in ten."""
    bands = {c["confidence"]: c for c in score_set("heldout")["calibration"]}
    assert bands["[0.9, 1.0]"]["right"] >= 0.9
    assert bands["[0.0, 0.5)"]["right"] < 0.7


@pytest.mark.parametrize("entry", DEV["benign"], ids=[e["message"][:40] for e in DEV["benign"]])
def test_benign_line_is_not_a_lead(entry: dict[str, Any]) -> None:
    category, confidence = classify_benign(entry["message"])
    assert confidence < LEAD, (category, confidence)


def _corpus_command(module: str, *args: str) -> str:
    """What ``python -m tests.diagnose.corpus.MODULE ARGS`` prints, run from the repository's root
    as the corpus README says."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    return subprocess.run(
        [sys.executable, "-m", f"tests.diagnose.corpus.{module}", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_score_command_prints_both_sets() -> None:
    """``python -m tests.diagnose.corpus.score`` is the command of the corpus README."""

    def score(*args: str) -> str:
        return _corpus_command("score", *args)

    text = score()
    assert re.search(r"== dev \(message level\): \d+ failures", text)
    assert re.search(r"== heldout \(message level\): \d+ failures", text)
    assert "top-1 at confidence >= 0.5" in text and "confusion" in text and "calibration" in text
    data = json.loads(score("--format", "json"))
    assert set(data) == {"dev", "heldout"} and data["heldout"]["failures"] == len(HELDOUT["failures"])


def test_coverage_command_splits_top1_by_whether_a_rule_named_the_category() -> None:
    """``python -m tests.diagnose.corpus.coverage`` (the corpus README's rule coverage): every
    failure counted once, on one side; the rules name most of dev (they are written against it:
    a fall below the floor is rules lost), and a named failure is read right far more often than
    an unnamed one (issue 29: ~93 % against ~20 % held out)."""
    dev = json.loads(_corpus_command("coverage", "--set", "dev", "--format", "json"))["dev"]
    assert dev["named"] + dev["unnamed"] == dev["failures"] == len(DEV["failures"])
    assert sum(c["named"] + c["unnamed"] for c in dev["per_category"].values()) == dev["failures"]
    assert dev["coverage"] >= 0.85, dev
    assert dev["named_right"] / dev["named"] > 0.9 > dev["unnamed_right"] / dev["unnamed"], dev


def _fixed_sample(entries: list[dict[str, Any]], n: int) -> list[tuple[int, dict[str, Any]]]:
    """``n`` entries, one per category first, chosen by a hash of the message (never by result)."""
    import hashlib

    indexed = sorted(enumerate(entries), key=lambda ie: hashlib.sha256(ie[1]["message"].encode()).hexdigest())
    out: list[tuple[int, dict[str, Any]]] = []
    for category in (*FAILURE_CATEGORIES, "nan_loss"):
        out += [ie for ie in indexed if ie[1]["expected"] == category][:1]
    return out[:n]


DEV_SAMPLE = _fixed_sample(DEV["failures"], 6)
HELDOUT_SAMPLE = _fixed_sample(HELDOUT["failures"], 4)


@pytest.mark.embedded_only("flightlog run and diagnose on the embedded store, as a user runs them")
@pytest.mark.parametrize(
    ("index", "entry"), DEV_SAMPLE + HELDOUT_SAMPLE, ids=lambda x: x if isinstance(x, int) else _id(x)
)
def test_end_to_end_agrees_with_the_message_level(tmp_path: Path, index: int, entry: dict[str, Any]) -> None:
    """A fixed sample of whole runs (the entry printed the way a run prints it, ending the way
    it ended, under ``flightlog run``; ``flightlog diagnose --format json`` read): the full
    diagnosis gives the answer the message level gives, and is right where that is."""
    result = run_workload(failure_workload(entry, index), tmp_path)
    assert "error" not in result, result
    category, confidence = classify_message(entry["message"], entry.get("ending"))
    if category == entry["expected"] and confidence >= LEAD:
        assert (result["category"], result["confidence"] >= LEAD) == (entry["expected"], True), result
    else:
        assert result["category"] == category or result["confidence"] < LEAD, (result, category, confidence)


@pytest.mark.embedded_only("flightlog run and diagnose on the embedded store, as a user runs them")
def test_healthy_runs_that_print_alarming_lines_have_no_lead(tmp_path: Path) -> None:
    for workload in [w for w in healthy_workloads("dev") if w.id.startswith("healthy-alarming")]:
        result = run_workload(workload, tmp_path)
        assert result.get("exit_code") == 0 and result["confidence"] < LEAD, result
