"""Fit the ranker of the diagnosis (``src/flightlog/diagnose/ranker.json``) on the development
side of the corpus: ``python -m tests.diagnose.corpus.train [--check]``.

What it learns from (never from heldout.yaml):
- every failure of ``dev.yaml``, replayed as the fast classifier sees it (:mod:`.replay`: the
  message split into log events by the run's own capture): one row per candidate category the
  rules found, labelled 1 for the expected category;
- every benign line of ``dev.yaml`` as the only line of a process that exited 1, and again of
  one that exited 0: no candidate is right;
- every third dev failure followed by more output and an exit 0 (a handled error in a healthy
  run): no candidate is right;
- :func:`scenarios`: endings the corpus's messages cannot show, each labelled by the taxonomy's own
  definition (a runner's timeout is ``timeout``; SIGKILL with memory at its limit is
  ``oom_killed``, far below it ``killed_by_signal``; a process that says it caught SIGTERM and
  then exited 0 was ``killed_by_signal``; SIGALRM is a ``timeout``; ...).

How: a conditional logit (a logistic regression whose classes are each failure's candidates,
with weights shared by all candidates; fitted by L-BFGS with an L2 penalty) over the features
of :mod:`flightlog.diagnose.ranker`, features seen in fewer than two repositories dropped; the
penalty chosen by five-fold cross-validation grouped by repository (scikit-learn's
``GroupKFold``: a repository is never on both sides of a fold), by top-1 accuracy at confidence
0.5, repeated over five assignments of the repositories to the folds (``FOLD_ASSIGNMENTS``: the
balanced one and four shuffled by seed) — the smallest C whose mean is within one standard
deviation over the assignments of the best mean (:func:`choose_penalty`); a temperature fitted
on the out-of-fold scores of every assignment calibrates the probabilities. It prints each
penalty's top-1 as mean ± sd and per assignment. ``--check`` fits again and compares with the
shipped file (exit 1 when they differ, or when the corpus changed since: then train and commit
both). ``--cv-only [--penalty C]`` prints the cross-validation's figures and stops: the honest
measure of a change of the features, without the final fit (one penalty: a quarter of the time);
with ``--confusion FILE`` it also prints the out-of-fold confusion of ``bad_parameter``,
``code_error`` and ``data_error`` at the chosen penalty (summed over the assignments) and writes
every category's, with the first assignment's misses, to ``FILE`` — what to read when the
categories of one kind are told apart badly (issue 29).
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
from flightlog.diagnose.ranker import MODEL_PATH, NONE, candidate_features, specific_evidence
from flightlog.diagnose.structure import FailureRead
from tests.diagnose.corpus.load import HERE, load_set, repository
from tests.diagnose.corpus.replay import events, replay, replay_benign

__all__ = ["Example", "examples", "fit", "corpus_digest", "scenarios", "main"]

FORMAT = 1
#: a scenario stands for a whole kind of ending the corpus cannot show: it counts as this many entries
SCENARIO_WEIGHT = 5.0
#: a benign line is rarer in the corpus than a failure, and a false alarm costs more than a miss
BENIGN_WEIGHT = 4.0
#: the categories a native library's check message can name (its words, not the abort, are the cause)
_NATIVE_NAMES = ("missing_file", "oom_killed", "data_error", "bad_parameter", "dependency_error", "disk_full")
C_GRID = (1.0, 3.0, 10.0, 30.0)
FOLDS = 5
#: the repository→fold assignments the penalty is chosen over (issue 29): ``None`` is
#: ``GroupKFold``'s balanced one, a number the seed of a shuffled one. One assignment alone let
#: the chosen C flip between 3 and 10 when the corpus or the features moved by tenths of a point
FOLD_ASSIGNMENTS: tuple[int | None, ...] = (None, 1, 2, 3, 4)
#: a feature must be seen in rows of at least this many repositories to be kept
MIN_GROUPS = 2
#: what the confidence of a lead is measured against (docs/architecture.md)
LEAD = 0.5
#: the categories of one kind that the features tell apart worst (issue 29): ``--confusion``'s rows
WITHIN_KIND = ("bad_parameter", "code_error", "data_error")


@dataclass
class Example:
    read: FailureRead
    expected: str | None  # None: no candidate is right (a healthy or unexplained ending)
    group: str  # the repository (or scenario) it comes from: folds never split a group
    weight: float = 1.0  # how much it counts in the likelihood
    derived: bool = False  # made from an entry or a definition (a scenario), not an entry as printed


_PROGRESS = [f"epoch {i // 4} step {i * 50}/2000 loss={1.5 / (i + 1):.4f} lr=3e-4" for i in range(12)]
#: a launcher's report of a worker killed by SIGKILL (torchrun's words)
_LAUNCHER_SIGKILL = (
    "failed (exitcode: -9) local_rank: 0 (pid: 4243) of binary: /usr/bin/python3",
    "traceback : Signal 9 (SIGKILL) received by PID 4243",
)
#: what numeric guards raise (torch's anomaly detection, TensorFlow's check_numerics, JAX's
#: debug_nans, numpy's seterr) — written from the frameworks' formats, one per framework
_GUARDS = (
    "RuntimeError: Function 'AddmmBackward0' returned nan values in its 0th output.",
    "tensorflow.python.framework.errors_impl.InvalidArgumentError: Tensor had NaN values [Op:CheckNumerics]",
    "FloatingPointError: invalid value (nan) encountered in mul",
    "FloatingPointError: invalid value encountered in divide",
)
#: one line per framework for each kind of failure the first rules missed (issue 29), written
#: from the frameworks' formats: a configuration check, a time limit raised inside the process,
#: a service refusing for capacity, an API that changed under the user
_DEFINITIONS = {
    "bad_parameter": (
        "AssertionError: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 32 != 4 * 2 * 2",
        "ValueError: The hidden size (768) is not a multiple of the number of attention heads (10)",
        "ValueError: bf16 mixed precision requires PyTorch >= 1.10 and a supported device",
    ),
    "timeout": (
        "airflow.exceptions.AirflowTaskTimeout: Timeout, PID: 4242",
        "celery.exceptions.SoftTimeLimitExceeded: SoftTimeLimitExceeded()",
        "TimeoutError: the job exceeded its time limit of 3600 seconds",
    ),
    "service_unavailable": (
        "openai.RateLimitError: Error code: 429 - {'error': {'message': 'Rate limit reached for requests', 'type': 'requests', 'code': 'rate_limit_exceeded'}}",
        "botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the PutObject operation: Please reduce your request rate.",
        "psycopg2.OperationalError: FATAL:  sorry, too many clients already",
    ),
    "dependency_error": (
        "AttributeError: module 'numpy' has no attribute 'float'.",
        "ImportError: cannot import name 'cached_download' from 'huggingface_hub'",
    ),
}
_CAUGHT = (
    "Received SIGTERM: 15",
    "[rank: 0] Received SIGTERM: 15 Bypassing SIGTERM.",
    "Caught SIGTERM, saving checkpoint and exiting",
    "INFO: received signal SIGTERM, shutting down gracefully after saving the last checkpoint",
    "WARNING:root:SIGTERM received: stopping at the end of this step",
)


def _scenario(
    name: str, expected: str | None, lines: list[str], *, end_reason: str | None = None, **facts: Any
) -> Example:
    args: dict[str, Any] = {
        "exit_code": None,
        "signal": None,
        "timed_out": False,
        "oom_killed": False,
        "traceback_text": None,
        "memory_share": None,
        **facts,
    }
    read = read_process(last_lines=lines, **args)
    read.end_reason = end_reason
    return Example(read, expected, f"scenario:{name}", SCENARIO_WEIGHT, derived=True)


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
        _scenario(
            "launcher_reports_sigkill_at_limit", "oom_killed", [*p, *_LAUNCHER_SIGKILL], exit_code=1, memory_share=0.96
        ),
        _scenario(
            "launcher_reports_sigkill_at_limit",
            "oom_killed",
            [*p[:4], _LAUNCHER_SIGKILL[0]],
            exit_code=1,
            memory_share=0.99,
        ),
        _scenario(
            "launcher_reports_sigkill", "killed_by_signal", [*p, *_LAUNCHER_SIGKILL], exit_code=1, memory_share=0.4
        ),
        _scenario("vanished", "killed_by_signal", p, end_reason="crashed"),
        _scenario("vanished", "killed_by_signal", p[:5], end_reason="crashed", memory_share=0.2),
        _scenario("vanished_at_the_host_s_size", "oom_killed", p, end_reason="crashed", memory_share=0.93),
        _scenario("exit_127", "dependency_error", ["bash: line 1: trainz: command not found"], exit_code=127),
        _scenario("healthy", None, p, exit_code=0),
        _scenario("unexplained", None, p, exit_code=1),
        _scenario("unexplained", None, p[:2], exit_code=3),
        _scenario("unexplained", None, [], exit_code=1),
    ]
    for guard in _GUARDS:  # a numeric guard stops the run before any NaN is printed
        out.append(_scenario("numeric_guard", "nan_loss", [*p[:5], guard], exit_code=1))
    for category, texts in _DEFINITIONS.items():  # the kinds of failure issue 29 named, one line each
        for text in texts:
            out.append(_scenario(f"definition:{category}", category, [*p[:4], text], exit_code=1))
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
            lines = [
                "starting",
                *events(entry["message"]),
                "retrying with the fallback",
                *_PROGRESS[:6],
                "training complete",
            ]
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
                    derived=True,
                )
            )
    for index, entry in enumerate(dev["failures"]):
        # a native library's check that names the cause, then SIGABRT: the message decides
        message = entry["message"].strip()
        if entry["expected"] in _NATIVE_NAMES and "\n" not in message and index % 2 == 0 and len(message) < 300:
            words = message.split(": ", 1)[-1]
            lines = [
                *_PROGRESS[:3],
                f"F0105 12:34:56.789012  4242 reader.cc:88] Check failed: {words}",
                "*** Check failure stack trace: ***",
            ]
            read = read_process(
                exit_code=134, signal=6, timed_out=False, oom_killed=False, traceback_text=None, last_lines=lines
            )
            out.append(Example(read, entry["expected"], repository(entry["source"]) or entry["source"], derived=True))
    for entry in dev["benign"]:
        group = repository(entry.get("source", "")) or "benign"
        out.append(Example(replay_benign(entry), None, group, BENIGN_WEIGHT))
        read = replay_benign(entry)
        read.exit_code = 0
        out.append(Example(read, None, group, BENIGN_WEIGHT, derived=True))
    return out + scenarios()


def corpus_digest() -> str:
    """What the model was trained on: the dev file's bytes and this script's scenarios."""
    h = hashlib.sha256((HERE / "dev.yaml").read_bytes())
    h.update(Path(__file__).read_bytes())
    return h.hexdigest()


#: how many entries' worth of its category's rate a rule's own rate starts from (a rule seen
#: a few times is held near its category's rate; one seen often speaks for itself)
FLOOR_PRIOR = 5.0
#: the floor is the lower bound of a rule's share at this many standard errors (one-sided 90 %)
FLOOR_Z = 1.28


def floors(exs: list[Example]) -> dict[str, float]:
    """The first stage's figures (:func:`flightlog.diagnose.ranker.specific_evidence`): for each
    rule that named the category of a failure's innermost exception, the share of those
    examples (weighted as in the fit; the definitions' scenarios left out, they are written to
    be right) whose category it was; each rule's share drawn toward its category's by
    ``FLOOR_PRIOR`` entries, the category's toward one half by one entry each way; each share
    shipped as its lower bound (:func:`_lower_bound`)."""
    rule_n: dict[str, float] = defaultdict(float)
    rule_right: dict[str, float] = defaultdict(float)
    rule_category: dict[str, str] = {}
    cat_n: dict[str, float] = defaultdict(float)
    cat_right: dict[str, float] = defaultdict(float)
    for ex in exs:
        if ex.group.startswith("scenario:"):
            continue
        hit = specific_evidence(ex.read, collect(ex.read))
        if hit is None:
            continue
        right = ex.weight if ex.expected == hit.category else 0.0
        rule_n[hit.rule] += ex.weight
        rule_right[hit.rule] += right
        rule_category[hit.rule] = hit.category
        cat_n[hit.category] += ex.weight
        cat_right[hit.category] += right
    by_category = {c: (cat_right[c] + 1.0) / (cat_n[c] + 2.0) for c in cat_n}
    out = {f"category:{c}": round(_lower_bound(p, cat_n[c] + 2.0), 3) for c, p in by_category.items()}
    for rule, n in rule_n.items():
        prior = by_category[rule_category[rule]]
        rate = (rule_right[rule] + FLOOR_PRIOR * prior) / (n + FLOOR_PRIOR)
        out[f"rule:{rule}"] = round(_lower_bound(rate, n + FLOOR_PRIOR), 3)
    return dict(sorted(out.items()))


def _lower_bound(rate: float, n: float) -> float:
    """The Wilson lower bound of a share ``rate`` of ``n``, one-sided at ``FLOOR_Z``: a floor is
    what the rule is right *at least* (a rule seen a few times gets a low one, the logit decides
    above it; a rule right on hundreds of failures one near its rate)."""
    z2 = FLOOR_Z * FLOOR_Z
    centre = rate + z2 / (2 * n)
    spread = FLOOR_Z * (rate * (1 - rate) / n + z2 / (4 * n * n)) ** 0.5
    return max(0.0, (centre - spread) / (1 + z2 / n))


def _candidates(exs: list[Example]) -> list[dict[str, dict[str, float]]]:
    return [candidate_features(ex.read, collect(ex.read)) for ex in exs]


def _keep(cands: list[dict[str, dict[str, float]]], groups: list[str]) -> set[str]:
    seen: dict[str, set[str]] = defaultdict(set)
    for c, g in zip(cands, groups, strict=True):
        for f in c.values():
            for name, value in f.items():
                if value:
                    seen[name].add(g)
    return {name for name, gs in seen.items() if len(gs) >= MIN_GROUPS}


@dataclass
class _Design:
    """The candidates of every example stacked as rows of one sparse matrix."""

    x: Any  # (rows, features)
    starts: Any  # the first row of each example
    target: Any  # the row of each example's right candidate
    categories: list[list[str]]  # each example's candidates, in row order
    weights: Any  # each example's weight


def _design(
    cands: list[dict[str, dict[str, float]]], labels: list[str], vec: Any, weights: list[float] | None = None
) -> _Design:
    import numpy as np

    rows: list[dict[str, float]] = []
    starts, target, categories = [], [], []
    for c, label in zip(cands, labels, strict=True):
        starts.append(len(rows))
        names = list(c)
        categories.append(names)
        target.append(len(rows) + names.index(label))
        rows += [c[n] for n in names]
    w = np.array(weights if weights is not None else [1.0] * len(labels))
    return _Design(vec.transform(rows), np.array(starts), np.array(target), categories, w)


def _scores(design: _Design, w: Any) -> Any:
    return design.x @ w


def _softmax_by_example(z: Any, starts: Any) -> Any:
    import numpy as np

    top = np.maximum.reduceat(z, starts)
    counts = np.diff(np.append(starts, len(z)))
    e = np.exp(z - np.repeat(top, counts))
    return e / np.repeat(np.add.reduceat(e, starts), counts)


def _fit_weights(design: _Design, c: float, start: Any = None) -> Any:
    """Maximum likelihood of each example's right candidate, with an L2 penalty 1 / (2C),
    from ``start`` (zeros when None)."""
    import numpy as np
    from scipy.optimize import minimize

    x, starts, target, weights = design.x, design.starts, design.target, design.weights
    y = np.zeros(x.shape[0])
    y[target] = 1.0
    counts = np.diff(np.append(starts, x.shape[0]))
    row_weight = np.repeat(weights, counts)

    def loss(w: Any) -> tuple[float, Any]:
        p = _softmax_by_example(x @ w, starts)
        nll = -float(np.sum(weights * np.log(np.maximum(p[target], 1e-300))))
        grad = x.T @ (row_weight * (p - y))
        return nll + float(w @ w) / (2 * c), grad + w / c

    x0 = np.zeros(x.shape[1]) if start is None else start
    result = minimize(loss, x0, jac=True, method="L-BFGS-B", options={"maxiter": 5000})
    return result.x


def _top1(design: _Design, labels: list[str], p: Any, rows: list[int]) -> float:
    """Top-1 among the failure categories at LEAD or more, over the failures among ``rows``."""
    right = total = 0
    for i in rows:
        if labels[i] == NONE:
            continue
        total += 1
        a = design.starts[i]
        names = design.categories[i]
        best = max((float(p[a + k]), n) for k, n in enumerate(names) if n != NONE)
        right += int(best[1] == labels[i] and best[0] >= LEAD)
    return right / max(total, 1)


#: the answer counted when the top failure category is below ``LEAD``
NO_ANSWER = "(below 0.5)"


def _answer(design: _Design, p: Any, i: int) -> tuple[str, float]:
    """Example ``i``'s top failure category and its probability."""
    a = design.starts[i]
    best = max((float(p[a + k]), n) for k, n in enumerate(design.categories[i]) if n != NONE)
    return best[1], best[0]


