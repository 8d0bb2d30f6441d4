"""The fraud API: a small Starlette app, one replica of the endpoint ``fraud-api`` per process.

    python app.py --port 8001              # serves what `flightlog deploy` set for fraud-api (prod)
    FRAUD_MODEL=models:/fraud@production python app.py --port 8001   # or a model reference

At start-up it asks the registry which version to serve (the deployment's desired version,
else ``FRAUD_MODEL``), downloads that version's weights from its training run and checks
their sha256 against the registered digest, then attaches as a serving replica: from then on
every request is evidence on the replica's run (docs/models.md, *Serving*).

* ``POST /predict`` ``{"amount", "hour", "country", "card_present", "account_age_days", ...}``
  → ``{"fraud_probability", "fraud", "version"}``, with the request id in ``X-Request-ID``;
* ``POST /label`` ``{"request_id", "label"}``: the truth, learned later (a chargeback or not),
  joined to the prediction by request id (any replica may receive it);
* ``GET /healthz``: the model and version this replica serves.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import fraud
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, request_response

from flightlog import Client, serving
from flightlog.errors import InvalidInput
from flightlog.registry import Registry, resolve

ENDPOINT = os.environ.get("FRAUD_ENDPOINT", "fraud-api")
ENV = os.environ.get("FRAUD_ENV", "prod")
FIELDS = {"amount": float, "hour": int, "country": str, "card_present": int, "account_age_days": int}


def reference(client: Client) -> str:
    """What this replica serves: ``FRAUD_MODEL`` when given, else the deployment's version (a
    restarted replica serves what was deployed, not wherever an alias has moved since)."""
    given = os.environ.get("FRAUD_MODEL")
    if given:
        return given
    deployment = Registry(client).deployment(ENDPOINT, ENV)
    return f"models:/{deployment.name}/{deployment.version}"


def load_model() -> tuple[Any, fraud.Model]:
    """The registered version and its weights, checked against the registered sha256."""
    with Client() as client:
        version = resolve(reference(client), client)
        dest = Path(tempfile.mkdtemp(prefix="fraud-model-")) / "model.npz"
        path = client.download_artifact(version.run_id, version.artifact_path, dest)
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    if version.digest and digest != version.digest:
        raise SystemExit(f"{version.ref}: downloaded sha256 {digest} is not the registered {version.digest}")
    return version, fraud.load(path)


VERSION, MODEL = load_model()
REPLICA = serving.attach(
    model=f"{VERSION.name}/{VERSION.version}",
    endpoint=ENDPOINT,
    env=ENV,
    project=VERSION.project,
    inputs=list(FIELDS),  # kept as they are in prediction records; other fields (merchant) as hashes
    label_field="fraud",  # the answer is a JSON object: its labels (chargebacks) are compared with "fraud"
)


def _features(body: Any) -> dict[str, Any]:
    """The transaction, or ValueError naming what is wrong."""
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object of the transaction's fields")
    missing = [name for name in FIELDS if name not in body]
    if missing:
        raise ValueError(f"missing field(s) {', '.join(missing)}; a transaction has {', '.join(FIELDS)}")
    try:
        return {name: kind(body[name]) for name, kind in FIELDS.items()}
    except (TypeError, ValueError) as exc:
        raise ValueError(f"a field has the wrong type ({exc}); amount is a number, country text") from None


async def predict(request: Request) -> Response:
    try:
        features = _features(await request.json())
    except ValueError as exc:  # a JSONDecodeError is one too
        return JSONResponse({"error": {"code": "invalid_input", "message": str(exc)}}, status_code=400)
    probability = float(MODEL.predict([features])[0])
    return JSONResponse(
        {"fraud_probability": round(probability, 4), "fraud": probability > 0.5, "version": VERSION.version}
    )


async def label(request: Request) -> Response:
    try:
        body = await request.json()
        serving.log_label(body["request_id"], body["label"])
    except (ValueError, KeyError, TypeError, InvalidInput):
        message = 'give {"request_id": the X-Request-ID of the prediction, "label": the truth}'
        return JSONResponse({"error": {"code": "invalid_input", "message": message}}, status_code=400)
    return Response(status_code=204)


async def healthz(request: Request) -> Response:
    return JSONResponse({"model": VERSION.name, "version": VERSION.version, "endpoint": ENDPOINT, "env": ENV})


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    yield
    REPLICA.close(finish=True)  # a drained shutdown (SIGTERM from a rolling restart) is a normal end


# Only /predict is evidence: the label posts and health checks would blur its latency and counts.
app = Starlette(
    routes=[
        Route("/predict", serving.ServingMiddleware(request_response(predict)), methods=["POST"]),
        Route("/label", label, methods=["POST"]),
        Route("/healthz", healthz),
    ],
    lifespan=lifespan,
)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description="the fraud API (one replica)")
    ap.add_argument("--port", type=int, default=8001)
    ap.add_argument("--host", default="127.0.0.1")
    args = ap.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
