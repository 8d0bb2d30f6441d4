"""Changes in what an endpoint saw and answered: a drift onset and a cohort regression, from its
sampled prediction records, through the data feature's live code (``flightlog.data.live``).

* drift: the live inputs of the version serving now against the training data profile of that
  version's run (``run.log_profile``), window by window (`DRIFT_WINDOW_S`), with the tests and
  thresholds of ``flightlog data drift``; the onset is the first window of the drifted streak;
* cohorts: the labelled records of the version after the change against those of the version
  before it (``compare_cohorts``), or, with no earlier version, against the training run's own
  evaluation per cohort (``compare_live``).

Each answers a ``change`` row (``{"time", "kind", "summary", "evidence"}``) or None, and a note
when it could not be judged (no profile logged, too few rows): the report says why it is silent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flightlog.errors import FlightlogError

__all__ = ["DRIFT_WINDOW_S", "drift_change", "cohort_change", "profile_of"]

DRIFT_WINDOW_S = 600.0  # live rows per drift window: ten minutes (each needs MIN_ROWS sampled rows)
#: the sampling window of a replica (``sampling.DEFAULT_WINDOW_S``) is the same ten minutes
_MAX_CATEGORIES = 50  # an input with more distinct values is no cohort


def profile_of(client: Any, run_id: str) -> Any:
    # the data feature (flightlog[data]: pyarrow, scipy), only when a diagnosis judges drift
    from flightlog.data.live import training_profile

    names = sorted({str(e.get("name")) for e in client.evidence(run_id, "profile")})
    if not names:
        return None
    return training_profile(client, run_id, "train" if "train" in names else names[0])


def drift_change(
    client: Any, rows: Sequence[Any], version: str, run_id: str | None, notes: list[str]
) -> dict[str, Any] | None:
    """The drift onset of ``version``'s live inputs against its training profile, or None."""
    # the data feature (flightlog[data]), as above
    from flightlog.data.live import MIN_ROWS, DriftMonitor, LiveProfile, prediction_rows
    from flightlog.data.livesummary import profile_column  # as above
    from flightlog.data.livetypes import successful  # as above

    if run_id is None:
        return None
    # judged on what the model served: the inputs of successful requests (a 422's are not)
    live = [r for r in prediction_rows(rows) if r.version == version and r.inputs and successful(r.status)]
    if not live:
        return None
    try:
        reference = profile_of(client, run_id)
    except FlightlogError as exc:
        notes.append(f"drift not judged: {exc}")
        return None
    if reference is None:
        notes.append(
            f"drift not judged: version {version}'s training run {run_id[:12]} logged no data profile (run.log_profile)"
        )
        return None
    if len(live) < MIN_ROWS:
        notes.append(
            f"drift not judged: {len(live)} sampled records of successful requests of version {version}, "
            f"fewer than {MIN_ROWS} per window"
        )
        return None
    monitor = DriftMonitor(reference)
    try:
        windows = monitor.feed(live, DRIFT_WINDOW_S)
    except FlightlogError as exc:
        notes.append(f"drift not judged: {exc}")
        return None
    judged = [w for w in windows if w]
    if not judged:
        return None
    drifted = [d for d in judged[-1] if d.drifted]
    if not drifted:
        return None
    onset = (
        min(d.onset for d in drifted if d.onset is not None)
        if any(d.onset for d in drifted)
        else drifted[0].window_start
    )
    names = ", ".join(
        f"{d.feature} ({d.test} {d.statistic:.2g})" if d.statistic is not None else d.feature for d in drifted[:4]
    )
    last = LiveProfile()  # the last window's rows: the live side of each drifted feature, as people read it
    last.update([r for r in live if judged[-1][0].window_start is None or r.time >= judged[-1][0].window_start])
    features = [
        {
            **d.to_dict(),
            "training": profile_column(reference, d.feature),
            "live": profile_column(last.profile, d.feature),
        }
        for d in drifted
    ]
    return {
        "time": onset,
        "kind": "drift",
        "summary": f"live inputs of version {version} drifted from its training data: {names}",
        "evidence": {"version": version, "training_run": run_id, "features": features},
        "features": sorted({d.feature for d in drifted if d.test != "type"}),
    }


def _cohort_fields(rows: Sequence[Any], training_eval: dict[str, Any] | None) -> list[str]:
    if training_eval and training_eval.get("cohorts"):
        named = sorted({str(c.get("cohort")) for c in training_eval["cohorts"]})
        present = {k for r in rows for k in r.inputs}
        fields = [c for c in named if c in present]
        if fields:
            return fields
    values: dict[str, set[str]] = {}
    for r in rows:
        for k, v in r.inputs.items():
            if isinstance(v, (str, bool)):
                values.setdefault(k, set()).add(str(v))
    return sorted(k for k, vs in values.items() if 1 < len(vs) <= _MAX_CATEGORIES)


def _eval_of(client: Any, run_id: str | None) -> dict[str, Any] | None:
    if run_id is None:
        return None
    items = [e for e in client.evidence(run_id, "eval") if isinstance(e.get("data"), dict)]
    return dict(items[-1]["data"]) if items else None


def cohort_change(
    client: Any,
    rows: Sequence[Any],
    after: tuple[str, str | None],
    before: tuple[str, str | None] | None,
    notes: list[str],
) -> dict[str, Any] | None:
    """The worst cohort regression of the ``after`` version's labelled records, or None.

    ``after`` and ``before`` are (version, training run id)."""
    # the data feature (flightlog[data]), only when a diagnosis has labelled records
    from flightlog.data.cohorts import compare_cohorts
    from flightlog.data.live import compare_live, live_cohorts, prediction_rows  # the data feature, as above

    every = prediction_rows(rows)
    labelled = [r for r in every if r.label is not None and r.output is not None]
    if not labelled:
        return None
    mine = [r for r in labelled if r.version == after[0]]
    if not mine:
        return None
    training = _eval_of(client, after[1])
    fields = _cohort_fields(mine, training)
    if not fields:
        return None
    try:
        live_after = live_cohorts(mine, fields)
        theirs = [r for r in labelled if r.version == before[0]] if before is not None else []
        if before is not None and theirs and live_after is not None:
            live_before = live_cohorts(theirs, fields, metrics=list(live_after["overall"]))
            against, compared = f"version {before[0]} live", compare_cohorts(live_after, live_before or {})
        elif training is not None and live_after is not None:
            against, compared = "training", compare_live(live_after, training)
        else:
            return None
    except FlightlogError as exc:
        notes.append(f"cohorts not judged: {exc}")
        return None
    if not compared["regressions"]:
        return None
    worst = compared["regressions"][0]
    pts = (worst["current"] - worst["baseline"]) * 100
    bounded = worst["metric"] not in ("mae", "rmse")
    change = (
        f"{'−' if pts < 0 else '+'}{abs(pts):.0f} pts"
        if bounded
        else f"{worst['baseline']:.3g} → {worst['current']:.3g}"
    )
    return {
        "time": min(r.time for r in mine),
        "kind": "cohort",
        "summary": (
            f"cohort {worst['cohort']}={worst['value']} {worst['metric']} {worst['baseline']:.2f} → "
            f"{worst['current']:.2f} ({change}) on version {after[0]} against {against}"
        ),
        "evidence": {
            "version": after[0],
            "against": against,
            "regressions": compared["regressions"][:5],
            "labelled": {"after": len(mine), "before": len(theirs) if before else 0},
        },
        "short": f"cohort {worst['cohort']}={worst['value']} {worst['metric']} {change}",
    }
