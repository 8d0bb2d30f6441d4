"""The SDK recording a run, read back through the Client (in-process, real SQLite files)."""

from __future__ import annotations

import math
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import flightlog
from flightlog.errors import Conflict, FilterSyntaxError, NotFound
from flightlog.journal import list_journals


def test_params_metrics_tags_notes_round_trip(home: Path) -> None:
    with flightlog.init(
        project="vision",
        name="resnet",
        params={"lr": 0.1, "optim": {"name": "adam", "betas": [0.9, 0.99]}},
        tags={"team": "cv"},
        resources=False,
    ) as run:
        for i in range(10):
            run.log({"loss": 1.0 / (i + 1), "acc": i / 10})
        run.log_params(batch_size=32)
        run.set_tags(stage="dev")
        run.note("lr too high?")
    client = flightlog.Client()
    info = client.run(run.id[:10])
    assert info.status == "succeeded" and info.end_reason == "exit" and info.exit_code == 0
    assert info.params == {"lr": 0.1, "optim.name": "adam", "optim.betas": [0.9, 0.99], "batch_size": 32}
    assert info.tags == {"team": "cv", "stage": "dev"}
    assert info.metrics["acc"].last == pytest.approx(0.9) and info.metrics["acc"].count == 10
    assert [n.text for n in client.notes(run.id)] == ["lr too high?"]
    history = client.metric_history(run.id, "loss")
    assert isinstance(history.steps, np.ndarray)
    assert history.steps.tolist() == list(range(10))
    assert history.values[3] == pytest.approx(0.25)
    assert (np.diff(history.times) >= 0).all()


def test_config_is_params_other_name(home: Path) -> None:
    """``flightlog.init(config=cfg)`` — W&B's word, the first line a newcomer typed — failed with
    "init() got an unexpected keyword argument 'config'" before anything was recorded."""
    with flightlog.init(project="p", config={"lr": 0.1, "model": {"depth": 4}}, resources=False) as run:
        pass
    assert flightlog.Client().run(run.id).params == {"lr": 0.1, "model.depth": 4}
    with pytest.raises(flightlog.errors.InvalidInput, match="both params= and config="):
        flightlog.init(project="p", params={"lr": 0.1}, config={"lr": 0.2}, resources=False)


def test_explicit_and_auto_steps(home: Path) -> None:
    run = flightlog.init(project="p", resources=False)
    run.log({"a": 1.0}, step=5)
    run.log({"a": 2.0})  # one past the last step
    run.log({"b": 3.0}, step=2)  # earlier step: kept, does not move the counter back
    run.log({"a": 4.0})
    run.finish()
    client = flightlog.Client()
    assert client.metric_history(run.id, "a").steps.tolist() == [5, 6, 7]
    assert client.metric_history(run.id, "b").steps.tolist() == [2]


def test_non_numeric_metric_raises_at_call_site_naming_the_key(home: Path) -> None:
    run = flightlog.init(project="p", resources=False)
    with pytest.raises(TypeError, match="'accuracy'"):
        run.log({"loss": 0.5, "accuracy": "high"})
    with pytest.raises(TypeError, match="'x'"):
        run.log({"x": None})
    with pytest.raises(TypeError, match="step"):
        run.log({"x": 1.0}, step=1.5)  # type: ignore[arg-type]
    run.log({"np": np.float32(0.5), "flag": True, "i": np.int64(3)})
    run.finish()
    m = flightlog.Client().run(run.id).metrics
    assert m["np"].last == 0.5 and m["flag"].last == 1.0 and m["i"].last == 3.0
    assert "accuracy" not in m and "loss" not in m  # a rejected call records nothing


