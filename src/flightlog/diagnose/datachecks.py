"""Findings from what the data tools recorded on a run (``flightlog.data``): failed validations
(``data_error``), drift against a reference (``data_drift``) and cohorts that got worse while
the aggregate improved (``cohort_regression``, against the baseline's evaluation).

Evidence shapes (docs/data.md): kind ``validation`` is ``Validation.to_dict()``, kind ``drift``
is ``DriftReport.to_dict()``, kind ``eval`` is ``cohorts.evaluate()`` (or an already computed
``compare_cohorts()`` result).
"""

from __future__ import annotations

from typing import Any

from flightlog.diagnose.evidence import RunEvidence
from flightlog.diagnose.findings import Finding
from flightlog.diagnose.signals import Signal
from flightlog.diagnose.window import ramp

__all__ = ["analyze_data", "validation_findings", "drift_findings", "cohort_findings", "removed_columns"]


def analyze_data(ev: RunEvidence, baseline: RunEvidence | None = None) -> list[Finding]:
    return [*validation_findings(ev), *drift_findings(ev), *cohort_findings(ev, baseline)]


def _at(item: dict[str, Any]) -> float | None:
    t = item.get("time")
    return float(t) if isinstance(t, (int, float)) else None


def validation_findings(ev: RunEvidence) -> list[Finding]:
    signals: list[Signal] = []
    failed_names: list[str] = []
    for item in ev.evidence_of("validation"):
        d = item.get("data") or {}
        if not isinstance(d, dict) or d.get("success", True):
            continue
        results = [r for r in d.get("results") or [] if isinstance(r, dict) and not r.get("success", True)]
        n_failed = int(d.get("failed") or len(results))
        evaluated = int(d.get("evaluated") or len(d.get("results") or []) or n_failed)
        source = d.get("source") or item.get("name")
        failed_names.append(str(item.get("name")))
        signals.append(
            Signal(
                "data_error",
                ramp(n_failed / max(1, evaluated), 0.0, 0.5, 0.55, 0.75),
                f"failed_validation:{item.get('name')}",
                "evidence",
                f"validation of {source}: {n_failed} of {evaluated} expectations failed",
                _at(item),
            )
        )
        for r in results[:3]:
            signals.append(
                Signal(
                    "data_error",
                    0.0,
                    f"failed_expectation:{r.get('expectation')}:{r.get('column')}",
                    "evidence",
                    _expectation_text(r),
                    _at(item),
                )
            )
    if not signals:
        return []
    summary = f"The input failed its data validation ({', '.join(failed_names)}): the data broke the expectations the pipeline checks."
    steps = [
        "Look at the failed expectations' examples (`flightlog data validate ... --format json`) and fix the upstream source or the expectation."
    ]
    return [Finding("data_error", summary, signals, steps, kind="data")]


def _expectation_text(r: dict[str, Any]) -> str:
    col = f" on column {r['column']!r}" if r.get("column") else ""
    text = f"{r.get('expectation')}{col} failed"
    if r.get("unexpected_count") is not None:
        share = r.get("unexpected_share")
        text += f": {r['unexpected_count']} unexpected rows" + (
            f" ({share:.1%})" if isinstance(share, (int, float)) else ""
        )
    elif r.get("observed") is not None:
        text += f": observed {r['observed']!r}, expected {r.get('expected')!r}"
    examples = r.get("examples") or []
    if examples and not r.get("redacted"):
        shown = ", ".join(repr(x.get("value") if isinstance(x, dict) else x) for x in examples[:3])
        text += f"; e.g. {shown}"
    return text[:300]


