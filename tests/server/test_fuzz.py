"""The OpenAPI document, fuzzed against a running server (schemathesis): whatever a client sends,
the answer is never a 5xx, and every error is the JSON error shape with a message."""

from __future__ import annotations

import gzip
import json
import os
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from flightlog.server.routes import OPERATIONS
from flightlog.server.testing import RunningServer, serve_in_thread
from flightlog.transport import HttpStore
from tests.server.journal import Writer

# Per operation. `make test` runs a fixed, derandomized set (30 each: the file takes well under a
# minute, and a red CI is always reproducible: see the profiles in tests/conftest.py);
# FLIGHTLOG_FUZZ_EXAMPLES=N soaks with N fresh random examples per operation, e.g.
# FLIGHTLOG_FUZZ_EXAMPLES=1000 pytest tests/server/test_fuzz.py
SOAK = int(os.environ.get("FLIGHTLOG_FUZZ_EXAMPLES") or 0)
EXAMPLES = SOAK or 30


@schemathesis.serializer("application/msgpack")
def _msgpack(ctx: Any, value: Any) -> bytes:
    """Ingest bodies: whatever the generator made, as gzip'd MessagePack (the server must cope)."""
    import msgspec

    try:
        return gzip.compress(msgspec.msgpack.encode(value))
    except (TypeError, OverflowError, msgspec.EncodeError):
        return gzip.compress(b"\xc1")


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, str]]:
    home = tmp_path_factory.mktemp("fuzz")
    with serve_in_thread(
        home / "srv", auth=True, max_body=256 << 10, max_upload=1 << 20, stream_max_age=1.0
    ) as server:  # a stream of a running run ends within a second
        admin = server.token("admin")
        store = HttpStore(server.url, token=admin, home=home / "client")
        w = Writer("0123abcd")
        store.ingest(
            [
                w.run("vision", name="seed", status="succeeded", ended=2.0),
                w.metrics({"loss": ([0, 1, 2], [1.0, 0.5, float("nan")])}),
                w.logs([(1.0, "stdout", "info", "hello"), (2.0, "stderr", "error", "boom")]),
            ]
        )
        store.close()
        yield server, admin


@pytest.fixture
def api_schema(fuzzed: tuple[RunningServer, str]) -> Any:
    server, _ = fuzzed
    schema = schemathesis.openapi.from_url(server.url + "/api/v1/openapi.json")
    schema.config.update(base_url=server.url)
    return schema


def error_shape(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx/5xx answer is {"error": {"code", "message", "details"}} with a message people can read
    (MLflow's routes: MLflow's {"error_code", "message"}, which its clients read)."""
    if response.status_code == 400 and response.content.startswith(b"Invalid HTTP request"):
        return None  # uvicorn refused a malformed request (e.g. a header value HTTP forbids): it never reached the app
    if response.status_code < 400 or case.method.upper() == "HEAD":
        return None
    try:
        body = json.loads(response.content)
    except ValueError:
        raise AssertionError(f"error answer is not JSON: {response.content[:200]!r}") from None
    if case.path.startswith(MLFLOW_PREFIX):
        if not isinstance(body, dict) or not isinstance(body.get("error_code"), str) or not body.get("message"):
            raise AssertionError(f"MLflow error answer without error_code or message: {body!r}")
        return True
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict) or not isinstance(err.get("message"), str) or not err["message"].strip():
        raise AssertionError(f"error answer without a message: {body!r}")
    if not isinstance(err.get("code"), str) or not isinstance(err.get("details"), dict):
        raise AssertionError(f"error answer without code or details: {body!r}")
    return True


# h11 (uvicorn's HTTP parser) refuses a request line plus headers larger than this, before the app
HTTP_HEAD_LIMIT = 16 * 1024


def _head_size(case: Any) -> int:
    query = urllib.parse.urlencode(case.query or {}, doseq=True)
    headers = sum(len(str(k)) + len(str(v)) for k, v in (case.headers or {}).items())
    return len(urllib.parse.quote(case.formatted_path)) + len(query) + headers


MLFLOW_PREFIX = ("/api/2.0/mlflow/", "/api/2.0/mlflow-artifacts/")  # MLflow's clients read both
# MLflow's routes are served twice (/ajax-api/ for its web UI) by the same handlers: fuzzed once
OPS = [(op.method, op.full_path) for op in OPERATIONS if not op.full_path.startswith("/ajax-api/")]


@pytest.mark.parametrize(("method", "path"), OPS, ids=[f"{m} {p}" for m, p in OPS])
def test_no_request_gets_a_5xx_and_every_error_says_what_was_wrong(
    method: str, path: str, api_schema: Any, fuzzed: tuple[RunningServer, str]
) -> None:
    _, admin = fuzzed
    operation = api_schema[path][method]
    cases = operation.as_strategy(GenerationMode.POSITIVE) | operation.as_strategy(GenerationMode.NEGATIVE)

    @given(case=cases)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )
    def fuzz(case: Any) -> None:
        try:
            response = case.call(headers={"Authorization": f"Bearer {admin}"}, timeout=30)
        except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError):
            if _head_size(case) > HTTP_HEAD_LIMIT // 2:
                return  # uvicorn answered 400 to an oversized request head and closed while it was still being sent
            raise
        case.validate_response(response, checks=[not_a_server_error, error_shape])

    fuzz()


def test_the_document_covers_every_route(fuzzed: tuple[RunningServer, str]) -> None:
    import httpx

    server, _ = fuzzed
    doc = httpx.get(server.url + "/api/v1/openapi.json").json()
    assert doc["openapi"].startswith("3.1")
    served = {(op.full_path, op.method.lower()) for op in OPERATIONS}
    documented = {(path, method) for path, item in doc["paths"].items() for method in item}
    assert served == documented
    for path, item in doc["paths"].items():
        for method, op in item.items():
            assert op["summary"] and op["responses"], (method, path)
            if op.get("security") != []:
                assert "401" in op["responses"] and "403" in op["responses"], (method, path)
