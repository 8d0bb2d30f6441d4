"""A downloaded model's bytes made a model again, by kind: what ``flightlog.models.load`` does
once the digest is checked (``loading.py``).

The kind is told by the file — its name, then its first bytes — or forced with ``kind=``:

==============  ==========================================  =============================================
kind            recognized by                               loaded with
==============  ==========================================  =============================================
``joblib``      ``.joblib``, ``.pkl``, ``.pickle``, ``.sav`` ``joblib.load`` (scikit-learn and any pickle)
``torchscript`` a ``.pt``/``.pth`` zip holding ``code/``    ``torch.jit.load`` (on the CPU)
``torch``       ``.pt``, ``.pth``, ``.ckpt``                ``torch.load(weights_only=True)``: a state dict,
                                                            loaded into ``model=`` when one is given
``xgboost``     ``.ubj``, ``.xgb``, ``.bst``, a ``.json``   ``xgboost.Booster(model_file=...)``
                with a ``learner``
``lightgbm``    ``.lgb``, ``.lgbm``, a ``.txt`` that        ``lightgbm.Booster(model_file=...)``
                starts with ``tree``
``onnx``        ``.onnx``                                   ``onnxruntime.InferenceSession`` (CPU)
``mlflow``      a directory with an ``MLmodel`` file        its flavor's file, by the kinds above
``directory``   any other directory                         its path, as it is
==============  ==========================================  =============================================

Why the pickles are trusted: ``load`` checks the bytes against the digest the registry recorded
from the training run's own artifact, so what is unpickled is what that run wrote. A file of
no known kind is refused with the kinds that are known (``flightlog.models.download`` gives
its path).
"""

from __future__ import annotations

import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from flightlog.errors import InvalidInput, MissingExtra

__all__ = ["KINDS", "kind_of", "load_path"]

KINDS = ("joblib", "torch", "torchscript", "xgboost", "lightgbm", "onnx", "mlflow", "directory")
_BY_SUFFIX = {
    ".joblib": "joblib",
    ".pkl": "joblib",
    ".pickle": "joblib",
    ".sav": "joblib",
    ".pt": "torch",
    ".pth": "torch",
    ".ckpt": "torch",
    ".ubj": "xgboost",
    ".xgb": "xgboost",
    ".bst": "xgboost",
    ".lgb": "lightgbm",
    ".lgbm": "lightgbm",
    ".onnx": "onnx",
}
#: MLflow flavor → (the flavor's key naming its file, kind)
_FLAVORS = {
    "sklearn": ("pickled_model", "joblib"),
    "xgboost": ("data", "xgboost"),
    "lightgbm": ("data", "lightgbm"),
    "onnx": ("data", "onnx"),
    "pytorch": ("model_data", "torch-full"),
}


def _known() -> str:
    return (
        "scikit-learn/joblib (.joblib, .pkl), PyTorch state dicts and TorchScript (.pt, .pth), XGBoost "
        "(.json, .ubj, .xgb), LightGBM (.txt, .lgb), ONNX (.onnx), an MLflow model directory, or any directory"
    )


def kind_of(path: Path) -> str | None:
    """The kind of a downloaded model (see the module docstring), or None."""
    if path.is_dir():
        return "mlflow" if (path / "MLmodel").is_file() else "directory"
    suffix = path.suffix.lower()
    kind = _BY_SUFFIX.get(suffix)
    if kind == "torch" and zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            if any("/code/" in n or n.startswith("code/") for n in z.namelist()):
                return "torchscript"
    if kind is not None:
        return kind
    with path.open("rb") as f:
        head = f.read(4096)
    if suffix == ".json" and b'"learner"' in head:
        return "xgboost"
    if suffix in (".txt", ".model") and head.lstrip().startswith(b"tree"):
        return "lightgbm"
    return None


def _needs(module: str, kind: str, package: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(
            f"loading a {kind} model needs {package}: pip install {package} (or load the file yourself: "
            "flightlog.models.download gives its path)"
        ) from None


def _joblib(path: Path, model: Any) -> Any:
    return _needs("joblib", "scikit-learn/joblib", "joblib").load(path)


def _torch(path: Path, model: Any) -> Any:
    torch = _needs("torch", "PyTorch", "torch")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if model is not None:
        model.load_state_dict(state)
        return model
    return state


def _torch_full(path: Path, model: Any) -> Any:
    """A whole pickled module (MLflow's pytorch flavor): its bytes were checked against the digest."""
    torch = _needs("torch", "PyTorch", "torch")
    return torch.load(path, map_location="cpu", weights_only=False)


def _torchscript(path: Path, model: Any) -> Any:
    torch = _needs("torch", "TorchScript", "torch")
    with warnings.catch_warnings():  # torch 2.13 deprecates TorchScript; loading what a run saved is still asked for
        warnings.simplefilter("ignore", DeprecationWarning)
        return torch.jit.load(str(path), map_location="cpu")


def _xgboost(path: Path, model: Any) -> Any:
    return _needs("xgboost", "XGBoost", "xgboost").Booster(model_file=str(path))


def _lightgbm(path: Path, model: Any) -> Any:
    return _needs("lightgbm", "LightGBM", "lightgbm").Booster(model_file=str(path))


def _onnx(path: Path, model: Any) -> Any:
    ort = _needs("onnxruntime", "ONNX", "onnxruntime")
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


_LOADERS: dict[str, Callable[[Path, Any], Any]] = {
    "joblib": _joblib,
    "torch": _torch,
    "torch-full": _torch_full,
    "torchscript": _torchscript,
    "xgboost": _xgboost,
    "lightgbm": _lightgbm,
    "onnx": _onnx,
}


def _mlflow(path: Path, model: Any) -> Any:
    try:
        spec = yaml.safe_load((path / "MLmodel").read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInput(f"the MLmodel file of {path} cannot be read ({exc})") from None
    flavors = spec.get("flavors") or {}
    for flavor, (key, kind) in _FLAVORS.items():
        conf = flavors.get(flavor)
        if not isinstance(conf, dict) or not conf.get(key):
            continue
        target = path / str(conf[key])
        if flavor == "pytorch" and target.is_dir():
            target = target / "model.pth"
        return _LOADERS[kind](target, model)
    raise InvalidInput(
        f"the MLflow model in {path} has flavors {', '.join(sorted(flavors)) or 'none'}; flightlog loads "
        f"{', '.join(sorted(_FLAVORS))} (flightlog.models.download gives the directory)",
        details={"flavors": sorted(flavors)},
    )


def load_path(path: Path, *, kind: str | None = None, model: Any = None) -> Any:
    """The model in ``path`` (a file or a directory), by its kind or the one given."""
    if kind is not None and kind not in KINDS:
        raise InvalidInput(f"kind {kind!r} is not one flightlog loads; use one of {', '.join(KINDS)}")
    found = kind or kind_of(path)
    if found == "directory":
        return path
    if found == "mlflow":
        return _mlflow(path, model)
    if found is None:
        raise InvalidInput(
            f"{path.name} is no model kind flightlog knows: {_known()}; pass kind=... to say which, or use "
            "flightlog.models.download for its path",
            details={"file": path.name, "kinds": list(KINDS)},
        )
    return _LOADERS[found](path, model)
