"""The diagnosis against real failure messages quoted from public issue trackers (PyTorch, NCCL,
Hugging Face, DeepSpeed, fairseq, Optuna, Ray, TensorFlow/Keras, XGBoost, LightGBM, scikit-learn,
pandas, Kubernetes, Slurm, database clients, AWS, Google Cloud, Azure, W&B, MLflow): see
``tests/diagnose/corpus/README.md``. The corpus is split once into ``dev.yaml`` (rules are tuned on it) and
``heldout.yaml`` (only scored); the held-out thresholds are the bar of issue 23."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from flightlog.diagnose.taxonomy import CATEGORIES, FAILURE_CATEGORIES
from tests.diagnose.corpus.load import SETS, held_out, load_set
from tests.diagnose.corpus.score import LEAD, classify_benign, classify_message, score_set

DEV = load_set("dev")
HELDOUT = load_set("heldout")
FAILURES: list[dict[str, Any]] = DEV["failures"] + HELDOUT["failures"]
BENIGN: list[dict[str, Any]] = DEV["benign"] + HELDOUT["benign"]
FIRST_CORPUS = [e for e in FAILURES if e.get("origin") == "corpus-v1"]

#: dev entries the rules answer wrong on purpose rather than fit one message: each says why
KNOWN_DEV_MISSES = {
    # a misspelt key read by the code itself; the same OmegaConf error from a command-line override is a bad parameter
    "https://github.com/omry/omegaconf/issues/209": "code_error",
    # optuna's wrapper around a NaN bound the caller computed: nothing in the text says it is the caller's code
    "https://github.com/n-tateiwa/flopt/issues/91": "code_error",
    # ray's wrapper around a bare AssertionError: generic on both levels
    "https://github.com/ray-project/ray/issues/8301": "code_error",
    # an untrusted certificate behind requests' "Max retries exceeded": read as the outage the wrapper names
    "https://github.com/mlflow/mlflow/issues/4032": "credentials_error",
    # a KeyError from pd.merge in IPython's format, without the pandas frames that would say "column"
    "https://github.com/pandas-dev/pandas/issues/11201": "data_error",
}


#: the stacks the corpus must cover (by the GitHub owner of each source); the first ten also
#: give the entry of each that is replayed end to end
STACKS = (
    "pytorch",
    "nvidia",
    "huggingface",
    "ray-project",
    "tensorflow",
    "dmlc",
    "boto",
    "googleapis",
    "azure",
    "wandb",
    "facebookresearch",
    "optuna",
    "keras-team",
    "mlflow",
    "kubernetes",
    "lightgbm-org",
    "pandas-dev",
)


def _id(entry: dict[str, Any]) -> str:
    return f"{entry['expected']}:{entry['source'].rsplit('/', 3)[-3]}#{entry['source'].rsplit('/', 1)[-1]}"


def test_the_corpus_is_wide_and_sourced() -> None:
    assert len(FAILURES) >= 300 and len(BENIGN) >= 60
    for entry in FAILURES:
        assert entry["expected"] in CATEGORIES, entry
        assert entry["source"].startswith("https://github.com/"), entry
        assert entry["message"].strip(), entry
    assert len({e["message"] for e in FAILURES + BENIGN}) == len(FAILURES) + len(BENIGN), "an entry is repeated"
    stacks = {e["source"].split("/")[3].lower() for e in FAILURES}
    assert set(STACKS) <= stacks
    # every category a message can show, in both sets
    for data in (DEV, HELDOUT):
        assert {e["expected"] for e in data["failures"]} >= {*FAILURE_CATEGORIES, "nan_loss"}


def test_the_split_is_the_recorded_rule() -> None:
    """Split once, by a hash of each entry's thread and text: no entry was moved by hand."""
    for name, data in (("dev", DEV), ("heldout", HELDOUT)):
        for entry in data["failures"] + data["benign"]:
            assert held_out(entry) == (name == "heldout"), (name, entry["message"][:80])
    assert 0.22 <= len(HELDOUT["failures"]) / len(FAILURES) <= 0.38


@pytest.mark.parametrize("entry", FIRST_CORPUS, ids=[_id(e) for e in FIRST_CORPUS])
def test_real_failure_is_named(entry: dict[str, Any]) -> None:
    """The message as the last log event of a run that exited 1 (each entry of the first corpus)."""
    category, confidence = classify_message(entry["message"])
    assert (category, confidence >= 0.4) == (entry["expected"], True), (
        f"{category} {confidence}: {entry['message'][:200]}"
    )


@pytest.mark.parametrize("entry", DEV["failures"], ids=[_id(e) for e in DEV["failures"]])
def test_dev_failure_is_a_lead(entry: dict[str, Any]) -> None:
    """Every development entry is named first at 0.5 or more, but the few left on purpose."""
    category, confidence = classify_message(entry["message"])
    if KNOWN_DEV_MISSES.get(entry["source"]) == entry["expected"]:
        return
    assert (category, confidence >= LEAD) == (entry["expected"], True), (
        f"{category} {confidence}: {entry['message'][:200]}"
    )


