"""Training as other monitoring systems see it: per-run gauges for Prometheus
(``flightlog.export.prometheus``, served on the server's ``/metrics`` when asked for) and stage
spans for OpenTelemetry (``flightlog.export.otel``)."""