def drift_findings(ev: RunEvidence) -> list[Finding]:
    signals: list[Signal] = []
    drifted_cols: list[str] = []
    for item in ev.evidence_of("drift"):
        d = item.get("data") or {}
        if not isinstance(d, dict):
            continue
        cols = [c for c in d.get("columns") or [] if isinstance(c, dict) and c.get("drifted")]
        schema = [s for s in d.get("schema_changes") or [] if isinstance(s, dict) and s.get("drifted")]
        if not cols and not schema:
            continue
        share = float(d.get("drift_share") or 0.0)
        names = [str(c.get("column")) for c in cols] + [str(s.get("column")) for s in schema]
        drifted_cols += names
        if d.get("dataset_drift"):
            weight = ramp(share, 0.5, 1.0, 0.65, 0.8)
            what = "the dataset drifted"
        else:
            weight = ramp(share, 0.0, 0.5, 0.2, 0.4)
            what = "some columns drifted"
        ref = f" from {d['reference']}" if d.get("reference") and not str(d["reference"]).startswith("<") else ""
        signals.append(
            Signal(
                "data_drift",
                weight,
                f"drift_report:{item.get('name')}",
                "evidence",
                f"{what}{ref}: {len(names)} column(s), {share:.0%} of those compared ({', '.join(names[:6])})",
                _at(item),
            )
        )
        psis = [c["psi"] for c in cols if isinstance(c.get("psi"), (int, float))]
        if psis and max(psis) >= 0.25:  # the usual reading of PSI: above 0.25 is a major shift
            signals.append(
                Signal(
                    "data_drift",
                    ramp(max(psis), 0.25, 1.0, 0.15, 0.3),
                    "a_major_shift_psi",
                    "evidence",
                    f"population stability index up to {max(psis):.2f} (above 0.25 is a major shift)",
                    _at(item),
                )
            )
        for c in sorted(cols, key=lambda c: -(c.get("psi") or 0))[:3]:
            psi = f", PSI {c['psi']:.2f}" if isinstance(c.get("psi"), (int, float)) else ""
            stat = c.get("statistic")
            stat_text = f"{stat:.3g}" if isinstance(stat, (int, float)) else "?"
            signals.append(
                Signal(
                    "data_drift",
                    0.0,
                    f"drifted_column:{c.get('column')}",
                    "evidence",
                    f"column {c.get('column')!r}: {c.get('test')} {stat_text} (threshold {c.get('threshold')}){psi}",
                    _at(item),
                )
            )
        for s in schema[:3]:
            signals.append(
                Signal(
                    "data_drift",
                    0.0,
                    f"schema_change:{s.get('column')}",
                    "evidence",
                    f"column {s.get('column')!r} {s.get('change')}: {s.get('reference')} → {s.get('current')}",
                    _at(item),
                )
            )
    if not signals:
        return []
    summary = f"The input data moved away from its reference: {', '.join(drifted_cols[:6])} drifted."
    return [Finding("data_drift", summary, signals, kind="data")]


def removed_columns(ev: RunEvidence) -> set[str]:
    """Columns that drift reports on this run saw removed from the data."""
    out: set[str] = set()
    for item in ev.evidence_of("drift"):
        for s in (item.get("data") or {}).get("schema_changes") or []:
            if isinstance(s, dict) and s.get("change") in ("removed", "type"):
                out.add(str(s.get("column")))
    return out


