"""``flightlog serving drift ENDPOINT``: each feature a version sees live against the training
data of that version, with both distributions side by side.

For every version that served in the window (or the one asked for): its training run (from the
registry, else what its replicas recorded), the data profile that run logged
(``run.log_profile``), and the sampled records of its *successful* requests in the window,
profiled as one live profile. Each feature then gets the test of ``flightlog data drift`` (a
significance test for a window of up to 1,000 rows, an effect size beyond), its verdict, and
the two distributions as figures (mean and quantiles, or the top categories); a field whose
values mix types is judged on its majority type and the rest is a ``type`` finding of its own.

What cannot be judged says why, in ``notes``: no training run known, no profile logged, fewer
rows than a test needs. The deployment page's drift panel draws this same document
(``GET /api/v1/serving/{endpoint}/drift``).
"""

from __future__ import annotations

import time
from typing import Any

from flightlog.errors import FlightlogError, InvalidInput
from flightlog.serving.livechanges import profile_of
from flightlog.serving.reading import predictions, replica_runs
from flightlog.serving.versioninfo import registry_of, version_info
from flightlog.timefmt import iso, parse_time

__all__ = ["DEFAULT_DRIFT_SINCE", "endpoint_drift"]

DEFAULT_DRIFT_SINCE = "1h"


def endpoint_drift(
    client: Any,
    endpoint: str,
    *,
    env: str | None = None,
    since: str | float | None = DEFAULT_DRIFT_SINCE,
    version: str | None = None,
    project: str | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The drift document of ``endpoint`` (see the module docstring)."""
    # the data feature (flightlog[data]: pyarrow, scipy), only when drift is asked for
    from flightlog.data.live import MIN_ROWS, LiveProfile, live_drift, prediction_rows
    from flightlog.data.livesummary import profile_column  # the data feature, as above

    now = time.time() if now is None else now
    start = parse_time(since, now=now, what="since") if isinstance(since, str) else float(since or 0.0)
    runs = replica_runs(client, endpoint, project, env)
    rows = prediction_rows(predictions(client, endpoint, start, project=project, env=env))
    last_seen: dict[str, float] = {}
    for r in rows:
        if r.version is not None:
            last_seen[r.version] = max(last_seen.get(r.version, 0.0), r.time)
    if version is not None:
        if version not in last_seen and not any((r.tags or {}).get("serving.version") == version for r in runs):
            served = sorted({str((r.tags or {}).get("serving.version")) for r in runs})
            raise InvalidInput(
                f"version {version!r} has not served {endpoint!r}; its versions: {', '.join(served) or 'none'}",
                details={"version": version, "versions": served},
            )
        wanted = [version]
    else:
        wanted = sorted(last_seen, key=lambda v: -last_seen[v])  # the version serving now first
    model = next((str((r.tags or {}).get("serving.model")) for r in runs if (r.tags or {}).get("serving.model")), None)
    registry = registry_of(client)
    out: list[dict[str, Any]] = []
    for v in wanted:
        info = version_info(registry, model, v, runs, project) or {}
        doc: dict[str, Any] = {
            "version": v,
            "model": info.get("model"),
            "training_run": info.get("run_id"),
            "rows": 0,
            "failed": 0,
            "judged": False,
            "features": [],
            "notes": [],
        }
        out.append(doc)
        mine = [r for r in rows if r.version == v]
        live = LiveProfile()
        live.update(mine)
        doc["rows"], doc["failed"] = live.rows, live.failed
        doc["window"] = {"start": iso(live.start), "end": iso(live.end)}
        if not info.get("run_id"):
            doc["notes"].append(
                f"version {v}'s training run is not known: register the version (flightlog models register) "
                "and attach replicas with its reference"
            )
            continue
        try:
            reference = profile_of(client, str(info["run_id"]))
        except FlightlogError as exc:
            doc["notes"].append(f"drift not judged: {exc}")
            continue
        if reference is None:
            doc["notes"].append(
                f"drift not judged: version {v}'s training run {str(info['run_id'])[:12]} logged no data profile "
                "(run.log_profile)"
            )
            continue
        results = live_drift(reference, live)
        if not results:
            doc["notes"].append(
                f"drift not judged: {live.rows} sampled records of successful requests, fewer than {MIN_ROWS}"
                if live.rows < MIN_ROWS
                else "drift not judged: no live field is in the training profile"
            )
        doc["judged"] = bool(results)
        for d in results:
            doc["features"].append(
                {
                    **d.to_dict(),
                    "training": profile_column(reference, d.feature),
                    "live": profile_column(live.profile, d.feature),
                }
            )
        doc["features"].sort(key=lambda f: (not f["drifted"], f["feature"], f["test"] == "type"))
    return {
        "endpoint": endpoint,
        "env": env,
        "since": iso(start),
        "until": iso(now),
        "versions": out,
        "drifted": sorted({f["feature"] for v in out for f in v["features"] if f["drifted"]}),
    }
