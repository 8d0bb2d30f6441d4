"""Drift: has the data's distribution moved away from a reference?

Every test works on two :class:`~flightlog.data.profiling.Profile` objects, so a reference can
be a profile logged months ago, and comparing two 10-million-row datasets takes milliseconds.

Per column, the test is chosen by kind and sample size (the larger of the two non-null
counts), the way Evidently does it:

=============  =========================================  =======================================
column         ≤ ``sample_limit`` (1,000) values            larger samples
=============  =========================================  =======================================
numeric        Kolmogorov–Smirnov, drift when p < 0.05      Wasserstein distance normed by the
                                                            reference std, drift when ≥ 0.1
categorical    chi-square (two categories: z-test for two   Jensen–Shannon distance (base 2),
               proportions), drift when p < 0.05            drift when ≥ 0.1
=============  =========================================  =======================================

Why: on small samples a significance test is what tells signal from noise; on large samples
every test becomes "significant" for differences nobody cares about, so an effect size with a
fixed threshold (0.1 = the distributions moved by a tenth of a standard deviation, or share
about 10 % of their mass differently) is the useful question. PSI (population stability
index, 10 reference-quantile bins or the categories) is reported alongside for every column;
the usual reading is < 0.1 stable, 0.1–0.25 moderate, > 0.25 major shift.

The dataset drifts when the share of drifted columns is at least ``drift_share`` (0.5).
A column that changed kind (numbers became text) or disappeared counts as drifted.
All thresholds can be overridden, globally or per column, and a test can be forced per column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from scipy import stats as sps
from scipy.spatial import distance as spd

from flightlog.data.profiling import ColumnProfile, Profile, profile
from flightlog.data.stats import CategoricalStats, NumericStats
from flightlog.errors import InvalidInput

__all__ = ["Thresholds", "ColumnDrift", "DriftReport", "drift", "TESTS"]

TESTS = ("ks", "wasserstein", "chisquare", "jensenshannon", "z")
_NUMERIC_TESTS = ("ks", "wasserstein")
_CATEGORICAL_TESTS = ("chisquare", "jensenshannon", "z")
_PSI_EPS = 1e-4
_OTHER = "\0other"


@dataclass(frozen=True)
class Thresholds:
    """Defaults for drift decisions; every field can be overridden (see the module docstring)."""

    sample_limit: int = 1000
    p_value: float = 0.05
    wasserstein: float = 0.1
    jensenshannon: float = 0.1
    drift_share: float = 0.5
    psi_bins: int = 10

    def with_overrides(self, overrides: Mapping[str, float] | None) -> Thresholds:
        if not overrides:
            return self
        known = set(asdict(self))
        bad = [k for k in overrides if k not in known]
        if bad:
            raise InvalidInput(f"unknown drift threshold {bad[0]!r}: use one of {', '.join(sorted(known))}")
        values: dict[str, Any] = {}
        for k, v in overrides.items():
            values[k] = int(v) if k in ("sample_limit", "psi_bins") else float(v)
        return replace(self, **values)


@dataclass
class ColumnDrift:
    column: str
    type: str  # numeric | categorical
    test: str
    statistic: float
    p_value: float | None
    threshold: float
    psi: float | None
    drifted: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "column": self.column,
            "type": self.type,
            "test": self.test,
            "statistic": _finite(self.statistic),
            "p_value": _finite(self.p_value),
            "threshold": self.threshold,
            "psi": _finite(self.psi),
            "drifted": self.drifted,
        }


def _finite(x: float | None) -> float | None:
    """JSON has no NaN or infinity: None for NaN, a huge number for infinity."""
    if x is None or math.isnan(x):
        return None
    if math.isinf(x):
        return math.copysign(1e308, x)
    return float(x)


@dataclass
class DriftReport:
    columns: list[ColumnDrift]
    schema_changes: list[dict[str, Any]] = field(default_factory=list)
    thresholds: Thresholds = field(default_factory=Thresholds)
    reference: str | None = None
    current: str | None = None

    @property
    def drifted_columns(self) -> list[str]:
        out = [c.column for c in self.columns if c.drifted]
        out += [s["column"] for s in self.schema_changes if s["drifted"]]
        return out

    @property
    def drift_share(self) -> float:
        total = len(self.columns) + sum(1 for s in self.schema_changes if s["drifted"])
        return len(self.drifted_columns) / total if total else 0.0

    @property
    def dataset_drift(self) -> bool:
        return bool(self.drifted_columns) and self.drift_share >= self.thresholds.drift_share

    def to_dict(self) -> dict[str, Any]:
        """The shape ``flightlog data drift --format json`` prints and runs store."""
        return {
            "dataset_drift": self.dataset_drift,
            "drift_share": self.drift_share,
            "columns": [c.to_dict() for c in self.columns],
            "schema_changes": self.schema_changes,
            "drift_share_threshold": self.thresholds.drift_share,
            "reference": self.reference,
            "current": self.current,
        }


def _as_profile(obj: Any) -> Profile:
    if isinstance(obj, Profile):
        return obj
    if isinstance(obj, dict) and "columns" in obj and "row_count" in obj:
        return Profile.from_dict(obj)
    return profile(obj)


def drift(
    reference: Any,
    current: Any,
    *,
    columns: Sequence[str] | None = None,
    thresholds: Thresholds | Mapping[str, float] | None = None,
    column_thresholds: Mapping[str, float] | None = None,
    tests: Mapping[str, str] | None = None,
) -> DriftReport:
    """Compare ``current`` with ``reference`` column by column (profiles, or anything profiled).

    ``thresholds`` overrides defaults (``{"wasserstein": 0.2}``); ``column_thresholds`` sets
    the threshold of whatever test a column gets; ``tests`` forces a test per column
    (``{"age": "ks"}``).
    """
    th = thresholds if isinstance(thresholds, Thresholds) else Thresholds().with_overrides(thresholds)
    tests = dict(tests or {})
    for col, t in tests.items():
        if t not in TESTS:
            raise InvalidInput(f"unknown drift test {t!r} for column {col!r}: use one of {', '.join(TESTS)}")
    ref, cur = _as_profile(reference), _as_profile(current)
    names = list(columns) if columns else list(ref.columns)
    out: list[ColumnDrift] = []
    changes: list[dict[str, Any]] = []
    for name in names:
        rc = ref.columns.get(name)
        cc = cur.columns.get(name)
        if rc is None:
            if columns:
                raise InvalidInput(f"no column {name!r} in the reference; columns: {list(ref.columns)}")
            continue
        if cc is None:
            changes.append(
                {
                    "column": name,
                    "change": "removed",
                    "reference": rc.type,
                    "current": None,
                    "drifted": True,
                }
            )
            continue
        if rc.type != cc.type:
            kind_changed = rc.kind != cc.kind and "null" not in (rc.type, cc.type)
            changes.append(
                {
                    "column": name,
                    "change": "type",
                    "reference": rc.type,
                    "current": cc.type,
                    "drifted": kind_changed,
                }
            )
            if kind_changed:
                continue
        result = _column_drift(rc, cc, th, (column_thresholds or {}).get(name), tests.get(name))
        if result is not None:
            out.append(result)
    if not columns:
        for name, cc in cur.columns.items():
            if name not in ref.columns:
                changes.append(
                    {
                        "column": name,
                        "change": "added",
                        "reference": None,
                        "current": cc.type,
                        "drifted": False,
                    }
                )
    return DriftReport(out, changes, th, ref.source, cur.source)


def _column_drift(
    rc: ColumnProfile,
    cc: ColumnProfile,
    th: Thresholds,
    threshold: float | None,
    forced: str | None,
) -> ColumnDrift | None:
    if rc.numeric is not None and cc.numeric is not None:
        if rc.numeric.count == 0 or cc.numeric.count == 0:
            return None
        if forced and forced not in _NUMERIC_TESTS:
            raise InvalidInput(f"test {forced!r} does not apply to numeric column {rc.name!r}: use ks or wasserstein")
        return _numeric(rc.name, rc.numeric, cc.numeric, th, threshold, forced)
    if rc.categorical is not None and cc.categorical is not None:
        if rc.categorical.count == 0 or cc.categorical.count == 0:
            return None
        if forced and forced not in _CATEGORICAL_TESTS:
            raise InvalidInput(
                f"test {forced!r} does not apply to categorical column {rc.name!r}: use chisquare, z or jensenshannon"
            )
        return _categorical(rc.name, rc.categorical, cc.categorical, th, threshold, forced)
    return None


# -- numeric ---------------------------------------------------------------------------------


def _points(s: NumericStats) -> tuple[np.ndarray, np.ndarray]:
    """The distribution as (sorted values, weights): exact values when kept, else sketch buckets."""
    if s.values:
        v = np.sort(np.asarray(s.values, dtype=np.float64))
        return v, np.ones(v.size)
    v, c = s.sketch.points()
    return v, c.astype(np.float64)


def _cdf(values: np.ndarray, weights: np.ndarray, at: np.ndarray) -> np.ndarray:
    cum = np.concatenate([[0.0], np.cumsum(weights)])
    return cum[np.searchsorted(values, at, side="right")] / cum[-1]


def _numeric(
    name: str,
    r: NumericStats,
    c: NumericStats,
    th: Thresholds,
    threshold: float | None,
    forced: str | None,
) -> ColumnDrift:
    rv, rw = _points(r)
    cv, cw = _points(c)
    test = forced or ("ks" if max(r.count, c.count) <= th.sample_limit else "wasserstein")
    p_value: float | None
    if test == "ks":
        limit = th.p_value if threshold is None else threshold
        if r.values and c.values:
            res = sps.ks_2samp(r.values, c.values)
            stat, p_value = float(res.statistic), float(res.pvalue)
        else:
            grid = np.union1d(rv, cv)
            stat = float(np.max(np.abs(_cdf(rv, rw, grid) - _cdf(cv, cw, grid))))
            en = round(r.count * c.count / (r.count + c.count))
            p_value = float(sps.kstwo.sf(stat, max(en, 1)))
        drifted = p_value < limit
    else:
        limit = th.wasserstein if threshold is None else threshold
        dist = float(sps.wasserstein_distance(rv, cv, rw, cw))
        norm = r.std or 0.0
        if norm <= 0:
            norm = abs(r.mean) if r.mean else 1.0
        stat, p_value = dist / norm, None
        drifted = stat >= limit
    return ColumnDrift(
        name,
        "numeric",
        test,
        stat,
        p_value,
        limit,
        _psi_numeric(r, rv, rw, cv, cw, th.psi_bins),
        drifted,
    )


def _psi(ref: np.ndarray, cur: np.ndarray) -> float:
    p = np.clip(ref / ref.sum(), _PSI_EPS, None)
    q = np.clip(cur / cur.sum(), _PSI_EPS, None)
    return float(np.sum((q - p) * np.log(q / p)))


def _psi_numeric(r: NumericStats, rv: np.ndarray, rw: np.ndarray, cv: np.ndarray, cw: np.ndarray, bins: int) -> float:
    qs = [i / bins for i in range(1, bins)]
    if r.values:
        edges = np.quantile(np.asarray(r.values), qs, method="lower")
    else:
        edges = np.asarray([q for q in r.sketch.quantiles(qs) if q is not None])
    edges = np.unique(edges)
    ref = np.bincount(np.searchsorted(edges, rv, side="left"), weights=rw, minlength=edges.size + 1)
    cur = np.bincount(np.searchsorted(edges, cv, side="left"), weights=cw, minlength=edges.size + 1)
    return _psi(ref, cur)


# -- categorical -----------------------------------------------------------------------------


def _aligned(r: CategoricalStats, c: CategoricalStats) -> tuple[list[Any], np.ndarray, np.ndarray]:
    keys = list(dict.fromkeys([*r.counts, *c.counts]))
    ref = np.array([r.counts.get(k, 0) for k in keys], dtype=np.float64)
    cur = np.array([c.counts.get(k, 0) for k in keys], dtype=np.float64)
    if r.other_count or c.other_count:
        keys.append(_OTHER)
        ref = np.append(ref, r.other_count)
        cur = np.append(cur, c.other_count)
    return keys, ref, cur


def _categorical(
    name: str,
    r: CategoricalStats,
    c: CategoricalStats,
    th: Thresholds,
    threshold: float | None,
    forced: str | None,
) -> ColumnDrift:
    keys, ref, cur = _aligned(r, c)
    small = max(r.count, c.count) <= th.sample_limit
    test = forced or (("z" if len(keys) <= 2 else "chisquare") if small else "jensenshannon")
    p_value: float | None
    if test == "jensenshannon":
        limit = th.jensenshannon if threshold is None else threshold
        stat = float(spd.jensenshannon(ref / ref.sum(), cur / cur.sum(), base=2))
        stat = 0.0 if math.isnan(stat) else stat
        p_value, drifted = None, stat >= limit
    else:
        limit = th.p_value if threshold is None else threshold
        if test == "z":
            stat, p_value = _z_test(ref, cur)
        else:
            stat, p_value = _chi_square(ref, cur)
        drifted = p_value < limit
    return ColumnDrift(name, "categorical", test, stat, p_value, limit, _psi(ref, cur), drifted)


def _chi_square(ref: np.ndarray, cur: np.ndarray) -> tuple[float, float]:
    """Chi-square test of homogeneity on the 2×k table of counts (categories seen on either side)."""
    keep = (ref + cur) > 0
    table = np.vstack([ref[keep], cur[keep]])
    if table.shape[1] < 2:
        return 0.0, 1.0
    res = sps.chi2_contingency(table, correction=False)
    return float(res.statistic), float(res.pvalue)


def _z_test(ref: np.ndarray, cur: np.ndarray) -> tuple[float, float]:
    """Two-proportion z-test on the share of the first category (two-sided)."""
    n1, n2 = ref.sum(), cur.sum()
    p1, p2 = ref[0] / n1, cur[0] / n2
    pooled = (ref[0] + cur[0]) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return 0.0, 1.0
    z = float((p1 - p2) / se)
    return z, float(2 * sps.norm.sf(abs(z)))
