"""Export: per-run gauges on the server's /metrics (opt-in) and stages as OpenTelemetry spans."""

from __future__ import annotations

import math
import time
from pathlib import Path

import httpx
import pytest

import flightlog
from flightlog.server.testing import serve_in_thread


def _gauges(text: str) -> dict[tuple[str, str], float]:
    """{(series name, label text): value} of the flightlog_run_* lines."""
    out = {}
    for line in text.splitlines():
        if line.startswith("flightlog_run_"):
            head, value = line.rsplit(" ", 1)
            name, labels = head.split("{", 1)
            out[(name, labels.rstrip("}"))] = float(value)
    return out


@pytest.mark.embedded_only("starts its own servers (with and without the gauges, with and without auth)")
def test_metrics_endpoint_exports_running_runs_only_when_asked(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve_in_thread(tmp_path / "srv", auth=True, export_run_metrics=True) as server:
        monkeypatch.setenv("FLIGHTLOG_URL", server.url)
        monkeypatch.setenv("FLIGHTLOG_TOKEN", server.token("writer"))
        running = flightlog.init(project="vision", name="resnet", resources=False)
        running.log({"loss": 0.5, "acc": 0.25}, step=7)
        running.log({"grad_norm": math.nan}, step=7)
        running._w.flush()
        done = flightlog.init(project="vision", name="old", resources=False)
        done.log({"loss": 0.1})
        done.finish()

        reader = server.token("reader")
        other_project = server.token("reader", project="nlp")
        text = httpx.get(f"{server.url}/metrics", headers={"Authorization": f"Bearer {reader}"}).text
        assert "flightlog_http_requests_total" in text  # the server's own counters are still there
        gauges = _gauges(text)
        base = f'project="vision",run="{running.id}",name="resnet"'
        assert gauges[("flightlog_run_metric", f'{base},metric="loss"')] == 0.5
        assert gauges[("flightlog_run_metric_step", f'{base},metric="acc"')] == 7
        assert math.isnan(gauges[("flightlog_run_metric", f'{base},metric="grad_norm"')])
        assert gauges[("flightlog_run_duration_seconds", base)] >= 0
        assert not [k for k in gauges if done.id in k[1]]  # an ended run has no series

        anonymous = httpx.get(f"{server.url}/metrics").text
        assert "flightlog_http_requests_total" in anonymous and not _gauges(anonymous)
        assert "need a reader token" in anonymous
        limited = httpx.get(f"{server.url}/metrics", headers={"Authorization": f"Bearer {other_project}"}).text
        assert not _gauges(limited)
        running.finish()

    with serve_in_thread(tmp_path / "plain") as server:  # default: no per-run series at all
        assert "flightlog_run_" not in httpx.get(f"{server.url}/metrics").text


def test_stages_export_as_opentelemetry_spans(home: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from flightlog.export.otel import export_run_spans

    with flightlog.init(project="vision", name="resnet", resources=False) as run:
        with run.stage("startup"):
            time.sleep(0.01)
        for i in range(3):
            with run.stage("train_step", batch=i):
                pass
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert export_run_spans(run.id, tracer_provider=provider) == 5

    spans = {s.name: s for s in exporter.get_finished_spans()}
    root = spans["resnet"]
    assert root.attributes["flightlog.run_id"] == run.id and root.attributes["flightlog.status"] == "succeeded"
    assert root.parent is None
    steps = [s for s in exporter.get_finished_spans() if s.name == "train_step"]
    assert sorted(s.attributes["stage.batch"] for s in steps) == [0, 1, 2]
    assert all(s.parent.span_id == root.context.span_id and s.context.trace_id == root.context.trace_id for s in steps)
    startup = spans["startup"]
    # slept 10 ms; times travel as float seconds (sub-microsecond rounding over HTTP)
    assert (startup.end_time - startup.start_time) / 1e9 >= 0.0099
    assert root.start_time <= startup.start_time and startup.end_time <= root.end_time
    assert {e.attributes["stage"] for e in root.events} == {"startup", "train_step"}