def test_nan_and_inf_are_stored_and_flagged(home: Path) -> None:
    run = flightlog.init(project="p", resources=False)
    for v in (1.0, math.nan, math.inf, -math.inf, 2.0):
        run.log({"loss": v})
    run.finish()
    client = flightlog.Client()
    summary = client.run(run.id).metrics["loss"]
    assert summary.nonfinite == 3 and summary.min == 1.0 and summary.max == 2.0 and summary.last == 2.0
    history = client.metric_history(run.id, "loss")
    assert np.isnan(history.values[1]) and history.values[2] == math.inf and history.values[3] == -math.inf
    assert history.nonfinite.tolist() == [False, True, True, True, False]


def test_param_json_cannot_hold_is_stored_as_repr_with_warning(home: Path) -> None:
    class Cfg:
        def __repr__(self) -> str:
            return "Cfg(depth=3)"

    run = flightlog.init(project="p", resources=False)
    with pytest.warns(flightlog.FlightlogWarning, match="'model'"):
        run.log_params({"model": Cfg(), "ok": 1})
    run.log_params({"db_password": "hunter2hunter2"})
    run.finish()
    params = flightlog.Client().run(run.id).params
    assert params["model"] == "Cfg(depth=3)" and params["ok"] == 1
    assert params["db_password"] == "[REDACTED:secret]"


def test_stage_aggregation_keeps_coarse_whole_and_samples_fine(home: Path) -> None:
    run = flightlog.init(project="p", resources=False)
    with run.stage("data_loading", source="local"):
        pass
    with run.stage("train"):
        for _ in range(500):
            with run.stage("batch"):
                pass
    run.finish()
    stages = {s.name: s for s in flightlog.Client().stages(run.id)}
    assert stages["data_loading"].count == 1 and stages["data_loading"].spans[0].attrs == {"source": "local"}
    batch = stages["batch"]
    assert batch.count == 500 and sum(batch.hist) == 500
    whole = [s for s in batch.spans if not s.sampled]
    sampled = [s for s in batch.spans if s.sampled]
    assert len(whole) == 20 and 0 < len(sampled) <= 50
    assert batch.min <= batch.mean <= batch.max
    assert stages["train"].spans[0].start <= whole[0].start


def test_stage_error_is_recorded_on_the_span(home: Path) -> None:
    run = flightlog.init(project="p", resources=False)
    with pytest.raises(ValueError), run.stage("eval"):
        raise ValueError("boom")
    run.finish()
    span = flightlog.Client().stages(run.id)[0].spans[0]
    assert span.attrs == {"error": "ValueError"}


def test_context_manager_exception_marks_failed_with_traceback(home: Path) -> None:
    with pytest.raises(KeyError), flightlog.init(project="p", resources=False) as run:
        raise KeyError("label")
    info = flightlog.Client().run(run.id)
    assert info.status == "failed" and info.end_reason == "exception"
    assert info.failure is not None and info.failure["exception"] == "KeyError"
    assert "label" in info.failure["message"]
    assert info.failure["frames"][-1]["function"] == "test_context_manager_exception_marks_failed_with_traceback"


def test_existing_id_needs_resume_and_resume_starts_a_new_attempt(home: Path) -> None:
    run = flightlog.init(project="p", id="my-run-1", resources=False)
    run.log({"x": 1.0})
    run.finish("failed")
    with pytest.raises(Conflict, match="resume=True"):
        flightlog.init(project="p", id="my-run-1", resources=False)
    again = flightlog.init(id="my-run-1", resume=True, resources=False)
    assert again.attempt == 2 and again.project == "p"
    again.log({"x": 2.0})
    again.finish()
    info = flightlog.Client().run("my-run-1")
    assert info.status == "succeeded" and info.attempt == 2 and info.metrics["x"].count == 2


def test_module_level_log_and_active_run(home: Path) -> None:
    assert flightlog.active_run() is None
    with pytest.raises(flightlog.FlightlogError, match="init"):
        flightlog.log({"a": 1})
    run = flightlog.init(project="p", resources=False)
    assert flightlog.active_run() is run
    flightlog.log({"a": 1.0})
    flightlog.finish()
    assert flightlog.active_run() is None
    assert flightlog.Client().run(run.id).metrics["a"].last == 1.0


