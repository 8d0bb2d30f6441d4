"""MLflow's REST protocol served by flightlog: point ``MLFLOW_TRACKING_URI`` at ``flightlog server``.

A built-in feature (``feature.py``): its routes live under ``/api/2.0/mlflow/`` and
``/ajax-api/2.0/mlflow/`` and map MLflow's experiments, runs, params, tags, metrics and inputs
onto flightlog's projects, runs and records (docs/mlflow.md). Shared pieces: ``errors.py``
(MLflow's error shape), ``common.py`` (auth, request messages, declaring a route twice).
"""
