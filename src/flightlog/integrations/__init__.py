"""Plug flightlog into the training code a team already has (docs/integrations.md).

Each integration lives in its own module and imports its framework only when imported, so
``import flightlog`` never pulls in torch or transformers:

| module | gives |
| --- | --- |
| ``flightlog.integrations.lightning`` | ``FlightlogLogger`` (a Lightning ``Logger``) and ``FlightlogStages`` |
| ``flightlog.integrations.huggingface`` | ``FlightlogCallback`` (a ``TrainerCallback``; also ``report_to="flightlog"``) |
| ``flightlog.integrations.keras`` | ``FlightlogKerasCallback`` |
| ``flightlog.integrations.xgboost`` | ``FlightlogXGBoostCallback`` |
| ``flightlog.integrations.lightgbm`` | ``flightlog_lightgbm_callback`` |
| ``flightlog.integrations.pytorch`` | ``timed_batches``: data loading against compute, per batch |

Every integration records into the run it is given, else the active run (``flightlog.init``
or ``flightlog run``), else a run it starts itself; its hooks never raise into training.
"""
