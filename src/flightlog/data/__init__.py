"""Data evidence: manifests, profiles, validation gates, drift and cohorts.

A model can run perfectly and still be wrong because its data changed. This package records
what the data looked like (manifests of files, profiles of tables), checks it (expectations),
compares it with a reference (drift) and slices model quality by cohort — all as small JSON
documents stored with the run.

Heavy dependencies (pyarrow, scipy) are imported when a function needs them, so
``import flightlog.data`` is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flightlog.lazy import lazy_attributes

if TYPE_CHECKING:
    from flightlog.data.cohorts import compare_cohorts, evaluate
    from flightlog.data.driftcheck import DriftReport, Thresholds, drift
    from flightlog.data.expectations import (
        Between,
        ColumnPresent,
        ColumnType,
        Freshness,
        InSet,
        MatchesRegex,
        NotNull,
        RowCount,
        Unique,
    )
    from flightlog.data.expectfile import load_expectations, parse_expectations
    from flightlog.data.manifest import build_manifest, diff_manifests
    from flightlog.data.profiling import ColumnProfile, Profile, merge_profiles, profile
    from flightlog.data.report import render_drift_html
    from flightlog.data.validation import Suite, Validation, validate

__all__ = [
    "build_manifest",
    "diff_manifests",
    "profile",
    "Profile",
    "ColumnProfile",
    "merge_profiles",
    "Suite",
    "Validation",
    "validate",
    "load_expectations",
    "parse_expectations",
    "ColumnPresent",
    "ColumnType",
    "NotNull",
    "Between",
    "InSet",
    "Unique",
    "MatchesRegex",
    "RowCount",
    "Freshness",
    "drift",
    "DriftReport",
    "Thresholds",
    "render_drift_html",
    "evaluate",
    "compare_cohorts",
]

_HOME = {
    "build_manifest": ".manifest",
    "diff_manifests": ".manifest",
    "profile": ".profiling",
    "Profile": ".profiling",
    "ColumnProfile": ".profiling",
    "merge_profiles": ".profiling",
    "Suite": ".validation",
    "Validation": ".validation",
    "validate": ".validation",
    "load_expectations": ".expectfile",
    "parse_expectations": ".expectfile",
    "ColumnPresent": ".expectations",
    "ColumnType": ".expectations",
    "NotNull": ".expectations",
    "Between": ".expectations",
    "InSet": ".expectations",
    "Unique": ".expectations",
    "MatchesRegex": ".expectations",
    "RowCount": ".expectations",
    "Freshness": ".expectations",
    "drift": ".driftcheck",
    "DriftReport": ".driftcheck",
    "Thresholds": ".driftcheck",
    "render_drift_html": ".report",
    "evaluate": ".cohorts",
    "compare_cohorts": ".cohorts",
}


__getattr__, __dir__ = lazy_attributes(__name__, _HOME, eager=tuple(__all__))
