""" "One run, two voices": the environment that points an MLflow client inside the workload at
the runner's own run on a flightlog server.

A flightlog server speaks MLflow's tracking protocol (docs/mlflow.md), so when the run goes to
a server (``FLIGHTLOG_URL``) the workload is given ``MLFLOW_TRACKING_URI`` (that server),
``MLFLOW_RUN_ID`` (this run: ``mlflow.start_run()`` resumes it instead of making another),
``MLFLOW_EXPERIMENT_NAME`` (the run's project) and, when the user set no MLflow credentials,
``MLFLOW_TRACKING_TOKEN`` (the token flightlog already uses). A workload whose MLflow client
points somewhere else (its own ``MLFLOW_TRACKING_URI``) is left alone: a run id of ours would
mean nothing there. The embedded store serves no HTTP, so a local run sets nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["mlflow_env"]


def mlflow_env(url: str | None, token: str | None, run_id: str, project: str, env: Mapping[str, str]) -> dict[str, str]:
    """The MLflow variables to add to the child's ``env`` (none when they do not apply)."""
    if not url:
        return {}
    theirs = (env.get("MLFLOW_TRACKING_URI") or "").rstrip("/")
    if theirs and theirs != url.rstrip("/"):
        return {}
    out = {"MLFLOW_TRACKING_URI": url, "MLFLOW_RUN_ID": run_id, "MLFLOW_EXPERIMENT_NAME": project}
    has_credentials = any(env.get(k) for k in ("MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_USERNAME"))
    if token and not has_credentials:
        out["MLFLOW_TRACKING_TOKEN"] = token
    return out
