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
