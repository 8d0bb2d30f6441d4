"""Live data evidence: drift of a deployed model's inputs, and its quality per cohort.

The training run of the version serving keeps the profile of its training data
(``run.log_profile``: evidence kind ``profile``) and its evaluation per cohort
(``run.log_eval``: evidence kind ``eval``). Live, a replica samples its predictions (see
:mod:`flightlog.data.liverows`); here they become

* a :class:`LiveProfile`: the same mergeable profile as ``flightlog data profile`` (the same
  sketches, counters and caps, so its memory is bounded however many rows it has seen), fed
  one batch at a time;
* a :class:`WindowedProfile`: one LiveProfile per time bucket, so "the last hour" is a merge of
  a few small profiles and a row is profiled once, whatever the number of evaluations;
* drift per feature against the training profile, with the tests and thresholds of
  ``flightlog data drift`` (:mod:`flightlog.data.driftcheck`); a :class:`DriftMonitor` fed
  windows in time order also says since when (the onset) a feature drifts;
* cohort metrics from the labelled rows (:func:`live_cohorts`), compared with the training
  run's cohorts (:func:`compare_live`): "cohort country=BR accuracy 0.71 live vs 0.93 in training".

Only fields present both live and in training are compared: a replica logs its allow-listed
inputs, and a training column it does not log (the target, a hashed field) is no drift.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from flightlog.data.cohorts import DEFAULT_MIN_COUNT, DEFAULT_THRESHOLD, compare_cohorts, evaluate
from flightlog.data.liveprofile import LiveProfile, WindowedProfile
from flightlog.data.liverows import PredictionRow, prediction_rows
from flightlog.data.livetypes import TYPE_SHARE
from flightlog.data.profiling import Profile
from flightlog.errors import InvalidInput, NotFound
from flightlog.timefmt import iso

__all__ = [
    "LiveProfile",
    "WindowedProfile",
    "DriftMonitor",
    "FeatureDrift",
    "live_drift",
    "training_profile",
    "training_eval",
    "live_cohorts",
    "compare_live",
    "prediction_rows",
    "PredictionRow",
    "MIN_ROWS",
    "TYPE_SHARE",
]


#: Fewest rows a live window needs to be judged. Why not fewer: a test of a hundred or two rows
#: tells only large shifts from noise. Why not more: a window of fewer than ``SAMPLE_LIMIT``
#: live rows is judged with a significance test on the live rows' own number (Kolmogorov–Smirnov
#: for numbers, chi-square or a z-test for categories, at ``LIVE_P_VALUE``), not with the effect
#: size that suits large windows — whose noise alone is about 0.8 / sqrt(rows) reference
#: standard deviations, so 300 unchanged rows would often read as drift at its threshold of 0.1.
MIN_ROWS = 200
#: Live windows of at most this many rows get the significance tests (see ``MIN_ROWS``).
SAMPLE_LIMIT = 1000
#: The p-value under which a small live window drifts: stricter than a one-off comparison's
#: 0.05, since a monitor judges every feature in every window.
LIVE_P_VALUE = 0.01


class EvidenceReader(Protocol):
    """What reading a training run needs: :class:`flightlog.Client` is one."""

    def evidence(self, run: Any, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]: ...


@dataclass
class FeatureDrift:
    """One feature of one window against the training profile."""

    feature: str
    test: str
    statistic: float | None
    p_value: float | None
    threshold: float
    drifted: bool
    psi: float | None
    window_start: float | None
    window_end: float | None
    rows: int
    reference_rows: int
    onset: float | None = None  # start of the first window of the current drifted streak
    types: dict[str, int] | None = None  # a type finding: the field's values per type

    def to_dict(self) -> dict[str, Any]:
        return {
            "feature": self.feature,
            "test": self.test,
            "statistic": self.statistic,
            "p_value": self.p_value,
            "threshold": self.threshold,
            "drifted": self.drifted,
            "psi": self.psi,
            "window": {"start": iso(self.window_start), "end": iso(self.window_end), "rows": self.rows},
            "reference_rows": self.reference_rows,
            "onset": iso(self.onset),
            "onset_epoch": self.onset,
            **({"types": self.types} if self.types is not None else {}),
        }


def live_drift(
    reference: Profile | Mapping[str, Any],
    live: LiveProfile | Profile,
    *,
    features: Sequence[str] | None = None,
    thresholds: Mapping[str, float] | None = None,
    window: tuple[float | None, float | None] | None = None,
    min_rows: int = MIN_ROWS,
) -> list[FeatureDrift]:
    """Drift of each feature (those of ``features``, else every field both sides have); nothing
    for a window of fewer than ``min_rows`` rows (see :data:`MIN_ROWS`)."""
    # optional: scipy (flightlog[data]), only when drift is computed
    from flightlog.data.driftcheck import drift

    ref = reference if isinstance(reference, Profile) else Profile.from_dict(dict(reference))
    cur = live.profile if isinstance(live, LiveProfile) else live
    start, end = window or ((live.start, live.end) if isinstance(live, LiveProfile) else (None, None))
    if features:
        missing = [f for f in features if f not in ref.columns]
        if missing:
            raise InvalidInput(
                f"feature {missing[0]!r} is not in the training profile; its columns: {', '.join(ref.columns)}"
            )
        names = [f for f in features if f in cur.columns]
    else:
        names = [c for c in ref.columns if c in cur.columns]
    if not names or cur.row_count == 0 or cur.row_count < min_rows:
        return []
    small = cur.row_count <= SAMPLE_LIMIT
    limits = {"p_value": LIVE_P_VALUE, **(thresholds or {})} if small else thresholds
    tests = _small_tests(ref, cur, names) if small else None
    report = drift(ref, _like(ref, cur, names), columns=names, thresholds=limits, tests=tests)
    out = [
        FeatureDrift(
            c.column,
            c.test,
            _num(c.statistic),
            _num(c.p_value),
            c.threshold,
            c.drifted,
            _num(c.psi),
            start,
            end,
            cur.row_count,
            ref.row_count,
        )
        for c in report.columns
    ]
    retyped = {s["column"]: s for s in report.schema_changes if s.get("change") == "type" and s.get("drifted")}
    types = live.types if isinstance(live, LiveProfile) else {}
    for name in dict.fromkeys([*names, *retyped]):
        per = types.get(name) or {}
        total = sum(per.values())
        share = 1.0 - max(per.values()) / total if total else 0.0
        if name in retyped or (share >= TYPE_SHARE and len(per) > 1):
            out.append(
                FeatureDrift(
                    name,
                    "type",
                    1.0 if name in retyped else share,
                    None,
                    TYPE_SHARE,
                    True,
                    None,
                    start,
                    end,
                    cur.row_count,
                    ref.row_count,
                    types=dict(per) or {str(retyped[name].get("current")): cur.row_count},
                )
            )
    return out


def _small_tests(ref: Profile, cur: Profile, names: Sequence[str]) -> dict[str, str]:
    """The significance tests a small live window is judged with, per feature (see MIN_ROWS)."""
    tests = {}
    for name in names:
        rc, cc = ref.columns[name], cur.columns[name]
        if rc.numeric is not None and cc.numeric is not None:
            tests[name] = "ks"
        elif rc.categorical is not None and cc.categorical is not None:
            keys = set(rc.categorical.counts) | set(cc.categorical.counts)
            other = bool(rc.categorical.other_count or cc.categorical.other_count)
            tests[name] = "z" if len(keys) + other <= 2 else "chisquare"
    return tests


def _like(ref: Profile, cur: Profile, names: Sequence[str]) -> Profile:
    """``cur`` with a numeric field's exact values set aside where the training profile kept
    only its sketch: both sides then sit on the same buckets, and the sketch's resolution (1 %
    of a value) is not mistaken for drift (at a mean of 100 and a std of 20 it alone is a
    tenth of a std, the Wasserstein threshold)."""
    out = Profile(cur.row_count, dict(cur.columns), cur.source, cur.created, cur.quantiles, cur.top_k)
    for name in names:
        rc, cc = ref.columns[name], out.columns[name]
        if rc.numeric is not None and rc.numeric.values is None and cc.numeric is not None and cc.numeric.values:
            num = copy.copy(cc.numeric)
            num.values = None
            out.columns[name] = dataclasses.replace(cc, numeric=num)
    return out


def _num(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass
class DriftMonitor:
    """Windows fed in time order against one training profile; remembers each feature's onset."""

    reference: Profile
    features: Sequence[str] | None = None
    thresholds: Mapping[str, float] | None = None
    onsets: dict[str, float | None] = field(default_factory=dict)
    history: list[list[FeatureDrift]] = field(default_factory=list)
    keep: int = 100  # windows of history kept
    min_rows: int = MIN_ROWS

    def observe(self, live: LiveProfile, start: float | None = None, end: float | None = None) -> list[FeatureDrift]:
        """Drift of one window (``start``/``end`` default to the rows' own times)."""
        results = live_drift(
            self.reference,
            live,
            features=self.features,
            thresholds=self.thresholds,
            window=(start if start is not None else live.start, end if end is not None else live.end),
            min_rows=self.min_rows,
        )
        typed = {r.feature for r in results if r.test == "type"}
        for key in [k for k in self.onsets if k.endswith(":type") and k[: -len(":type")] not in typed]:
            self.onsets[key] = None  # a field that no longer mixes types: its streak is over
        for r in results:
            key = f"{r.feature}:type" if r.test == "type" else r.feature
            if r.drifted:
                if self.onsets.get(key) is None:
                    self.onsets[key] = r.window_start
                r.onset = self.onsets[key]
            else:
                self.onsets[key] = None
        self.history = [*self.history[-(self.keep - 1) :], results]
        return results

    def feed(self, rows: Iterable[PredictionRow], window: float) -> list[list[FeatureDrift]]:
        """Split time-ordered rows into consecutive windows of ``window`` seconds; observe each."""
        out: list[list[FeatureDrift]] = []
        batch: list[PredictionRow] = []
        start: float | None = None
        for r in sorted(rows, key=lambda r: r.time):
            if start is None:
                start = r.time
            if r.time >= start + window:
                out.append(self._window(batch, start, window))
                while r.time >= start + window:
                    start += window
                batch = []
            batch.append(r)
        if batch and start is not None:
            out.append(self._window(batch, start, window))
        return out

    def _window(self, batch: list[PredictionRow], start: float, window: float) -> list[FeatureDrift]:
        live = LiveProfile(self.features)
        live.update(batch)
        return self.observe(live, start, start + window)