def _confusion(design: _Design, labels: list[str], probabilities: list[Any], rows: list[int]) -> dict[str, Any]:
    """The out-of-fold confusion over the failures among ``rows``, summed over the fold
    assignments (``counts[expected][answer]``; an answer below ``LEAD`` is ``NO_ANSWER``), each
    category's recall (mean over the assignments), and every miss of the first assignment
    (``rows`` index, expected, answer, its probability): what to read when the categories of one
    kind are told apart badly (issue 29)."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    misses = []
    for k, p in enumerate(probabilities):
        for i in rows:
            if labels[i] == NONE:
                continue
            name, prob = _answer(design, p, i)
            answer = name if prob >= LEAD else NO_ANSWER
            counts[labels[i]][answer] += 1
            if k == 0 and answer != labels[i]:
                misses.append({"example": i, "expected": labels[i], "answer": name, "probability": round(prob, 3)})
    recall = {c: round(row.get(c, 0) / max(sum(row.values()), 1), 3) for c, row in counts.items()}
    return {
        "counts": {c: dict(row) for c, row in sorted(counts.items())},
        "recall": dict(sorted(recall.items())),
        "misses": misses,
    }


def confusion_table(confusion: dict[str, Any], categories: tuple[str, ...] | None = None) -> str:
    """The confusion as text: a row per expected category (``categories``, or every one), a
    column per answer among them, then "other" (any other category) and ``NO_ANSWER``."""
    counts = confusion["counts"]
    rows = categories or tuple(counts)
    columns = (*rows, "other", NO_ANSWER)
    width = max(len(c) for c in (*columns, *rows)) + 1
    lines = [f"out-of-fold confusion at C = {confusion['penalty']}, summed over the fold assignments:"]
    lines.append(" " * width + "".join(f"{c:>{width}}" for c in columns) + f"{'recall':>{width}}")
    for expected in rows:
        row = counts.get(expected, {})
        other = sum(n for a, n in row.items() if a not in rows and a != NO_ANSWER)
        cells = [row.get(a, 0) for a in rows] + [other, row.get(NO_ANSWER, 0)]
        recall = confusion["recall"].get(expected, 0.0)
        lines.append(f"{expected:<{width}}" + "".join(f"{n:>{width}}" for n in cells) + f"{recall:>{width}.3f}")
    return "\n".join(lines)


def fold_assignments(groups: list[str], assignments: tuple[int | None, ...] = FOLD_ASSIGNMENTS) -> list[Any]:
    """Each assignment's folds (``(train, test)`` index arrays), grouped by repository: a
    repository is never on both sides of a fold. ``None``: scikit-learn's ``GroupKFold``, which
    balances the folds' sizes; a seed: ``GroupKFold(shuffle=True)`` with that seed (groups drawn
    at random, the same number of repositories in each fold)."""
    import numpy as np
    from sklearn.model_selection import GroupKFold

    x = np.zeros(len(groups))
    out = []
    for seed in assignments:
        splitter = (
            GroupKFold(n_splits=FOLDS) if seed is None else GroupKFold(n_splits=FOLDS, shuffle=True, random_state=seed)
        )
        out.append(list(splitter.split(x, x, groups)))
    return out


def _mean_sd(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5 if len(values) > 1 else 0.0
    return mean, sd


def choose_penalty(spread: dict[float, tuple[float, float]]) -> float:
    """The penalty of the model: among those whose mean top-1 over the fold assignments is
    within one standard deviation (over the assignments) of the best mean, the smallest C —
    the strongest penalty. The one-standard-error rule with the assignments' spread as the
    error: penalties that the choice of folds cannot tell apart are one choice, and the
    simplest model wins it (on the 774 failures of the development side, C = 10 and C = 30 were
    78.3 % ± 0.2 and 78.4 % ± 0.5 over five assignments: the mean alone flipped between them as
    assignments were added)."""
    best = max(spread, key=lambda c: (round(spread[c][0], 4), -c))
    mean, sd = spread[best]
    return min(c for c, (m, _) in spread.items() if round(m, 4) >= round(mean - sd, 4))


def fit(
    exs: list[Example],
    *,
    cv_only: bool = False,
    grid: tuple[float, ...] = C_GRID,
    assignments: tuple[int | None, ...] = FOLD_ASSIGNMENTS,
    confusion: bool = False,
) -> dict[str, Any]:
    """:func:`_fit` with one BLAS thread: L-BFGS-B's vector steps are BLAS calls on ~15,000
    weights, which OpenBLAS splits over every core; on a shared machine each call then waits
    for a busy core (a fit took 10 s of CPU with two threads under load, 0.4 s with one), and
    one thread gives the same weights whatever the machine's number of cores."""
    import scipy.optimize  # noqa: F401 — its own OpenBLAS is loaded before the limit is set
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        return _fit(exs, cv_only=cv_only, grid=grid, assignments=assignments, confusion=confusion)


