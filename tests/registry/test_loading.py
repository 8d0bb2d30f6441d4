"""`flightlog.models.load`: a model a real run registered, resolved, downloaded into a cache keyed
by its digest, checked, and loaded by kind — scikit-learn, a torch state dict, TorchScript,
XGBoost, LightGBM, a directory; a digest mismatch is refused and nothing is kept."""

from __future__ import annotations

import hashlib
import shutil
import warnings
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pytest

import flightlog
import flightlog.models
from flightlog.client import Client
from flightlog.errors import DigestMismatch, InvalidInput


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Client:
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_TOKEN", "FLIGHTLOG_STORE", "FLIGHTLOG_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "off")
    monkeypatch.setenv("FLIGHTLOG_MODEL_CACHE", str(tmp_path / "cache"))
    return Client()


def _register(tmp_path: Path, files: dict[str, Any], name: str, path: str, alias: str = "production") -> str:
    """A real run that writes ``files`` (name → a function writing the file), logs ``path`` and
    registers it as the next version of ``name``."""
    run = flightlog.init(project="fraud-team", name=f"train {name}")
    work = tmp_path / f"work-{name}"
    work.mkdir(exist_ok=True)
    for rel, write in files.items():
        target = work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        write(target)
    run.log_artifact(work / path.split("/")[0], name=path.split("/")[0])
    version = run.register_model(path, name, alias=alias)
    run.finish()
    return str(version.ref)


def _blob(home: Path, sha: str) -> Path:
    (found,) = [p for p in (home / "artifacts").rglob("*") if p.is_file() and sha in str(p).replace("/", "")]
    return found


def test_a_scikit_learn_model_and_a_torch_state_dict_load_in_one_call(tmp_path: Path, store: Client) -> None:
    import torch
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    y = (x[:, 0] + x[:, 1] > 0).astype(int)
    clf = LogisticRegression().fit(x, y)
    _register(tmp_path, {"model.joblib": lambda p: joblib.dump(clf, p)}, "fraud", "model.joblib")
    net = torch.nn.Linear(3, 2)
    _register(tmp_path, {"weights.pt": lambda p: torch.save(net.state_dict(), p)}, "scorer", "weights.pt")

    loaded = flightlog.models.load("models:/fraud@production")
    assert type(loaded).__name__ == "LogisticRegression"
    assert (loaded.predict(x) == clf.predict(x)).all()
    state = flightlog.models.load("scorer@production")
    assert set(state) == {"weight", "bias"} and torch.equal(state["weight"], net.weight.detach())
    into = flightlog.models.load("scorer/1", model=torch.nn.Linear(3, 2))
    assert torch.equal(into(torch.ones(1, 3)), net(torch.ones(1, 3)))
    # the cache is keyed by the digest of the bytes
    digest = hashlib.sha256(joblib_bytes := (tmp_path / "work-fraud" / "model.joblib").read_bytes()).hexdigest()
    assert (tmp_path / "cache" / digest / "model.joblib").read_bytes() == joblib_bytes
    assert flightlog.models.download("fraud@production") == tmp_path / "cache" / digest / "model.joblib"


def test_a_digest_mismatch_is_refused_and_nothing_is_kept(tmp_path: Path, store: Client) -> None:
    _register(tmp_path, {"model.pkl": lambda p: joblib.dump({"w": [1, 2, 3]}, p)}, "fraud", "model.pkl")
    mv = flightlog.registry.resolve("fraud@production", store)
    assert mv.digest is not None
    blob = _blob(tmp_path / "home", mv.digest)
    good = blob.read_bytes()
    blob.chmod(0o644)
    blob.write_bytes(good[:-4] + b"evil")  # the artifact store now holds other bytes
    with pytest.raises(DigestMismatch, match="not the registered") as caught:
        flightlog.models.load("fraud@production")
    assert caught.value.details["expected"] == mv.digest
    assert not (tmp_path / "cache" / mv.digest).exists()
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [], "no half download left"
    blob.write_bytes(good)
    assert flightlog.models.load("fraud@production") == {"w": [1, 2, 3]}
    # a cached copy changed on disk is checked again (and refused, the store's blob being bad again)
    cached = tmp_path / "cache" / mv.digest / "model.pkl"
    cached.write_bytes(good[:-4] + b"evil")
    blob.write_bytes(good[:-4] + b"evil")
    with pytest.raises(DigestMismatch):
        flightlog.models.load("fraud@production")