# -- the training run's evidence -----------------------------------------------------------


def _latest(client: EvidenceReader, run_id: str, kind: str, name: str | None, what: str) -> dict[str, Any]:
    items = client.evidence(run_id, kind=kind, name=name)
    if not items:
        named = f" named {name!r}" if name else ""
        raise NotFound(
            f"training run {run_id} has no {what} ({kind} evidence{named}): log it in training with "
            f"run.log_{'profile' if kind == 'profile' else 'eval'}(...)"
        )
    names = sorted({e["name"] for e in items})
    if name is None and len(names) > 1:
        raise InvalidInput(f"training run {run_id} has several {kind} records ({', '.join(names)}): name one")
    return dict(items[-1]["data"])


def training_profile(client: EvidenceReader, run_id: str, name: str | None = None) -> Profile:
    """The data profile logged on the training run (``run.log_profile(name, ...)``)."""
    data = _latest(client, run_id, "profile", name, "data profile")
    try:
        return Profile.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidInput(f"the profile stored on run {run_id} is damaged: {exc}") from None


def training_eval(client: EvidenceReader, run_id: str, name: str | None = "eval") -> dict[str, Any]:
    """The evaluation per cohort logged on the training run (``run.log_eval(..., name=name)``)."""
    return _latest(client, run_id, "eval", name, "evaluation per cohort")


