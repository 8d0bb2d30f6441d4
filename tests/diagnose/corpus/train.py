"""Fit the ranker of the diagnosis (``src/flightlog/diagnose/ranker.json``) on the development
side of the corpus: ``python -m tests.diagnose.corpus.train [--check]``.

What it learns from (never from heldout.yaml):
- every failure of ``dev.yaml``, replayed as the fast classifier sees it (:mod:`.replay`): one
  row per candidate category the rules found, labelled 1 for the expected category;
- every benign line of ``dev.yaml`` as the only line of a process that exited 1, and again of
  one that exited 0: no candidate is right;
- every third dev failure followed by more output and an exit 0 (a handled error in a healthy
  run): no candidate is right;
- :func:`scenarios`: endings the corpus's messages cannot show, each labelled by the taxonomy's own
  definition (a runner's timeout is ``timeout``; SIGKILL with memory at its limit is
  ``oom_killed``, far below it ``killed_by_signal``; a process that says it caught SIGTERM and
  then exited 0 was ``killed_by_signal``; SIGALRM is a ``timeout``; ...).

How: scikit-learn's ``LogisticRegression`` (L2) over the features of :mod:`flightlog.diagnose.
ranker`, features seen in fewer than two repositories dropped; the regularisation chosen by
five-fold cross-validation grouped by repository (a repository never on both sides of a fold),
by top-1 accuracy at confidence 0.5; the decision values of those out-of-fold predictions
calibrated by Platt scaling. ``--check`` fits again and compares with the shipped file
(exit 1 when they differ, or when the corpus changed since: then train and commit both).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flightlog.diagnose.candidates import collect
from flightlog.diagnose.classify import read_process
from flightlog.diagnose.ranker import MODEL_PATH, NONE, features_of
from flightlog.diagnose.structure import FailureRead
from tests.diagnose.corpus.load import HERE, load_set, repository
from tests.diagnose.corpus.replay import replay, replay_benign

__all__ = ["Example", "examples", "fit", "corpus_digest", "scenarios", "main"]

FORMAT = 1
C_GRID = (0.3, 1.0, 3.0, 10.0, 30.0)
FOLDS = 5
#: a feature must be seen in rows of at least this many repositories to be kept
MIN_GROUPS = 2
#: what the confidence of a lead is measured against (docs/architecture.md)
LEAD = 0.5


@dataclass
class Example:
    read: FailureRead
    expected: str | None  # None: no candidate is right (a healthy or unexplained ending)
    group: str  # the repository (or scenario) it comes from: folds never split a group


_PROGRESS = [f"epoch {i // 4} step {i * 50}/2000 loss={1.5 / (i + 1):.4f} lr=3e-4" for i in range(12)]
_CAUGHT = (
    "Received SIGTERM: 15",
    "[rank: 0] Received SIGTERM: 15 Bypassing SIGTERM.",
    "Caught SIGTERM, saving checkpoint and exiting",
    "INFO: received signal SIGTERM, shutting down gracefully after saving the last checkpoint",
    "WARNING:root:SIGTERM received: stopping at the end of this step",
)


def _scenario(name: str, expected: str | None, lines: list[str], **facts: Any) -> Example:
    args: dict[str, Any] = {
        "exit_code": None,
        "signal": None,
        "timed_out": False,
        "oom_killed": False,
        "traceback_text": None,
        "memory_share": None,
        **facts,
    }
    return Example(read_process(last_lines=lines, **args), expected, f"scenario:{name}")


def scenarios() -> list[Example]:
    """Endings labelled by the taxonomy's definitions (see the module docstring)."""
    p = _PROGRESS
    out = [
        _scenario("runner_timeout", "timeout", p, exit_code=124, signal=15, timed_out=True),
        _scenario("runner_timeout", "timeout", p[:3], exit_code=124, signal=9, timed_out=True),
        _scenario("runner_oom", "oom_killed", p, exit_code=137, signal=9, oom_killed=True),
        _scenario("sigkill_at_limit", "oom_killed", p, exit_code=137, signal=9, memory_share=0.985),
        _scenario("sigkill_at_limit", "oom_killed", p[:5], exit_code=137, signal=9, memory_share=0.93),
        _scenario("exit_137_at_limit", "oom_killed", p, exit_code=137, memory_share=0.98),
        _scenario("exit_137_at_limit", "oom_killed", [*p, "Killed"], exit_code=137, memory_share=0.95),
        _scenario("sigterm_at_limit", "oom_killed", p, exit_code=143, signal=15, memory_share=0.99),
        _scenario("sigkill", "killed_by_signal", p, exit_code=137, signal=9),
        _scenario("sigkill", "killed_by_signal", p, exit_code=137, signal=9, memory_share=0.3),
        _scenario("sigkill", "killed_by_signal", p[:4], exit_code=137, signal=9, memory_share=0.55),
        _scenario("sigterm", "killed_by_signal", p, exit_code=143, signal=15),
        _scenario("sigterm", "killed_by_signal", p, exit_code=143, signal=15, memory_share=0.5),
        _scenario("sigterm", "killed_by_signal", p[:2], exit_code=143),
        _scenario("sigint", "killed_by_signal", p, exit_code=130, signal=2),
        _scenario("sighup", "killed_by_signal", p, exit_code=129, signal=1),
        _scenario("crash", "code_error", p, exit_code=139, signal=11),
        _scenario("crash", "code_error", [*p, "Fatal Python error: Segmentation fault"], exit_code=139, signal=11),
        _scenario("abort", "code_error", p, exit_code=134, signal=6),
        _scenario("alarm", "timeout", p, exit_code=142, signal=14),
        _scenario("alarm", "timeout", [*p, "Alarm clock"], exit_code=142),
        _scenario("exit_127", "dependency_error", ["bash: line 1: trainz: command not found"], exit_code=127),
        _scenario("healthy", None, p, exit_code=0),
        _scenario("unexplained", None, p, exit_code=1),
        _scenario("unexplained", None, p[:2], exit_code=3),
        _scenario("unexplained", None, [], exit_code=1),
    ]
    for i, line in enumerate(_CAUGHT):
        out.append(
            _scenario("caught_sigterm", "killed_by_signal", [*p[: 3 + i], line, "saved checkpoint"], exit_code=0)
        )
        out.append(_scenario("caught_sigterm", "killed_by_signal", [*p[: 3 + i], line], exit_code=143, signal=15))
    return out


