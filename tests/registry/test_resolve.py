"""`flightlog.registry.resolve`: the one function every surface that takes a model path calls."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from flightlog.client import Client
from flightlog.errors import InvalidInput, NotFound
from flightlog.registry import Registry, resolve
from tests.registry.conftest import logged_run


def test_resolve_by_alias_version_and_latest(client: Client, tmp_path: Path) -> None:
    first = logged_run(tmp_path, {"model/weights.npz": b"v1 weights"})
    second = logged_run(tmp_path, {"model/weights.npz": b"v2 weights!"})
    reg = Registry(client)
    reg.register(first, "model/weights.npz", "fraud", alias="production")
    reg.register(second, "model/weights.npz", "fraud", alias="champion")

    mv = resolve("models:/fraud@production", client)
    assert (mv.name, mv.version, mv.run_id, mv.project) == ("fraud", 1, first, "fraud-team")
    assert mv.artifact_path == "model/weights.npz"
    assert mv.digest == hashlib.sha256(b"v1 weights").hexdigest() and mv.size == len(b"v1 weights")
    assert resolve("fraud@champion", client).run_id == second
    assert resolve("models:/fraud/2", client).digest == hashlib.sha256(b"v2 weights!").hexdigest()
    assert resolve("fraud", client).version == 2  # a bare name: the latest version


def test_resolve_refuses_unknown_model_alias_version_and_bad_refs(client: Client, tmp_path: Path) -> None:
    run = logged_run(tmp_path, {"model.bin": b"x"})
    Registry(client).register(run, "model.bin", "fraud", alias="production")
    with pytest.raises(NotFound, match="no registered model 'churn'.*fraud"):
        resolve("models:/churn@production", client)
    with pytest.raises(NotFound, match="no alias 'staging'; its aliases: production"):
        resolve("models:/fraud@staging", client)
    with pytest.raises(NotFound, match="no version 7 .*1 to 1"):
        resolve("models:/fraud/7", client)
    for bad in ("", "models:/", "models:/fraud/0", "models:/fraud@9lives", "s3://bucket/model", "fraud/x"):
        with pytest.raises(InvalidInput):
            resolve(bad, client)