# -- cohorts ---------------------------------------------------------------------------------

_DEFAULT_METRIC = {"classification": "accuracy", "regression": "mae"}


def live_cohorts(
    rows: Iterable[PredictionRow],
    cohorts: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    task: str | None = None,
) -> dict[str, Any] | None:
    """:func:`~flightlog.data.cohorts.evaluate` of the labelled rows, per value of each cohort
    field (accuracy for labels, MAE for numbers, unless ``metrics`` says); None without labels."""
    labelled = [r for r in rows if r.has_label and r.label is not None and r.output is not None]
    if not labelled:
        return None
    y_true = [r.label for r in labelled]
    y_pred = [r.output for r in labelled]
    groups = {c: [_cohort_value(r.inputs.get(c)) for r in labelled] for c in cohorts}
    if metrics is None:
        probe = evaluate(y_true, y_pred, task=task, sample_size=0)
        metrics = [_DEFAULT_METRIC[probe["task"]]]
    return evaluate(y_true, y_pred, cohorts=groups, metrics=list(metrics), task=task, sample_size=0)


def _cohort_value(v: Any) -> Any:
    return "null" if v is None else str(v)


def compare_live(
    live: Mapping[str, Any],
    training: Mapping[str, Any],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    min_count: int = DEFAULT_MIN_COUNT,
    metrics: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Cohorts worse live than in training (:func:`~flightlog.data.cohorts.compare_cohorts`),
    each with a sentence: "cohort country=BR accuracy 0.71 live vs 0.93 in training"."""
    names = list(metrics) if metrics else [m for m in live["overall"] if m in training["overall"]]
    out = compare_cohorts(live, training, threshold=threshold, min_count=min_count, metrics=names)
    for r in out["regressions"]:
        r["summary"] = (
            f"cohort {r['cohort']}={r['value']} {r['metric']} {r['current']:.2f} live vs "
            f"{r['baseline']:.2f} in training"
        )
    return out
