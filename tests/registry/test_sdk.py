"""``run.register_model`` from the training script, through the feature table."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import flightlog
from flightlog.client import Client
from flightlog.errors import InvalidInput, NotFound
from flightlog.registry import resolve


def test_register_model_from_the_run_right_after_logging_it(client: Client, tmp_path: Path) -> None:
    weights = tmp_path / "weights.npz"
    weights.write_bytes(b"trained")
    ckpt = tmp_path / "ckpt.pt"
    ckpt.write_bytes(b"checkpoint bytes")
    run = flightlog.init(project="fraud-team")
    run.log_artifact(weights, name="model/weights.npz")
    mv = run.register_model("model/weights.npz", "fraud", alias="champion", description="first", tags={"lr": "0.1"})
    run.checkpoint(ckpt, step=10)
    from_ckpt = run.register_model("ckpt.pt", "fraud")
    with pytest.raises(NotFound, match="never logged 'model/missing.npz'.*model/weights.npz"):
        run.register_model("model/missing.npz", "fraud")
    with pytest.raises(InvalidInput, match="alias"):
        run.register_model("model/weights.npz", "fraud", alias="@@bad")
    run.finish()

    assert (mv.version, mv.run_id, mv.description, mv.tags) == (1, run.id, "first", {"lr": "0.1"})
    assert mv.digest == hashlib.sha256(b"trained").hexdigest()
    assert from_ckpt.source == "checkpoint" and from_ckpt.version == 2
    assert resolve("models:/fraud@champion", client).version == 1
    assert resolve("fraud", client).version == 2  # the refused calls made no version