def _fit(
    exs: list[Example],
    *,
    cv_only: bool,
    grid: tuple[float, ...],
    assignments: tuple[int | None, ...],
    confusion: bool = False,
) -> dict[str, Any]:
    """The model file's content (see the module docstring); with ``cv_only``, only the
    cross-validation's figures at each penalty of ``grid`` (``cross_validated_top1``, its
    spread and its value per assignment, ``temperatures``) — the fast path to compare a change
    of the features: no final fit, and one penalty is a quarter of the grid's time.

    Each penalty's top-1 is cross-validated on each of ``assignments`` (repository→fold
    assignments) and :func:`choose_penalty` picks from their mean ± sd; the temperature at each
    penalty is fitted on the out-of-fold scores of every assignment at once."""
    import numpy as np
    import scipy
    from sklearn.feature_extraction import DictVectorizer

    groups = [ex.group for ex in exs]
    labels = [ex.expected or NONE for ex in exs]
    weights = [ex.weight for ex in exs]
    cands = _candidates(exs)
    keep = _keep(cands, groups)
    cands = [{k: {n: v for n, v in f.items() if n in keep} for k, f in c.items()} for c in cands]
    vec = DictVectorizer(sparse=True, sort=True)
    vec.fit([f for c in cands for f in c.values()])
    design = _design(cands, labels, vec, weights)
    ends = np.append(design.starts[1:], design.x.shape[0])

    def out_of_fold(folds: list[Any]) -> dict[float, Any]:
        """Each penalty's out-of-fold scores; within a fold the penalties are fitted in
        increasing order, each starting from the last one's weights (the same optimum, sooner)."""
        z = {c: np.zeros(design.x.shape[0]) for c in grid}
        for train, test in folds:
            part = _design([cands[i] for i in train], [labels[i] for i in train], vec, [weights[i] for i in train])
            rows = np.concatenate([np.arange(design.starts[i], ends[i]) for i in test])
            held = design.x[rows]
            w = None
            for c in sorted(grid):
                w = _fit_weights(part, c, start=w)
                z[c][rows] = held @ w
        return z

    def temperature(zs: list[Any]) -> float:
        best, best_nll = 1.0, float("inf")
        for t in np.arange(0.5, 3.01, 0.05):
            nll = 0.0
            for z in zs:
                p = _softmax_by_example(z / float(t), design.starts)
                nll -= float(np.mean(np.log(np.maximum(p[design.target], 1e-300))))
            if nll < best_nll - 1e-9:
                best, best_nll = float(round(t, 2)), nll
        return best

    every = [i for i, ex in enumerate(exs) if not ex.derived]  # the corpus's own entries
    by_assignment = [out_of_fold(folds) for folds in fold_assignments(groups, assignments)]
    temps: dict[float, float] = {}
    runs: dict[float, list[float]] = {}
    for c in grid:
        zs = [z[c] for z in by_assignment]
        temps[c] = temperature(zs)
        runs[c] = [_top1(design, labels, _softmax_by_example(z / temps[c], design.starts), every) for z in zs]
    spread = {c: _mean_sd(runs[c]) for c in grid}
    figures: dict[str, Any] = {
        "cross_validated_top1": {str(c): round(spread[c][0], 4) for c in grid},
        "cross_validated_top1_sd": {str(c): round(spread[c][1], 4) for c in grid},
        "cross_validated_top1_by_assignment": {str(c): [round(s, 4) for s in runs[c]] for c in grid},
        "fold_assignments": ["balanced" if seed is None else f"shuffled (seed {seed})" for seed in assignments],
    }
    best_c = choose_penalty(spread)
    if confusion:
        zs = [z[best_c] for z in by_assignment]
        probabilities = [_softmax_by_example(z / temps[best_c], design.starts) for z in zs]
        figures["confusion"] = {"penalty": best_c, **_confusion(design, labels, probabilities, every)}
    if cv_only:
        return {**figures, "temperatures": {str(c): t for c, t in temps.items()}}
    w = _fit_weights(design, best_c)
    names = vec.get_feature_names_out()
    weights = {str(n): round(float(v), 6) for n, v in zip(names, w, strict=True) if abs(float(v)) >= 1e-5}
    return {
        "format": FORMAT,
        "trained_on": {
            "corpus": "tests/diagnose/corpus/dev.yaml",
            "digest": corpus_digest(),
            "failures": sum(1 for ex in exs if ex.expected is not None and not ex.group.startswith("scenario:")),
            "examples": len(exs),
            "features": len(names),
        },
        "fitted_with": (
            f"conditional logit, L2 C={best_c} (scipy {scipy.__version__} L-BFGS-B; scikit-learn folds, "
            f"{len(assignments)} assignments), temperature"
        ),
        **figures,
        "calibration": {"temperature": temps[best_c], "floors": floors(exs)},
        "weights": dict(sorted(weights.items())),
    }


