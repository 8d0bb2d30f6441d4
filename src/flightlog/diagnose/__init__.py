"""Diagnosis: from a symptom to its likely cause, with the evidence and what to do next.

    from flightlog.diagnose import classify_failure          # fast, pure: exit + traceback + lines
    report = flightlog.Client().diagnose("RUN", baseline=None)   # the full report (docs/architecture.md shape)

The taxonomy lives in :mod:`.taxonomy`; what real programs leave behind when they fail lives,
as data, in :mod:`.patterns` and the runbook (``runbook.yaml``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flightlog.diagnose.taxonomy import CATEGORIES, FAILURE_CATEGORIES, KIND_OF
from flightlog.lazy import lazy_attributes

if TYPE_CHECKING:
    from flightlog.diagnose.classify import classify_failure
    from flightlog.diagnose.compare import compare_runs
    from flightlog.diagnose.engine import diagnose_run
    from flightlog.diagnose.rightsize import rightsize

__all__ = [
    "CATEGORIES",
    "FAILURE_CATEGORIES",
    "KIND_OF",
    "classify_failure",
    "compare_runs",
    "diagnose_run",
    "rightsize",
]

_LAZY = {
    "classify_failure": "flightlog.diagnose.classify",  # its patterns take ~20 ms: the feature table must not pay them
    "diagnose_run": "flightlog.diagnose.engine",
    "compare_runs": "flightlog.diagnose.compare",
    "rightsize": "flightlog.diagnose.rightsize",
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, eager=tuple(__all__))