def test_torchscript_boosters_and_directories_load_by_kind(tmp_path: Path, store: Client) -> None:
    import lightgbm
    import torch
    import xgboost

    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(100, 4)), rng.integers(0, 2, 100)
    with warnings.catch_warnings():  # TorchScript is deprecated in torch 2.13, and still what many servers load
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(torch.nn.Linear(4, 1))
    booster = xgboost.train({"max_depth": 2}, xgboost.DMatrix(x, label=y), num_boost_round=3)
    gbm = lightgbm.train({"verbose": -1, "num_leaves": 4}, lightgbm.Dataset(x, label=y), num_boost_round=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        _register(tmp_path, {"script.pt": lambda p: torch.jit.save(scripted, str(p))}, "ts", "script.pt")
    _register(tmp_path, {"booster.json": lambda p: booster.save_model(str(p))}, "xgb", "booster.json")
    _register(tmp_path, {"gbm.txt": lambda p: gbm.save_model(str(p))}, "lgb", "gbm.txt")
    files = {
        "bundle/weights.bin": lambda p: p.write_bytes(b"\0" * 64),
        "bundle/config/labels.txt": lambda p: p.write_text("a\nb\n"),
    }
    _register(tmp_path, files, "bundle", "bundle")

    module = flightlog.models.load("ts@production")
    assert isinstance(module, torch.jit.ScriptModule) and module(torch.ones(1, 4)).shape == (1, 1)
    got = flightlog.models.load("xgb@production")
    assert isinstance(got, xgboost.Booster) and np.allclose(
        got.predict(xgboost.DMatrix(x)), booster.predict(xgboost.DMatrix(x))
    )
    lgb = flightlog.models.load("lgb@production")
    assert isinstance(lgb, lightgbm.Booster) and np.allclose(lgb.predict(x), gbm.predict(x))
    folder = flightlog.models.load("bundle@production")
    assert isinstance(folder, Path) and (folder / "config" / "labels.txt").read_text() == "a\nb\n"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "config/labels.txt",
        "weights.bin",
    ]
    # a directory checked file by file and as a whole: one changed byte is refused
    blob = _blob(tmp_path / "home", hashlib.sha256(b"\0" * 64).hexdigest())
    blob.chmod(0o644)
    blob.write_bytes(b"\1" * 64)
    shutil.rmtree(folder.parent)
    with pytest.raises(DigestMismatch, match="file weights.bin"):
        flightlog.models.load("bundle@production")


def test_an_unknown_kind_is_a_clear_error_and_download_artifact_takes_a_directory(
    tmp_path: Path, store: Client
) -> None:
    _register(tmp_path, {"notes.txt": lambda p: p.write_text("not a model\n")}, "readme", "notes.txt")
    with pytest.raises(InvalidInput, match=r"no model kind flightlog knows: scikit-learn/joblib \(.joblib, .pkl\)"):
        flightlog.models.load("readme@production")
    with pytest.raises(InvalidInput, match="use one of joblib, torch"):
        flightlog.models.load("readme@production", kind="tensorflow")
    assert flightlog.models.load("readme@production", kind="directory").name == "notes.txt"
    mv = flightlog.registry.resolve("readme@production", store)
    into = tmp_path / "downloads"
    into.mkdir()
    got = store.download_artifact(mv.run_id, "notes.txt", into)  # an existing directory: the file goes inside
    assert got == into / "notes.txt" and got.read_text() == "not a model\n"
