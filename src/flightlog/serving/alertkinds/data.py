"""``serving_drift`` and ``serving_cohort``: live inputs and live quality against training.

    - name: fraud-drift
      kind: serving_drift
      endpoint: fraud-api
      env: prod
      features: [amount, country]  # default: every input field the replicas log and training profiled
      window: 1h                   # default 1h: the live rows compared (bucketed per minute)
      min_rows: 1000               # default 1000: a window with fewer sampled rows is not judged
      thresholds: {wasserstein: 0.2}   # the drift thresholds of `flightlog data drift` (docs/data.md)
      profile: train               # the training run's profile name (when it logged several)
      training_run: RUN_ID         # default: the replica's tag serving.training_run

    - name: fraud-br
      kind: serving_cohort
      endpoint: fraud-api
      cohort: country              # an input field; one alert per value (country=BR, ...)
      value: BR                    # optional: only this value
      metric: accuracy             # default: accuracy for labels, mae for numbers
      below: 0.8                   # fire when the live metric is below this; or
      above: 12.0                  # above this (an error metric); or
      worse_by: 0.1                # worse than in training by this much (MAE: relatively)
      window: 1d                   # default 1d: the labelled rows compared
      min_count: 30                # default 30 labelled rows per cohort
      eval: eval                   # the training run's eval name (run.log_eval(name=...))

Both read the replicas' sampled predictions (log events of component ``serving``) through
:func:`flightlog.data.liverows.prediction_rows` and the training run's evidence through
:class:`flightlog.Client` (:mod:`flightlog.data.live`). The training run is the rule's
``training_run``, else the replica's tag ``serving.training_run`` (or ``serving.run_id``), else
its parameter ``serving.model_run`` (what ``serving.attach`` records from the registry).
The data stack (``flightlog[data]``) is imported when such a rule is first evaluated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flightlog.alerts.delta import Needs
from flightlog.alerts.kinds.base import EvalEnv, Kind
from flightlog.alerts.rules import Rule
from flightlog.alerts.schema import Fields
from flightlog.client import Client
from flightlog.config import Settings
from flightlog.data.liverows import prediction_rows
from flightlog.errors import InvalidInput, NotFound
from flightlog.models import RunInfo
from flightlog.serving.alertkinds.groups import (
    FIELDS,
    Finding,
    Group,
    ServingEvaluator,
    evaluators_of,
    parse_scope,
    window_field,
    window_text,
)

__all__ = ["DRIFT", "COHORT", "DriftSpec", "CohortSpec", "training_run_of"]

_RUN_TAGS = ("serving.training_run", "serving.run_id")
_RUN_PARAM = "serving.model_run"  # what serving.attach records: the run of the version it resolved
_COMPONENTS = ("serving", "serving.prediction", "serving.label")  # flightlog.data.liverows.COMPONENTS
_DRIFT_THRESHOLDS = ("sample_limit", "p_value", "wasserstein", "jensenshannon", "psi_bins")


@dataclass(frozen=True)
class DriftSpec:
    endpoint: str | None
    env: str | None
    features: tuple[str, ...] | None = None
    window: float = 3600.0
    min_rows: int = 1000
    thresholds: tuple[tuple[str, float], ...] = ()
    profile: str | None = None
    training_run: str | None = None
    every: float = 60.0


@dataclass(frozen=True)
class CohortSpec:
    endpoint: str | None
    env: str | None
    cohort: str
    value: str | None = None
    metric: str | None = None
    below: float | None = None
    above: float | None = None
    worse_by: float | None = None
    window: float = 86400.0
    min_count: int = 30
    eval: str = "eval"
    training_run: str | None = None
    every: float = 60.0


def _thresholds(f: Fields) -> tuple[tuple[str, float], ...]:
    raw = f.raw("thresholds")
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        f.fail("thresholds", f"must be a mapping of threshold to number ({', '.join(_DRIFT_THRESHOLDS)})")
        return ()
    out = []
    for k, v in raw.items():
        if k not in _DRIFT_THRESHOLDS:
            f.fail(("thresholds", k), f"unknown drift threshold: use one of {', '.join(_DRIFT_THRESHOLDS)}")
        elif isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
            f.fail(("thresholds", k), f"must be a number greater than 0, got {v!r}")
        else:
            out.append((str(k), float(v)))
    return tuple(out)


def parse_drift(f: Fields) -> DriftSpec | None:
    endpoint, env = parse_scope(f)
    features = f.text_list("features")
    window = window_field(f, 3600.0)
    min_rows = f.integer("min_rows", default=1000, minimum=1)
    thresholds = _thresholds(f)
    every = f.duration("every", default=60.0, allow_zero=True)
    return DriftSpec(
        endpoint,
        env,
        tuple(features) if features else None,
        window,
        1000 if min_rows is None else min_rows,
        thresholds,
        f.text("profile"),
        f.text("training_run"),
        60.0 if every is None else every,
    )


_METRICS = ("accuracy", "precision", "recall", "f1", "auc", "mae", "rmse")


def parse_cohort(f: Fields) -> CohortSpec | None:
    endpoint, env = parse_scope(f)
    cohort = f.text("cohort", required=True)
    metric = f.choice("metric", _METRICS)
    below, above, worse_by = f.number("below"), f.number("above"), f.number("worse_by", above=0.0)
    if (
        below is None
        and above is None
        and worse_by is None
        and not (f.has("below") or f.has("above") or f.has("worse_by"))
    ):
        f.fail((), "needs a condition: below: X, above: X (the live metric) or worse_by: D (against training)")
    window = window_field(f, 86400.0)
    min_count = f.integer("min_count", default=30, minimum=1)
    every = f.duration("every", default=60.0, allow_zero=True)
    if cohort is None:
        return None
    return CohortSpec(
        endpoint,
        env,
        cohort,
        f.text("value"),
        metric,
        below,
        above,
        worse_by,
        window,
        30 if min_count is None else min_count,
        f.text("eval") or "eval",
        f.text("training_run"),
        60.0 if every is None else every,
    )


def training_run_of(spec: DriftSpec | CohortSpec, runs: Sequence[RunInfo]) -> str:
    """The training run of the version a group serves: the rule's, else a replica's tag."""
    if spec.training_run:
        return spec.training_run
    for run in runs:
        for tag in _RUN_TAGS:
            value = (run.tags or {}).get(tag)
            if value:
                return str(value)
        value = (run.params or {}).get(_RUN_PARAM)
        if value:
            return str(value)
    raise NotFound(
        "no training run to compare with: set training_run in the rule, or tag the replicas serving.training_run=RUN_ID"
    )


def _logs(client: Any, run_id: str, since: float, until: float) -> list[Any]:
    out: list[Any] = []
    for component in _COMPONENTS:
        out += client.logs(run_id, since=since, until=until, component=component)
    return out


def _client(env: EvalEnv) -> Any:
    """A :class:`flightlog.Client` over the store the evaluation reads."""
    return Client.for_lookups(Settings.from_env(), env.lookup.store)


@dataclass
class _Cursor:
    at: float
    seen: set[str] = field(default_factory=set)  # request ids read at time ``at``


@dataclass
class _DriftState:
    live: Any  # flightlog.data.live.WindowedProfile
    monitor: Any  # flightlog.data.live.DriftMonitor
    reference_run: str
    cursors: dict[str, _Cursor] = field(default_factory=dict)


class DriftEvaluator(ServingEvaluator):
    def __init__(self, rules: Sequence[Rule]) -> None:
        super().__init__(rules)
        self.state: dict[tuple[str, Group], _DriftState] = {}
        self.client: Any = None

    def needs(self) -> Needs:
        return Needs(activity=True)

    def judge(self, rule: Rule, group: Group, runs: list[RunInfo], env: EvalEnv) -> list[Finding]:
        # cost: data's profiling stack (numpy, flightlog[data]) only when a serving rule is judged
        from flightlog.data import live

        spec: DriftSpec = rule.spec
        self.client = self.client or _client(env)
        run_id = training_run_of(spec, runs)
        st = self.state.get((rule.name, group))
        if st is None or st.reference_run != run_id:
            reference = live.training_profile(self.client, run_id, spec.profile)
            if spec.features:
                missing = [c for c in spec.features if c not in reference.columns]
                if missing:
                    raise InvalidInput(
                        f"feature {missing[0]!r} is not in the profile of training run {run_id}; "
                        f"its columns: {', '.join(reference.columns)}"
                    )
            st = self.state[(rule.name, group)] = _DriftState(
                live.WindowedProfile(spec.window, min(60.0, spec.window), spec.features),
                live.DriftMonitor(reference, spec.features, dict(spec.thresholds), min_rows=spec.min_rows),
                run_id,
            )
        for run in runs:
            st.live.add(self._new_rows(st, run, env, spec.window))
        window = st.live.profile(env.now)
        results = st.monitor.observe(window, env.now - spec.window, env.now)
        if not results:
            return [Finding(None)]
        return [
            Finding(
                r.drifted,
                r.statistic,
                labels={"feature": r.feature},
                since=r.onset,
                fields={
                    "feature": r.feature,
                    "test": r.test,
                    "statistic": r.statistic,
                    "threshold": r.threshold,
                    "p_value": r.p_value,
                    "rows": r.rows,
                    "window": window_text(spec.window),
                    "training_run": run_id,
                },
                evidence={**r.to_dict(), "training_run": run_id},
            )
            for r in results
        ]

    def _new_rows(self, st: _DriftState, run: RunInfo, env: EvalEnv, window: float) -> list[Any]:
        cursor = st.cursors.get(run.id) or _Cursor(env.now - window)
        events = _logs(self.client, run.id, cursor.at, env.now)
        rows = [
            r
            for r in prediction_rows(events)
            if r.time > cursor.at or (r.time == cursor.at and (r.request_id or "") not in cursor.seen)
        ]
        if rows:
            newest = max(r.time for r in rows)
            seen = {r.request_id or "" for r in rows if r.time == newest}
            cursor = _Cursor(newest, seen | cursor.seen if newest == cursor.at else seen)
        st.cursors[run.id] = cursor
        return rows

    def forget(self, run_id: str) -> None:
        super().forget(run_id)
        for st in self.state.values():
            st.cursors.pop(run_id, None)


class CohortEvaluator(ServingEvaluator):
    def __init__(self, rules: Sequence[Rule]) -> None:
        super().__init__(rules)
        self.client: Any = None

    def needs(self) -> Needs:
        return Needs(activity=True)

    def judge(self, rule: Rule, group: Group, runs: list[RunInfo], env: EvalEnv) -> list[Finding]:
        # cost: data's profiling stack (numpy, flightlog[data]) only when a serving rule is judged
        from flightlog.data import live

        spec: CohortSpec = rule.spec
        self.client = self.client or _client(env)
        events: list[Any] = []
        for run in runs:
            events += _logs(self.client, run.id, env.now - spec.window, env.now)
        rows = live.prediction_rows(events)
        ev = live.live_cohorts(rows, [spec.cohort], metrics=[spec.metric] if spec.metric else None)
        if ev is None:
            return [Finding(None)]
        metric = spec.metric or next(iter(ev["overall"]))
        training: dict[str, Any] | None = None
        run_id: str | None = None
        try:
            run_id = training_run_of(spec, runs)
            training = live.training_eval(self.client, run_id, spec.eval)
        except NotFound:
            if spec.worse_by is not None:
                raise
        base = {str(c["value"]): c for c in (training or {}).get("cohorts", []) if c["cohort"] == spec.cohort}
        regressed: set[str] = set()
        if spec.worse_by is not None and training is not None:
            cmp = live.compare_live(ev, training, threshold=spec.worse_by, min_count=spec.min_count, metrics=[metric])
            regressed = {str(r["value"]) for r in cmp["regressions"]}
        out: list[Finding] = []
        for c in ev["cohorts"]:
            value = str(c["value"])
            if spec.value is not None and value != spec.value:
                continue
            current = c["metrics"].get(metric)
            if current is None or c["count"] < spec.min_count:
                out.append(Finding(None))
                continue
            b = base.get(value)
            before = None if b is None else b["metrics"].get(metric)
            holds = (
                (spec.below is not None and current < spec.below)
                or (spec.above is not None and current > spec.above)
                or value in regressed
            )
            sentence = f"cohort {spec.cohort}={value} {metric} {current:.2f} live" + (
                f" vs {before:.2f} in training" if before is not None else ""
            )
            out.append(
                Finding(
                    holds,
                    float(current),
                    labels={"cohort": f"{spec.cohort}={value}"},
                    fields={
                        "cohort": f"{spec.cohort}={value}",
                        "metric": metric,
                        "live": current,
                        "training": before,
                        "count": c["count"],
                        "sentence": sentence,
                        "window": window_text(spec.window),
                    },
                    evidence={
                        "cohort": spec.cohort,
                        "value": c["value"],
                        "metric": metric,
                        "live": current,
                        "training": before,
                        "count": c["count"],
                        "training_count": None if b is None else b["count"],
                        "training_run": run_id,
                        "below": spec.below,
                        "above": spec.above,
                        "worse_by": spec.worse_by,
                        "window_seconds": spec.window,
                    },
                )
            )
        return out


DRIFT = Kind(
    name="serving_drift",
    doc="a serving endpoint's live input feature drifted against the training run's data profile",
    fields=(*FIELDS, "feature", "test", "statistic", "threshold", "p_value", "rows", "training_run"),
    default_summary="{endpoint} ({env}, version {version}): feature {feature} drifted against training "
    "({test} {statistic:.3g}, threshold {threshold:g}, {rows} rows over {window})",
    parse=parse_drift,
    evaluators=evaluators_of(DriftEvaluator),
    run_scoped=False,
)

COHORT = Kind(
    name="serving_cohort",
    doc="a cohort's live metric (from joined labels) below/above a value or worse than in training",
    fields=(*FIELDS, "cohort", "metric", "live", "training", "count", "sentence"),
    default_summary="{endpoint} ({env}, version {version}): {sentence} ({count} labelled rows over {window})",
    parse=parse_cohort,
    evaluators=evaluators_of(CohortEvaluator),
    run_scoped=False,
)
