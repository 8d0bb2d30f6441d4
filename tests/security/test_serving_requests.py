"""What the serving middleware takes from a request (issue 31, items 7 and 10), in a real uvicorn
model server with the middleware, driven by a real httpx client.

Item 7: one sampled streamed response of 300 MB took the served app to 1 GB, because sampled
bodies were buffered whole; now a bounded prefix and the size are kept, and a body over the
bound is recorded by its size. Item 10: ``X-Request-ID`` was taken as given (8 KB ids, escape
codes, duplicates) and generated ids were sequential, so a caller could make a label join the
wrong prediction; now given ids are bounded, checked and never reused, generated ones are 80
random bits, and a label for an id the endpoint never answered is refused."""

from __future__ import annotations

import json
import re
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from flightlog import Client, serving
from flightlog.errors import InvalidInput
from flightlog.serving.middleware import MAX_SAMPLED_BODY
from tests.helpers import run_script
from tests.serving.conftest import ModelServer

STREAM_MB = 200


def _peak_rss_while(pid: int, work: Callable[[], Any]) -> tuple[int, Any]:
    """(the process's highest RSS above its RSS before, sampled every 10 ms), what ``work`` returned."""
    proc = psutil.Process(pid)
    before = proc.memory_info().rss
    peak, done = before, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.01):
            peak = max(peak, proc.memory_info().rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = work()
    finally:
        done.set()
        sampler.join()
    return max(peak, proc.memory_info().rss) - before, result


def test_a_sampled_streamed_response_is_not_buffered(tmp_path: Path, model_server: Any) -> None:
    home = tmp_path / "home"
    app: ModelServer = model_server(home)  # every request sampled (SERVING_SAMPLE_TEST defaults to 1.0)

    def stream() -> tuple[int, str]:
        size = 0
        with httpx.stream("GET", f"{app.url}/stream?mb={STREAM_MB}", timeout=120) as response:
            for chunk in response.iter_raw():
                size += len(chunk)
            return size, response.headers["x-request-id"]

    grown, (size, rid) = _peak_rss_while(app.proc.pid, stream)
    assert size == STREAM_MB << 20
    assert grown < 64 << 20, f"the served app grew by {grown >> 20} MB while streaming {STREAM_MB} MB"
    body = json.dumps({"amount": 700, "pad": "x" * (4 << 20)}).encode()
    big = httpx.post(f"{app.url}/score", content=body, timeout=60)
    assert big.json() == {"score": 0.7, "label": "fraud"}  # the response is whole, whatever was kept
    app.stop(signal.SIGTERM)
    with Client(home) as client:
        rows = {r["request_id"]: r for r in serving.predictions(client, "fraud-api")}
        assert rows[rid]["output"] is None
        assert rows[big.headers["x-request-id"]]["inputs"] == {}
    with Client(home) as client:  # the sizes are in the records themselves
        (run,) = client.runs(project="fraud")
        fields = {e.fields["request_id"]: e.fields for e in client.logs(run, component="serving.prediction")}
        assert fields[rid]["output_bytes"] == STREAM_MB << 20
        assert fields[big.headers["x-request-id"]]["input_bytes"] == len(body) > MAX_SAMPLED_BODY


def test_request_ids_are_checked_unguessable_and_never_reused(tmp_path: Path, model_server: Any) -> None:
    home = tmp_path / "home"
    app: ModelServer = model_server(home)
    with httpx.Client(base_url=app.url, timeout=30) as http:
        made = [http.post("/score", json={"amount": 1}).headers["x-request-id"] for _ in range(20)]
        assert all(re.fullmatch(r"[0-9a-f]{20}", i) for i in made) and len(set(made)) == 20, made
        assert len({i[:4] for i in made}) > 10  # random, not a counter's neighbours
        huge = http.post("/score", json={"amount": 1}, headers={"X-Request-ID": "a" * 8192})
        assert re.fullmatch(r"[0-9a-f]{20}", huge.headers["x-request-id"])  # replaced, not echoed
        odd = http.post("/score", json={"amount": 1}, headers={"X-Request-ID": "order 1; drop"})
        assert re.fullmatch(r"[0-9a-f]{20}", odd.headers["x-request-id"])
        first = http.post("/score", json={"amount": 900}, headers={"X-Request-ID": "order-17"})
        again = http.post("/score", json={"amount": 1}, headers={"X-Request-ID": "order-17"})
        assert first.headers["x-request-id"] == "order-17" and again.headers["x-request-id"] != "order-17"
        # labels: for an id answered here (given or made), taken; for one never answered, refused
        assert http.post("/label", json={"request_id": "order-17", "label": 1}).status_code == 204
        assert http.post("/label", json={"request_id": made[3], "label": 0}).status_code == 204
        refused = http.post("/label", json={"request_id": "order-18", "label": 1})
        assert refused.status_code == 400 and "never answered" in refused.text, refused.text
        guessed = http.post("/label", json={"request_id": f"{int(made[3], 16) + 1:020x}", "label": 1})
        assert guessed.status_code == 400
    app.stop(signal.SIGTERM)
    with Client(home) as client:
        rows = {r["request_id"]: r for r in serving.predictions(client, "fraud-api")}
        assert rows["order-17"]["label"] == 1 and rows["order-17"]["inputs"] == {"amount": 900}
        assert "a" * 200 not in json.dumps(list(rows))


def test_a_label_is_taken_for_a_prediction_another_replica_sampled(tmp_path: Path, model_server: Any) -> None:
    home = tmp_path / "home"
    first: ModelServer = model_server(home)
    assert httpx.post(first.url + "/score", json={"amount": 5}, headers={"X-Request-ID": "r-elsewhere"}).is_success
    first.stop(signal.SIGTERM)  # its evidence is written as it stops
    second: ModelServer = model_server(home)
    taken = httpx.post(second.url + "/label", json={"request_id": "r-elsewhere", "label": 1}, timeout=30)
    assert taken.status_code == 204, taken.text
    refused = httpx.post(second.url + "/label", json={"request_id": "r-nowhere", "label": 1}, timeout=30)
    assert refused.status_code == 400, refused.text


@pytest.mark.parametrize("given", ["\x1b[31mred", "a\nb", "", "x" * 129, 17, None])
def test_a_given_id_that_is_not_one_is_replaced_and_cannot_be_labeled(tmp_path: Path, given: Any) -> None:
    home = tmp_path / "home"
    proc = run_script(
        home,
        f"""
        import time
        from flightlog import serving
        from flightlog.errors import InvalidInput
        replica = serving.attach(version="1", endpoint="ids", project="p", sample=1.0)
        rid = replica.request_id({given!r})
        replica.record(time.perf_counter(), 0.001, 200, rid, {{"score": 1}}, {{"amount": 1}})  # answered
        print(rid)
        try:
            serving.log_label({given!r}, 1)
        except InvalidInput as exc:
            print("refused")
        serving.log_label(rid, 1)
        print("labeled")
        """,
    )
    out = proc.stdout.split()
    assert re.fullmatch(r"[0-9a-f]{20}", out[0]) and out[1:] == ["refused", "labeled"], proc.stdout


def test_log_label_outside_a_replica_is_still_a_clear_error() -> None:
    with pytest.raises(InvalidInput):
        serving.log_label("r1", 1)
