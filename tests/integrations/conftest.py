"""Integration tests train tiny models on the CPU with the real frameworks, offline."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("KERAS_BACKEND", "torch")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

# The frameworks' own deprecation notices about each other (torch's pytree in Lightning,
# Keras on torch, ...) are not ours to fix; flightlog's warnings (FlightlogWarning) and
# everything else still fail the test.
FRAMEWORK_WARNINGS = [
    "ignore::FutureWarning",
    "ignore::DeprecationWarning",
    "ignore::PendingDeprecationWarning",
    "ignore::UserWarning:lightning",
    "ignore::UserWarning:pytorch_lightning",
    "ignore::UserWarning:torch",
    "ignore::UserWarning:transformers",
    "ignore::UserWarning:accelerate",
    "ignore::UserWarning:keras",
    "ignore::UserWarning:xgboost",
    "ignore::UserWarning:lightgbm",
    "ignore::UserWarning:optuna",
    "ignore::ResourceWarning",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.fspath).startswith(here):
            for spec in FRAMEWORK_WARNINGS:
                item.add_marker(pytest.mark.filterwarnings(spec))