def test_artifacts_checkpoints_and_lineage(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    producer = flightlog.init(project="p", name="prep", resources=False)
    producer.log_artifact(data, kind="dataset")
    producer.finish()
    consumer = flightlog.init(project="p", name="train", resources=False)
    consumer.log_input(data)
    ckpt = tmp_path / "ckpt.pt"
    ckpt.write_bytes(b"\0" * 1000)
    consumer.checkpoint(ckpt, step=100)
    model = tmp_path / "model.bin"
    model.write_bytes(b"weights")
    consumer.log_artifact(model, kind="model")
    consumer.finish()
    client = flightlog.Client()
    arts = {a.path: a for a in client.artifacts(consumer.id)}
    assert arts["ckpt.pt"].step == 100 and arts["ckpt.pt"].uri == f"file://{ckpt}" and arts["ckpt.pt"].size == 1000
    assert arts["model.bin"].size == 7 and len(arts["model.bin"].sha256 or "") == 64
    out = tmp_path / "out" / "model.bin"
    client.download_artifact(consumer.id, "model.bin", out)
    assert out.read_bytes() == b"weights"
    lineage = client.lineage(consumer.id)
    assert lineage["inputs"][0]["produced_by"] == [producer.id]
    assert client.lineage(producer.id)["outputs"][0]["used_by"] == [consumer.id]
    with pytest.raises(FileNotFoundError):
        consumer.log_artifact(tmp_path / "missing")


def test_filters_and_ordering_through_the_client(home: Path) -> None:
    for lr, acc, status in ((0.001, 0.7, None), (0.05, 0.9, "failed"), (0.1, 0.8, None), (0.2, 0.95, None)):
        r = flightlog.init(project="p", params={"lr": lr}, tags={"team": "vision"}, resources=False)
        r.log({"acc": acc})
        r.finish(status)
    client = flightlog.Client()
    top = client.runs(project="p", filter="params.lr > 0.01", order_by="-metrics.acc", limit=2)
    assert [r.params["lr"] for r in top] == [0.2, 0.05]
    failed = client.runs(filter="params.lr > 0.01 and status = 'failed' and tags.team = 'vision'")
    assert [r.params["lr"] for r in failed] == [0.05]
    with pytest.raises(FilterSyntaxError) as exc:
        client.runs(filter="params.lr >> 1")
    assert exc.value.position == 11


def test_disabled_mode_records_nothing_but_validates(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLIGHTLOG_MODE", "disabled")
    run = flightlog.init(project="p")
    run.log({"a": 1.0})
    with run.stage("s"):
        pass
    with pytest.raises(TypeError):
        run.log({"a": "x"})
    run.finish()
    assert not (home / "flightlog.db").exists()


def test_unwritable_home_warns_counts_drops_and_keeps_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("FLIGHTLOG_HOME", str(blocker / "home"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = flightlog.init(project="p", resources=False)
        for i in range(1000):
            run.log({"loss": float(i)})
        run.finish()
    err = capfd.readouterr().err
    assert "cannot write the journal" in err and "could not be saved" in err
    assert run.stats["dropped"] >= 1000


def test_client_annotates_an_existing_run(home: Path, tmp_path: Path) -> None:
    run = flightlog.init(project="p", resources=False)
    run.finish()
    report = tmp_path / "report.html"
    report.write_text("<h1>eval</h1>")
    client = flightlog.Client()
    record = client.log_artifact(run.id, report, kind="report")
    client.add_note(run.id, "looked fine", author="ana")
    client.log_evidence(run.id, "validation", "train.csv", {"passed": True})
    assert record["kind"] == "report" and record["size"] == len("<h1>eval</h1>")
    assert [a.kind for a in client.artifacts(run.id)] == ["report"]
    assert [(n.author, n.text) for n in client.notes(run.id)] == [("ana", "looked fine")]
    assert client.evidence(run.id, kind="validation")[0]["data"] == {"passed": True}


def test_one_element_arrays_count_as_their_element(home: Path) -> None:
    run = flightlog.init(project="p", resources=False)
    run.log({"vec": np.array([0.5]), "zero_d": np.array(2.0), "nested": np.array([[3]]), "f32": np.float32(1.5)})
    with pytest.raises(TypeError, match=r"'pair'.*shape \(2,\)"):
        run.log({"pair": np.array([1.0, 2.0])})
    with pytest.raises(TypeError, match="'empty'"):
        run.log({"empty": np.array([])})
    run.finish()
    m = flightlog.Client().run(run.id).metrics
    assert (m["vec"].last, m["zero_d"].last, m["nested"].last, m["f32"].last) == (0.5, 2.0, 3.0, 1.5)
    assert "pair" not in m and "empty" not in m


def test_steps_and_values_beyond_64_bits_are_refused_at_the_call(home: Path) -> None:
    run = flightlog.init(project="p", resources=False)
    run.log({"m": 1.0}, step=1)
    with pytest.raises(ValueError, match="step"):
        run.log({"m": 1.0}, step=2**63)
    with pytest.raises(ValueError, match="step"):
        run.log({"m": 1.0}, step=np.uint64(2**63))
    with pytest.raises(ValueError, match="'m'"):
        run.log({"m": -(10**400)})
    run.log({"m": 2.0, "big": 2**70})  # a big int that a float holds is fine
    run.log({"m": 3.0})
    run.finish()
    info = flightlog.Client().run(run.id)
    assert info.status == "succeeded"
    assert flightlog.Client().metric_history(run.id, "m").steps.tolist() == [1, 2, 3]  # refused calls moved nothing
    assert info.metrics["big"].last == float(2**70)
    assert run.stats["dropped"] == 0


def test_a_bad_point_or_record_past_the_call_is_dropped_alone(home: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """What reaches the writer's buffers unchecked never costs the records around it, nor the run's end."""
    run = flightlog.init(project="p", resources=False)
    run.log({"m": 1.0}, step=1)
    run._w.metrics.append((2**63, 0.0, {"m": 2.0}))  # as a caller that skipped Run.log's checks would
    run._w.add_record("evidence", kind="x", name="unencodable", data={"v": object()})
    run.log({"m": 3.0}, step=3)
    run.log_params(lr=0.1)
    run.finish()
    info = flightlog.Client().run(run.id)
    assert info.status == "succeeded" and info.params == {"lr": 0.1}
    assert flightlog.Client().metric_history(run.id, "m").steps.tolist() == [1, 3]
    assert run.stats["dropped"] == 2
    err = capfd.readouterr().err
    assert "1 metric point(s)" in err and "could not be encoded" in err
    assert list_journals(home, run.id) == []


def test_the_resource_sampler_outlives_a_run_and_serves_the_next(home: Path) -> None:
    """finish() pauses the process's sampler instead of stopping (and joining) it; the next run resumes it."""
    client = flightlog.Client()
    first = flightlog.init(project="p")
    _wait_for_samples(client, first)
    first.finish()
    samplers = [t for t in threading.enumerate() if t.name == "flightlog-resources"]
    assert len(samplers) == 1 and samplers[0].is_alive()
    second = flightlog.init(project="p")
    _wait_for_samples(client, second)
    second.finish()
    assert [t for t in threading.enumerate() if t.name == "flightlog-resources"] == samplers
    assert client.run(first.id).status == client.run(second.id).status == "succeeded"


def _wait_for_samples(client: flightlog.Client, run: flightlog.Run) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            if client.resources(run.id):
                return
        except NotFound:  # not shipped yet
            pass
        assert time.monotonic() < deadline, "no resource sample reached the store"
        time.sleep(0.05)
