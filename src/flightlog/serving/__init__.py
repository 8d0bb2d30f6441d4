"""Serving evidence: a model server attaches once, and each request it serves becomes evidence.

    from flightlog import serving
    replica = serving.attach(model="fraud@production", endpoint="fraud-api", inputs=["amount", "country"])
    app = serving.ServingMiddleware(app)          # any ASGI app (Starlette, FastAPI)
    @serving.track                                # or any Python callable, sync or async
    def predict(features): ...
    serving.log_label(request_id, label)          # the truth, when it is known

``import flightlog.serving`` is light: the middleware, the decorator and the readers are
imported when first named (docs/models.md, *Serving*).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flightlog.lazy import lazy_attributes

if TYPE_CHECKING:
    from flightlog.serving.decorator import track
    from flightlog.serving.middleware import ServingMiddleware
    from flightlog.serving.reading import aggregates, predictions, replicas
    from flightlog.serving.replica import DEFAULT_SAMPLE, Replica, attach, current, log_label

__all__ = [
    "DEFAULT_SAMPLE",
    "Replica",
    "ServingMiddleware",
    "aggregates",
    "attach",
    "current",
    "log_label",
    "predictions",
    "replicas",
    "track",
]

# cost: the feature table imports this package in every run's process (serving/feature.py), so
# even the replica (and the client it opens) waits until a name is used
_LAZY = {
    "DEFAULT_SAMPLE": ".replica",
    "Replica": ".replica",
    "attach": ".replica",
    "current": ".replica",
    "log_label": ".replica",
    "track": ".decorator",
    "ServingMiddleware": ".middleware",
    "aggregates": ".reading",
    "predictions": ".reading",
    "replicas": ".reading",
}


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, eager=tuple(__all__))
