"""Cohorts: model quality per slice of the data, and regressions an average hides.

``evaluate(y_true, y_pred, cohorts={"region": regions, "device": devices})`` computes the
aggregate metrics and the same metrics for every value of every cohort column ("region=EU",
"device=ios", ...), plus a bounded, seeded random sample of the predictions (for looking at
examples later). ``run.log_eval`` stores the result as evidence kind ``eval``.

``compare_cohorts(current, baseline)`` lines two evaluations up and reports the cohorts whose
metric got worse by more than a threshold, and whether the aggregate improved at the same
time — the classic "the average went up, Germany went down" that the ``cohort_regression``
finding is about. Every difference comes with its sample sizes and a test suited to it
(:mod:`.significance`: two proportions for a rate with its counts, a bootstrap interval
otherwise, adjusted for the many cohorts tested at once): a slice of sixty coin flips moves
by ten points often enough, and is not a regression for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from flightlog.data import metrics as m
from flightlog.data.significance import RATES, Test, bootstrap_difference, bootstrap_stderr, holm, two_proportions
from flightlog.errors import InvalidInput

__all__ = ["evaluate", "compare_cohorts", "DEFAULT_THRESHOLD", "DEFAULT_MIN_COUNT", "DEFAULT_BOOTSTRAP"]

DEFAULT_THRESHOLD = 0.05
DEFAULT_MIN_COUNT = 30
#: bootstrap rounds for the standard error of the metrics that are not a simple rate
DEFAULT_BOOTSTRAP = 200


def _array(x: Any, what: str) -> np.ndarray:
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        x = x.to_numpy()
    arr = np.asarray(x)
    if arr.ndim == 0:
        raise InvalidInput(f"{what} must be a sequence of values, got a scalar")
    return arr


def _integral(a: np.ndarray) -> bool:
    if a.dtype.kind in "biuOUS":
        return True
    if a.dtype.kind == "f":
        finite = a[np.isfinite(a)]
        return bool(np.all(finite == np.round(finite)))
    return True


def _task(y_true: np.ndarray, y_pred: np.ndarray, metrics: Sequence[str] | None, task: str | None) -> str:
    if task is not None:
        if task not in ("classification", "regression"):
            raise InvalidInput(f"task must be classification or regression, got {task!r}")
        return task
    if metrics:
        if all(x in m.REGRESSION_METRICS for x in metrics):
            return "regression"
        if all(x in m.CLASSIFICATION_METRICS for x in metrics):
            return "classification"
    if y_pred.ndim == 2:
        return "classification"
    if not _integral(y_true):
        return "regression"
    labels = np.unique(y_true)
    if y_pred.dtype.kind == "f" and not _integral(y_pred) and not (labels.size <= 2 and _in_unit(y_pred)):
        return "regression"
    return "classification"


def _in_unit(a: np.ndarray) -> bool:
    return bool(a.size == 0 or (np.nanmin(a) >= 0 and np.nanmax(a) <= 1))


def evaluate(
    y_true: Any,
    y_pred: Any,
    *,
    cohorts: Mapping[str, Any] | None = None,
    metrics: Sequence[str] | None = None,
    sample_size: int = 1000,
    task: str | None = None,
    positive_label: Any = None,
    threshold: float = 0.5,
    seed: int = 0,
    bootstrap: int = DEFAULT_BOOTSTRAP,
) -> dict[str, Any]:
    """Aggregate and per-cohort metrics plus a bounded sample of predictions (JSON-able).

    ``y_pred`` holds labels, a score per row for a binary task (labels are ``score >=
    threshold``), or a 2-D matrix of class probabilities (columns in sorted label order). The
    task is inferred (float targets → regression) unless ``task`` or ``metrics`` say it.

    Each set of metrics comes with what a later comparison tests it by: ``support``, the count
    each rate is a share of (accuracy: the rows; precision: the predicted positives; recall:
    the actual positives), and ``stderr``, the bootstrap standard error (``bootstrap`` rounds,
    seeded by ``seed``; 0 skips it) of each other metric.
    """
    yt = _array(y_true, "y_true")
    yp = _array(y_pred, "y_pred")
    if yt.ndim != 1:
        raise InvalidInput(f"y_true must be one-dimensional, got shape {yt.shape}")
    if yp.shape[0] != yt.shape[0]:
        raise InvalidInput(f"y_true has {yt.shape[0]} rows but y_pred has {yp.shape[0]}")
    kind = _task(yt, yp, metrics, task)
    allowed = m.REGRESSION_METRICS if kind == "regression" else m.CLASSIFICATION_METRICS
    names = list(metrics) if metrics else list(allowed)
    bad = [x for x in names if x not in allowed]
    if bad:
        raise InvalidInput(f"metric {bad[0]!r} does not apply to {kind}: use {', '.join(allowed)}")
    cols = {str(k): _array(v, f"cohort {k!r}") for k, v in (cohorts or {}).items()}
    for k, v in cols.items():
        if v.shape[0] != yt.shape[0]:
            raise InvalidInput(f"cohort {k!r} has {v.shape[0]} labels for {yt.shape[0]} rows")

    scores: np.ndarray | None = None
    labels = yp
    positive: Any = None
    classes: list[Any] = []
    if kind == "classification":
        classes = sorted(np.unique(yt).tolist(), key=_sort_key)
        if yp.ndim == 2:
            if yp.shape[1] != len(classes):
                classes = list(range(yp.shape[1]))
            labels = np.asarray(classes, dtype=object)[np.argmax(yp, axis=1)]
            scores = yp[:, 1] if yp.shape[1] == 2 else yp
        elif yp.dtype.kind == "f" and not _integral(yp) and _in_unit(yp) and len(classes) <= 2:
            scores = yp
            if len(classes) == 2:
                lo, hi = classes
            elif set(classes) <= {0, 1}:
                lo, hi = 0, 1
            else:
                raise InvalidInput(
                    f"y_pred looks like scores but y_true has the single label {classes[0]!r}: pass "
                    "predicted labels instead, or task='regression'"
                )
            if positive_label is not None and positive_label == lo:
                lo, hi = hi, lo
                scores = 1.0 - yp
            labels = np.where(scores >= threshold, hi, lo)
        if len(classes) <= 2:
            if positive_label is not None:
                positive = positive_label
            elif set(classes) <= {0, 1}:
                positive = 1 if not classes or not isinstance(classes[0], bool) else True
            else:
                positive = classes[-1]
        labels = _same_kind(labels, yt)

    def compute(idx: np.ndarray | None, only: Sequence[str] | None = None) -> dict[str, float | None]:
        t = yt if idx is None else yt[idx]
        p = labels if idx is None else labels[idx]
        which = names if only is None else only
        if kind == "regression":
            return m.regression(t, p, names=which)
        s = scores if (idx is None or scores is None) else scores[idx]
        return m.classification(t, p, classes=classes, positive=positive, scores=s, names=which)

    def support(idx: np.ndarray) -> dict[str, int]:
        out = {"accuracy": int(idx.size)} if "accuracy" in names else {}
        if kind == "classification" and positive is not None:
            if "precision" in names:
                out["precision"] = int(np.count_nonzero(labels[idx] == positive))
            if "recall" in names:
                out["recall"] = int(np.count_nonzero(yt[idx] == positive))
        return out

    rng = np.random.default_rng(seed)

    def spread(idx: np.ndarray) -> tuple[dict[str, int], dict[str, float]]:
        counts = support(idx)
        others = [x for x in names if x not in counts]
        stderr = bootstrap_stderr(lambda rows: compute(rows, others), idx, others, rounds=bootstrap, rng=rng)
        return counts, stderr

    out_cohorts: list[dict[str, Any]] = []
    for col, values in cols.items():
        keys = values.astype(str) if values.dtype.kind == "O" else values
        uniq, inverse = np.unique(keys, return_inverse=True)
        for i, v in enumerate(uniq.tolist()):
            idx = np.flatnonzero(inverse == i)
            counts, stderr = spread(idx)
            out_cohorts.append(
                {
                    "cohort": col,
                    "value": _plain(v),
                    "count": int(idx.size),
                    "metrics": compute(idx),
                    "support": counts,
                    "stderr": stderr,
                }
            )
    every = np.arange(yt.shape[0])
    overall_support, overall_stderr = spread(every)
    return {
        "task": kind,
        "count": int(yt.shape[0]),
        "positive_label": _plain(positive),
        "overall": compute(None),
        "overall_support": overall_support,
        "overall_stderr": overall_stderr,
        "cohorts": out_cohorts,
        "sample": _sample(yt, labels, scores, cols, sample_size, seed),
    }


def _sort_key(v: Any) -> tuple[int, Any]:
    return (0, v) if isinstance(v, int | float | np.number) else (1, str(v))


def _same_kind(labels: np.ndarray, yt: np.ndarray) -> np.ndarray:
    try:
        return labels.astype(yt.dtype) if labels.dtype != yt.dtype and yt.dtype.kind in "biuf" else labels
    except (TypeError, ValueError):
        return labels


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _sample(
    yt: np.ndarray,
    yp: np.ndarray,
    scores: np.ndarray | None,
    cols: dict[str, np.ndarray],
    size: int,
    seed: int,
) -> dict[str, Any]:
    n = yt.shape[0]
    k = min(max(size, 0), n)
    idx = np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False)) if k < n else np.arange(n)
    rows = []
    for i in idx.tolist():
        row: dict[str, Any] = {"row": i, "y_true": _plain(yt[i]), "y_pred": _plain(yp[i])}
        if scores is not None:
            s = scores[i]
            row["score"] = [float(x) for x in s] if np.ndim(s) else float(s)
        for c, v in cols.items():
            row[c] = _plain(v[i])
        rows.append(row)
    return {"size": len(rows), "seed": seed, "rows": rows}


def _worse(metric: str, base: float, cur: float, threshold: float) -> tuple[bool, float, float | None]:
    """(regressed beyond threshold, delta, relative change) — errors compare relatively."""
    delta = cur - base
    if metric in m.LOWER_IS_BETTER:
        rel = delta / base if base else None
        return (rel if rel is not None else delta) >= threshold and delta > 0, delta, rel
    return -delta >= threshold, delta, None


def compare_cohorts(
    current: Mapping[str, Any],
    baseline: Mapping[str, Any],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    min_count: int = DEFAULT_MIN_COUNT,
    metrics: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Cohorts of ``current`` that regressed against ``baseline`` (two :func:`evaluate` results).

    A bounded metric (accuracy, precision, recall, F1, AUC) regresses when it drops by at least
    ``threshold`` (absolute, default 0.05 = five points); an error metric (MAE, RMSE) when it
    grows by at least ``threshold`` relative to the baseline (default 5 %). Cohorts with fewer
    than ``min_count`` rows on either side are skipped: their metrics are mostly noise.

    Every aggregate row and every regression carries ``test`` (:mod:`.significance`: the
    method, the p-value — adjusted over every cohort and metric compared — the 95 % interval
    of the difference, the sizes and whether it is significant), or None when the evaluations
    lack what a test needs (recorded before they kept it); ``significant_regressions`` counts
    the regressions that are more than chance.
    """
    for label, ev in (("current", current), ("baseline", baseline)):
        if not isinstance(ev, Mapping) or "overall" not in ev or "cohorts" not in ev:
            raise InvalidInput(f"the {label} evaluation is not an eval result: expected overall and cohorts")
    if current.get("task") != baseline.get("task"):
        raise InvalidInput(f"cannot compare a {current.get('task')} evaluation with a {baseline.get('task')} one")
    names = list(metrics) if metrics else [k for k in current["overall"] if k in baseline["overall"]]
    aggregate = []
    agg_regressed = agg_improved = False
    agg_tests: list[Test] = []
    for name in names:
        b, c = baseline["overall"].get(name), current["overall"].get(name)
        if b is None or c is None:
            continue
        worse, delta, rel = _worse(name, b, c, threshold)
        better = delta < 0 if name in m.LOWER_IS_BETTER else delta > 0
        agg_regressed |= worse
        agg_improved |= better
        change = "regressed" if worse else "improved" if better else "unchanged"
        test = _test(name, c, b, _overall(current), _overall(baseline))
        if test is not None:
            agg_tests.append(test)
        aggregate.append(
            {
                "metric": name,
                "baseline": b,
                "current": c,
                "delta": delta,
                "relative": rel,
                "change": change,
                "test": test,
            }
        )
    base = {(x["cohort"], _key(x["value"])): x for x in baseline["cohorts"]}
    regressions, compared = [], 0
    tests: list[Test] = []  # every cohort and metric compared: one family for the adjustment
    for x in current["cohorts"]:
        y = base.get((x["cohort"], _key(x["value"])))
        if y is None or x["count"] < min_count or y["count"] < min_count:
            continue
        compared += 1
        for name in names:
            b, c = y["metrics"].get(name), x["metrics"].get(name)
            if b is None or c is None:
                continue
            test = _test(name, c, b, x, y)
            if test is not None:
                tests.append(test)
            worse, delta, rel = _worse(name, b, c, threshold)
            if worse:
                regressions.append(
                    {
                        "cohort": x["cohort"],
                        "value": x["value"],
                        "metric": name,
                        "baseline": b,
                        "current": c,
                        "delta": delta,
                        "relative": rel,
                        "count": x["count"],
                        "baseline_count": y["count"],
                        "test": test,
                    }
                )
    holm(tests)
    holm(agg_tests)
    for row in [*aggregate, *regressions]:
        row["test"] = row["test"].to_dict() if row["test"] is not None else None
    regressions.sort(key=lambda r: -abs(r["relative"] if r["relative"] is not None else r["delta"]))
    significant = [r for r in regressions if (r["test"] or {}).get("significant")]
    return {
        "task": current.get("task"),
        "threshold": threshold,
        "min_count": min_count,
        "aggregate": aggregate,
        "aggregate_improved": agg_improved and not agg_regressed,
        "aggregate_regressed": agg_regressed,
        "cohorts_compared": compared,
        "tests": len(tests),
        "regressions": regressions,
        "significant_regressions": len(significant),
        "hidden_regression": bool(regressions) and not agg_regressed,
    }


def _overall(ev: Mapping[str, Any]) -> dict[str, Any]:
    return {"count": ev.get("count"), "support": ev.get("overall_support"), "stderr": ev.get("overall_stderr")}


def _test(name: str, current: float, baseline: float, cur: Mapping[str, Any], base: Mapping[str, Any]) -> Test | None:
    """The test suited to ``name`` (see :mod:`.significance`), from what each side kept:
    two proportions for a rate with its counts, else the bootstrap interval, else None."""
    if name in RATES:
        n = (cur.get("support") or {}).get(name)
        bn = (base.get("support") or {}).get(name)
        if name == "accuracy":  # an evaluation kept before its support was: accuracy is a share of its rows
            n, bn = n or cur.get("count"), bn or base.get("count")
        if n and bn:
            return two_proportions(float(current), int(n), float(baseline), int(bn))
    se, bse = (cur.get("stderr") or {}).get(name), (base.get("stderr") or {}).get(name)
    if se is None or bse is None:
        return None
    return bootstrap_difference(
        float(current), float(se), float(baseline), float(bse), cur.get("count"), base.get("count")
    )


def _key(v: Any) -> str:
    return str(v)
