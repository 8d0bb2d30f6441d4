"""Triage across runs: failures grouped by their cause, with the onset of each cause.

``flightlog diagnose`` answers for one run; triage answers for a project's week: which failed,
crashed and killed runs (and pipeline steps) share one cause signature, since when, and what
changed in the context between the last good run and the first bad one (docs/triage.md).
The package is a feature on the plugin table (`flightlog.triage.feature`); its modules are
imported by the commands, the API and the alert rule kind that use them, never by the core.
"""

from __future__ import annotations

__all__: list[str] = []
