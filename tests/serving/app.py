"""A tiny model server for the serving tests (and bench/serving_overhead.py): a pure ASGI app that
scores a JSON body, wrapped in the serving middleware when SERVING_ATTACH=1. Run with uvicorn."""

from __future__ import annotations

import json
import os
from typing import Any

from flightlog import serving
from flightlog.errors import InvalidInput


async def model_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["path"] == "/label":  # the truth, learned later, for one request id
        given = json.loads(body)
        try:
            serving.log_label(given["request_id"], given["label"])
        except InvalidInput as exc:
            await send({"type": "http.response.start", "status": 400, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": exc.message.encode()})
            return
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    if scope["path"] == "/stream":  # a long streamed answer: ?mb=N megabytes, 1 MB a chunk
        mb = int((scope.get("query_string") or b"mb=1").decode().split("=")[-1])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for i in range(mb):  # a new chunk each time, as a real stream's (one object sent 200 times costs nothing)
            await send({"type": "http.response.body", "body": b"%08d" % i + b"x" * ((1 << 20) - 8), "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    if scope["path"] == "/boom":
        await send({"type": "http.response.start", "status": 500, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b'{"error": "boom"}'})
        return
    features = json.loads(body or b"{}")
    score = min(1.0, float(features.get("amount", 0)) / 1000.0)
    out = json.dumps({"score": score, "label": "fraud" if score > 0.5 else "ok"}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": out})


if os.environ.get("SERVING_ATTACH", "1") == "1":
    serving.attach(
        version="3",  # a model outside the registry: no model= (a reference is resolved by the registry)
        endpoint="fraud-api",
        env="prod",
        project="fraud",
        inputs=["amount", "country"],
        sample=float(os.environ.get("SERVING_SAMPLE_TEST", "1.0")),
        heartbeat=float(os.environ.get("SERVING_HEARTBEAT", "10")),
    )
    app: Any = serving.ServingMiddleware(model_app)
else:
    app = model_app