@pytest.mark.parametrize("name", SETS)
def test_scores_reach_the_bar(name: str) -> None:
    """Issue 23's bar on the held-out set (top-1 >= 90 % at 0.5, >= 95 % in the right kind,
    no benign line at 0.5); the development set, tuned on, is held to more."""
    report = score_set(name)
    top1, kind = (0.9, 0.95) if name == "heldout" else (0.95, 0.98)
    assert report["top1_at_0_5"] >= top1, report["misses"] if name == "dev" else report["top1_at_0_5"]
    assert report["right_kind"] >= kind
    assert report["benign_at_0_5"] == []
    for category, m in report["per_category"].items():
        assert m["precision"] is None or m["precision"] >= 0.8, (category, m)


@pytest.mark.parametrize("entry", BENIGN, ids=[e["message"][:40] for e in BENIGN])
def test_benign_line_is_not_a_lead(entry: dict[str, Any]) -> None:
    category, confidence = classify_benign(entry["message"])
    assert confidence < LEAD, (category, confidence)


def test_score_command_prints_both_sets(tmp_path: Path) -> None:
    """``python -m tests.diagnose.corpus.score`` is the command of the corpus README."""
    import json
    import os
    import subprocess

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}

    def score(*args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "tests.diagnose.corpus.score", *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    text = score()
    assert re.search(r"== dev: \d+ failures", text) and re.search(r"== heldout: \d+ failures", text)
    assert "top-1 at confidence >= 0.5" in text and "confusion" in text and "precision" in text
    data = json.loads(score("--format", "json"))
    assert set(data) == {"dev", "heldout"} and data["heldout"]["top1_at_0_5"] >= 0.9


def _first_of_each_stack() -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for entry in FIRST_CORPUS:
        seen.setdefault(entry["source"].split("/")[3].lower(), entry)
    return [seen[k] for k in STACKS[:10] if k in seen]


def _one_per_category() -> list[dict[str, Any]]:
    """A development entry per category whose text names its cause only behind a wrapper or a
    generic type (the cases issue 23 found answered as a generic code_error)."""
    wanted = {
        "disk_full": "https://github.com/hiyouga/LlamaFactory/issues/5155",
        "service_unavailable": "https://github.com/mikeizbicki/cmc-csci143/issues/331",
        "dependency_error": "https://github.com/ray-project/ray/issues/44264",
        "bad_parameter": "https://github.com/zjunlp/DeepKE/issues/394",
        "data_error": "https://github.com/huggingface/datasets/pull/6509",
        "nan_loss": "https://github.com/himkt/allennlp-optuna/issues/49",
        "timeout": "https://github.com/Nextomics/NextDenovo/issues/114",
    }
    by_source = {(e["source"], e["expected"]): e for e in DEV["failures"]}
    return [by_source[(source, category)] for category, source in wanted.items() if (source, category) in by_source]


PRINT_AND_FAIL = "import sys\nsys.stderr.write(open(sys.argv[1]).read() + '\\n')\nsys.exit(1)\n"


@pytest.mark.embedded_only("the same report over either transport (tests/diagnose/test_api.py covers http)")
@pytest.mark.parametrize("entry", _first_of_each_stack() + _one_per_category(), ids=lambda e: _id(e))
def test_real_failure_under_flightlog_run(home: Path, entry: dict[str, Any]) -> None:
    """The full diagnosis of a run whose last words were the message (stderr, exit 1)."""
    from flightlog.client import Client
    from tests.helpers import cli

    (home.parent / "message.txt").write_text(entry["message"])
    (home.parent / "fail.py").write_text(PRINT_AND_FAIL)
    proc = cli(
        home,
        "run",
        "--project",
        "corpus",
        "--",
        sys.executable,
        str(home.parent / "fail.py"),
        str(home.parent / "message.txt"),
        check=False,
    )
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        report = c.diagnose(run)
    top = report["findings"][0]
    assert top["category"] == entry["expected"] and top["confidence"] >= 0.5, report["findings"]
    assert top["evidence"], top


@pytest.mark.embedded_only("the same report over either transport")
def test_benign_lines_in_a_successful_run_are_no_lead(home: Path) -> None:
    from flightlog.client import Client
    from tests.helpers import cli

    (home.parent / "benign.txt").write_text("\n".join(e["message"] for e in BENIGN))
    (home.parent / "ok.py").write_text("import sys\nfor line in open(sys.argv[1]):\n    print(line, end='')\n")
    proc = cli(
        home,
        "run",
        "--project",
        "corpus",
        "--",
        sys.executable,
        str(home.parent / "ok.py"),
        str(home.parent / "benign.txt"),
    )
    run = re.search(r"run ([0-9a-f]{32}) started", proc.stderr)[1]  # type: ignore[index]
    with Client(home) as c:
        report = c.diagnose(run)
    assert all(f["confidence"] < 0.5 for f in report["findings"]), report["findings"]
    assert report["kind"] == "none"