def cohort_findings(ev: RunEvidence, baseline: RunEvidence | None) -> list[Finding]:
    comparisons: list[tuple[str, dict[str, Any], float | None]] = []
    evals = ev.evidence_of("eval")
    for item in evals:  # an already computed comparison kept as evidence
        d = item.get("data") or {}
        if isinstance(d, dict) and "regressions" in d and "hidden_regression" in d:
            comparisons.append((str(item.get("name")), d, _at(item)))
    if not comparisons and baseline is not None:
        base = {e.get("name"): e for e in baseline.evidence_of("eval")}
        try:
            from flightlog.data.cohorts import compare_cohorts
        except ImportError:  # the data extra is not installed
            return []
        for item in evals:
            other = base.get(item.get("name"))
            if other is None:
                continue
            try:
                comparisons.append((str(item.get("name")), compare_cohorts(item["data"], other["data"]), _at(item)))
            except Exception:  # an eval of another shape or task: nothing to compare
                continue
    signals: list[Signal] = []
    summary = ""
    for name, cmp, at in comparisons:
        regressions = cmp.get("regressions") or []
        if not regressions:
            continue
        # the headline is the worst regression that is more than chance, when there is one
        significant = [r for r in regressions if (r.get("test") or {}).get("significant")]
        worst = significant[0] if significant else regressions[0]
        size = abs(worst.get("relative") if worst.get("relative") is not None else worst.get("delta") or 0.0)
        improved = [a for a in cmp.get("aggregate") or [] if a.get("change") == "improved"]
        chance = "" if significant else f" — {_not_significant(worst)}"
        if cmp.get("hidden_regression"):
            weight = ramp(size, 0.05, 0.3, 0.6, 0.8) if significant else _HINT
            agg = (
                f"the aggregate {improved[0]['metric']} improved ({improved[0]['baseline']:.4g} → {improved[0]['current']:.4g})"
                if improved
                else "the aggregate did not regress"
            )
            summary = summary or (
                f"{agg}, but cohort {worst['cohort']}={worst['value']} got worse: "
                f"{worst['metric']} {worst['baseline']:.4g} → {worst['current']:.4g}{_sizes(worst)}{chance}."
            )
        else:
            weight = 0.3 if significant else _HINT * 0.5
            summary = summary or (
                f"Cohort {worst['cohort']}={worst['value']} regressed, along with the aggregate{_sizes(worst)}{chance}."
            )
        tested = len(significant)
        signals.append(
            Signal(
                "cohort_regression",
                weight,
                f"cohort_comparison:{name}",
                "baseline",
                f"{len(regressions)} cohort difference(s) beyond the threshold in evaluation {name!r}, {tested} of them "
                f"significant ({cmp.get('tests', '?')} cohort and metric pairs tested, p-values adjusted together); "
                f"aggregate "
                f"{'improved' if cmp.get('aggregate_improved') else 'regressed' if cmp.get('aggregate_regressed') else 'unchanged'}",
                at,
            )
        )
        for r in [*significant, *[r for r in regressions if r not in significant]][:3]:
            signals.append(
                Signal(
                    "cohort_regression",
                    0.0,
                    f"cohort:{r['cohort']}={r['value']}:{r['metric']}",
                    "baseline",
                    f"{r['cohort']}={r['value']} (n={r.get('count')} vs {r.get('baseline_count')} rows): {r['metric']} "
                    f"{r['baseline']:.4g} → {r['current']:.4g}; {_test_text(r.get('test'))}",
                    at,
                )
            )
    if not signals:
        return []
    return [Finding("cohort_regression", summary, signals, kind="data")]


#: a cohort difference that chance explains (or that nothing could test) weighs this at most
_HINT = 0.3
_METHOD = {"two_proportions": "two proportions", "bootstrap": "bootstrap"}


def _sizes(r: dict[str, Any]) -> str:
    return f" (n={r.get('count')} vs {r.get('baseline_count')})"


def _not_significant(r: dict[str, Any]) -> str:
    test = r.get("test")
    if not test:
        return "not tested: the evaluations were recorded without what a test needs (log them again)"
    return f"not significant at these sizes ({_METHOD.get(test['method'], test['method'])}, p={_p(test)})"


def _p(test: dict[str, Any]) -> str:
    p = test.get("p_adjusted") if test.get("p_adjusted") is not None else test.get("p_value")
    return f"{p:.2g}" if isinstance(p, (int, float)) else "?"


def _test_text(test: dict[str, Any] | None) -> str:
    if not test:
        return "no test (the evaluations kept no counts or spread)"
    lo, hi = test["interval"]
    verdict = "significant" if test.get("significant") else "not significant"
    return (
        f"{_METHOD.get(test['method'], test['method'])}: p={_p(test)} (adjusted), 95% interval of the difference "
        f"[{lo:+.3g}, {hi:+.3g}], {verdict}"
    )
