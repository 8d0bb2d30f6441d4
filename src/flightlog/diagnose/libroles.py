"""The role a library plays in a training run: it reads data, it builds the configuration, or it
is the model's framework (issue 29).

Why: a ``KeyError`` raised inside a data library (a column or a record that is not there) is a
data error far more often than one raised inside a configuration library (a key the run was not
given) or the model's framework (a weight's name, the workload's own call). The ranker learns
what a role is worth from the corpus; a table of roles lets what it learned on pandas carry to
polars, and what it learned on OmegaConf carry to yacs, where the name of each library alone is
seen too rarely to be a feature (the training keeps features seen in two repositories or more).
The table names well-known packages of the ML stack by their top-level import name; a package
not in it has no role (its own name is still a fact when it is seen often enough).
"""

from __future__ import annotations

__all__ = ["ROLES", "library_role"]

#: role → top-level import names (or ``namespace.package`` as :func:`structure.package_of_path` names them)
ROLES: dict[str, frozenset[str]] = {
    role: frozenset(names.split())
    for role, names in {
        # reads, decodes or stores the data: tables, arrays on disk, images, audio, archives, records
        "data": "pandas pyarrow datasets PIL numpy polars h5py soundfile librosa cv2 csv json tarfile zipfile pickle"
        " gzip webdataset tfrecord imageio skimage torchaudio decord av sqlite3 openpyxl xlrd fastparquet dask"
        " tokenizers sentencepiece jsonlines lmdb nibabel pydicom rasterio netCDF4 xarray zarr tables",
        # parses the run's arguments or builds its configuration
        "config": "hydra omegaconf argparse pydantic yaml ruamel jsonargparse ml_collections yacs fire click absl gin"
        " configparser tomllib toml jsonschema typer mmengine mmcv simple_parsing tyro",
        # the model's framework and the libraries that train, tune or serve it
        "model": "torch tensorflow keras jax flax transformers lightning pytorch_lightning accelerate deepspeed sklearn"
        " xgboost lightgbm catboost timm detectron2 mmdet peft diffusers trl vllm optax haiku megatron apex"
        " bitsandbytes torchvision onnx onnxruntime tensorrt triton sentence_transformers spacy ultralytics",
    }.items()
}


def library_role(library: str | None) -> str | None:
    """``"data"``, ``"config"`` or ``"model"`` for a library of :data:`ROLES` (by its name or its
    top-level package's: ``torch.distributed`` is ``torch``'s), else None."""
    if not library:
        return None
    for name in (library, library.split(".", 1)[0]):
        for role, names in ROLES.items():
            if name in names:
                return role
    return None