def cv_table(figures: dict[str, Any]) -> str:
    """Each penalty's cross-validated top-1 as mean ± sd over the fold assignments, and each's."""
    lines = [f"grouped {FOLDS}-fold CV top-1 at {LEAD}, over: {'; '.join(figures['fold_assignments'])}"]
    for c, mean in figures["cross_validated_top1"].items():
        each = ", ".join(f"{v:.2%}" for v in figures["cross_validated_top1_by_assignment"][c])
        lines.append(f"  C = {c:>5}: {mean:.2%} ± {figures['cross_validated_top1_sd'][c]:.2%}  ({each})")
    return "\n".join(lines)


def differences(shipped: dict[str, Any], fitted: dict[str, Any], tolerance: float = 2e-3) -> list[str]:
    """What differs between two model files beyond floating-point noise."""
    out = []
    if shipped.get("trained_on", {}).get("digest") != fitted["trained_on"]["digest"]:
        out.append("the corpus or the training script changed since the model was fitted")
    if abs(shipped["calibration"]["temperature"] - fitted["calibration"]["temperature"]) > tolerance:
        out.append(f"temperature: {shipped['calibration']['temperature']} != {fitted['calibration']['temperature']}")
    a, b = shipped["calibration"].get("floors", {}), fitted["calibration"]["floors"]
    for name in sorted(set(a) | set(b)):
        if abs(a.get(name, 0.0) - b.get(name, 0.0)) > tolerance:
            out.append(f"floor {name}: {a.get(name, 0.0)} != {b.get(name, 0.0)}")
    a, b = shipped["weights"], fitted["weights"]
    for name in sorted(set(a) | set(b)):
        if abs(a.get(name, 0.0) - b.get(name, 0.0)) > tolerance:
            out.append(f"{name}: {a.get(name, 0.0)} != {b.get(name, 0.0)}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.diagnose.corpus.train", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped model; write nothing")
    parser.add_argument("--out", type=Path, default=MODEL_PATH)
    parser.add_argument(
        "--cv-only",
        action="store_true",
        help="print the grouped cross-validation's top-1 at each penalty and stop (no final fit; write nothing)",
    )
    parser.add_argument(
        "--penalty", type=float, action="append", help="with --cv-only: cross-validate at this C only (repeatable)"
    )
    parser.add_argument(
        "--confusion",
        type=Path,
        metavar="FILE",
        help="with --cv-only: print the out-of-fold confusion of the software/data categories at the chosen C "
        "and write the whole confusion, with the first assignment's misses, to FILE (JSON)",
    )
    args = parser.parse_args(argv)
    if args.cv_only:
        figures = fit(
            examples(), cv_only=True, grid=tuple(args.penalty or C_GRID), confusion=args.confusion is not None
        )
        print(cv_table(figures), file=sys.stderr)
        if args.confusion is not None:
            print(confusion_table(figures["confusion"], WITHIN_KIND), file=sys.stderr)
            args.confusion.write_text(json.dumps(figures.pop("confusion"), indent=1) + "\n")
        print(json.dumps(figures))
        return 0
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
    print(cv_table(model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