def examples() -> list[Example]:
    dev = load_set("dev")
    out: list[Example] = []
    for entry in dev["failures"]:
        out.append(Example(replay(entry), entry["expected"], repository(entry["source"]) or entry["source"]))
    for index, entry in enumerate(dev["failures"]):
        if index % 3 == 0:
            lines = ["starting", entry["message"], "retrying with the fallback", *_PROGRESS[:6], "training complete"]
            out.append(
                Example(
                    read_process(
                        exit_code=0,
                        signal=None,
                        timed_out=False,
                        oom_killed=False,
                        traceback_text=None,
                        last_lines=lines,
                    ),
                    None,
                    repository(entry["source"]) or entry["source"],
                )
            )
    for entry in dev["benign"]:
        group = repository(entry.get("source", "")) or "benign"
        out.append(Example(replay_benign(entry), None, group))
        read = replay_benign(entry)
        read.exit_code = 0
        out.append(Example(read, None, group))
    return out + scenarios()


def corpus_digest() -> str:
    """What the model was trained on: the dev file's bytes and this script's scenarios."""
    h = hashlib.sha256((HERE / "dev.yaml").read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()


def _features(exs: list[Example]) -> list[dict[str, float]]:
    return [features_of(ex.read, collect(ex.read)) for ex in exs]


def _keep(feats: list[dict[str, float]], groups: list[str]) -> set[str]:
    seen: dict[str, set[str]] = defaultdict(set)
    for f, g in zip(feats, groups, strict=True):
        for name, value in f.items():
            if value:
                seen[name].add(g)
    return {name for name, gs in seen.items() if len(gs) >= MIN_GROUPS}


def _softmax(z: Any, temperature: float) -> Any:
    import numpy as np

    z = z / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _top1(labels: list[str], classes: list[str], probs: Any) -> float:
    """Top-1 among the failure categories at LEAD or more, over the failures."""
    import numpy as np

    failure_cols = [i for i, c in enumerate(classes) if c != NONE]
    right = total = 0
    for label, row in zip(labels, probs, strict=True):
        if label == NONE:
            continue
        total += 1
        j = failure_cols[int(np.argmax(row[failure_cols]))]
        right += int(classes[j] == label and row[j] >= LEAD)
    return right / max(total, 1)


def fit(exs: list[Example]) -> dict[str, Any]:
    """The model file's content (see the module docstring)."""
    import numpy as np
    import sklearn
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold

    groups = [ex.group for ex in exs]
    labels = [ex.expected or NONE for ex in exs]
    feats = _features(exs)
    keep = _keep(feats, groups)
    feats = [{k: v for k, v in f.items() if k in keep} for f in feats]
    vec = DictVectorizer(sparse=True, sort=True)
    x = vec.fit_transform(feats)
    classes = sorted(set(labels))
    y = np.array([classes.index(label) for label in labels])
    folds = list(GroupKFold(n_splits=FOLDS).split(x, y, groups))

    def out_of_fold(c: float) -> Any:
        z = np.zeros((len(y), len(classes)))
        for train, test in folds:
            model = LogisticRegression(C=c, max_iter=10000)
            model.fit(x[train], y[train])
            cols = [classes.index(classes[k]) for k in model.classes_]
            z[np.ix_(test, cols)] = model.decision_function(x[test])
            missing = [k for k in range(len(classes)) if k not in model.classes_]
            z[np.ix_(test, missing)] = -30.0
        return z

    def temperature(z: Any) -> float:
        best, best_nll = 1.0, float("inf")
        for t in np.arange(0.5, 3.01, 0.05):
            p = _softmax(z, float(t))
            nll = -float(np.mean(np.log(np.maximum(p[np.arange(len(y)), y], 1e-12))))
            if nll < best_nll - 1e-9:
                best, best_nll = float(round(t, 2)), nll
        return best

    scores: dict[float, float] = {}
    temps: dict[float, float] = {}
    for c in C_GRID:
        z = out_of_fold(c)
        temps[c] = temperature(z)
        scores[c] = _top1(labels, classes, _softmax(z, temps[c]))
    best_c = max(C_GRID, key=lambda c: (round(scores[c], 4), -c))
    final = LogisticRegression(C=best_c, max_iter=10000)
    final.fit(x, y)
    names = vec.get_feature_names_out()
    coefficients = {
        classes[k]: {
            str(n): round(float(w), 6) for n, w in zip(names, final.coef_[i], strict=True) if abs(float(w)) >= 1e-5
        }
        for i, k in enumerate(final.classes_)
    }
    return {
        "format": FORMAT,
        "trained_on": {
            "corpus": "tests/diagnose/corpus/dev.yaml",
            "digest": corpus_digest(),
            "failures": sum(1 for ex in exs if ex.expected is not None and not ex.group.startswith("scenario:")),
            "examples": len(exs),
            "features": len(names),
        },
        "fitted_with": f"scikit-learn {sklearn.__version__} LogisticRegression(C={best_c}) multinomial, temperature scaling",
        "cross_validated_top1": {str(c): round(s, 4) for c, s in scores.items()},
        "classes": classes,
        "intercepts": {classes[k]: round(float(b), 6) for k, b in zip(final.classes_, final.intercept_, strict=True)},
        "calibration": {"temperature": temps[best_c]},
        "coefficients": {c: dict(sorted(coefficients[c].items())) for c in classes},
    }


def differences(shipped: dict[str, Any], fitted: dict[str, Any], tolerance: float = 2e-3) -> list[str]:
    """What differs between two model files beyond floating-point noise."""
    out = []
    if shipped.get("trained_on", {}).get("digest") != fitted["trained_on"]["digest"]:
        out.append("the corpus or the training script changed since the model was fitted")
    if shipped["classes"] != fitted["classes"]:
        return [*out, f"classes: {shipped['classes']} != {fitted['classes']}"]
    if abs(shipped["calibration"]["temperature"] - fitted["calibration"]["temperature"]) > tolerance:
        out.append(f"temperature: {shipped['calibration']['temperature']} != {fitted['calibration']['temperature']}")
    for c in fitted["classes"]:
        if abs(shipped["intercepts"][c] - fitted["intercepts"][c]) > tolerance:
            out.append(f"intercept of {c}: {shipped['intercepts'][c]} != {fitted['intercepts'][c]}")
        a, b = shipped["coefficients"][c], fitted["coefficients"][c]
        for name in sorted(set(a) | set(b)):
            if abs(a.get(name, 0.0) - b.get(name, 0.0)) > tolerance:
                out.append(f"{c} {name}: {a.get(name, 0.0)} != {b.get(name, 0.0)}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.diagnose.corpus.train", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped model; write nothing")
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    args = parser.parse_args(argv)
    model = fit(examples())
    if args.check:
        diff = differences(json.loads(args.out.read_text()), model)
        for line in diff[:40]:
            print(line)
        print("the shipped model matches the corpus" if not diff else f"{len(diff)} differences: retrain")
        return 1 if diff else 0
    args.out.write_text(json.dumps(model, indent=1) + "\n")
    print(
        f"{args.out}: {model['trained_on']['features']} features; {model['fitted_with']}; "
        f"grouped-CV top-1 by C {model['cross_validated_top1']}; temperature {model['calibration']['temperature']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
