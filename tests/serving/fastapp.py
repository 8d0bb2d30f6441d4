"""A FastAPI model server as a new user writes one, for the rollout test (test_rollout.py): a
scikit-learn model loaded with ``flightlog.models.load("models:/fraud@production")``, a pydantic
request model (so a wrong type is FastAPI's own 422, which echoes the request), the serving
middleware, and a log line per request that names the customer. Run with uvicorn.

The test drives a rollout over many minutes on a clock that runs ``CLOCK_SPEED`` times faster
than the wall (``serving.clock.FastClock``), shared by every replica through ``CLOCK_REAL_BASE``
(when the simulated clock read ``CLOCK_REAL_BASE`` itself). ``SERVE_MS`` is this version's time
per request; every ``SLOW_EVERY``-th request takes ``SLOW_MS`` (a slow path).
"""

from __future__ import annotations

import itertools
import logging
import os
import time

from fastapi import FastAPI
from pydantic import BaseModel

import flightlog.models
from flightlog import serving
from flightlog.serving.clock import FastClock
from flightlog.serving.middleware import DEFAULT_SKIP_PATHS

SPEED = float(os.environ["CLOCK_SPEED"])
REAL_BASE = float(os.environ["CLOCK_REAL_BASE"])
SERVE_S = float(os.environ["SERVE_MS"]) / 1000
SLOW_EVERY = int(os.environ.get("SLOW_EVERY", "0"))
SLOW_S = float(os.environ.get("SLOW_MS", "0")) / 1000

log = logging.getLogger("fraud-app")
logging.getLogger().setLevel(logging.INFO)

replica = serving.attach(
    model="fraud@production",
    endpoint="fraud-api",
    env="prod",
    inputs=["amount", "country"],
    interval=0.2,
    clock=FastClock(SPEED, start=REAL_BASE + (time.time() - REAL_BASE) * SPEED),
)
model = flightlog.models.load("models:/fraud@production")
served = itertools.count(1)


class Features(BaseModel):
    amount: float
    country: str
    email: str
    name: str
    ssn: str


api = FastAPI()


@api.get("/ping")
def ping() -> dict[str, str]:
    return {"version": replica.version}


@api.post("/score")
def score(f: Features) -> dict[str, object]:
    n = next(served)
    time.sleep(SLOW_S if SLOW_EVERY and n % SLOW_EVERY == 0 else SERVE_S)
    log.info("scored a request of %s (ssn %s)", f.email, f.ssn)  # what app code does: names the customer
    fraud = bool(model.predict([[f.amount]])[0])
    return {"fraud": fraud, "score": float(model.predict_proba([[f.amount]])[0][1])}


app = serving.ServingMiddleware(api, skip_paths=[*DEFAULT_SKIP_PATHS, "/ping"])
