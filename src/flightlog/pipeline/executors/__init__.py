"""Where step processes run: one protocol (:class:`~.base.Executor`), several backends.

``local`` (the default) starts each step's ``flightlog run`` as a child process of the
controller; ``ray`` runs the same command as a Ray task (``pip install 'flightlog[ray]'``).
Backends are named in :data:`EXECUTORS` and imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from flightlog.errors import InvalidInput
from flightlog.pipeline.executors.base import Executor, StepLaunch

__all__ = ["Executor", "StepLaunch", "EXECUTORS", "open_executor"]

EXECUTORS: dict[str, str] = {
    "local": "flightlog.pipeline.executors.local:LocalExecutor",
    "ray": "flightlog.pipeline.executors.ray:RayExecutor",
}


def open_executor(name: str, **options: Any) -> Executor:
    target = EXECUTORS.get(name)
    if target is None:
        raise InvalidInput(f"unknown executor {name!r}: use one of {', '.join(EXECUTORS)}")
    module, _, attr = target.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    executor: Executor = factory(**options)
    return executor
