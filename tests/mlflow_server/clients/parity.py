"""One framework's own MLflow logging, then everything its run holds, read back by MLflow's client.

Usage: ``parity.py sklearn|lightning``. ``sklearn`` runs ``mlflow.sklearn.autolog()`` on a
real scikit-learn fit (iris, bundled with scikit-learn) in the MLflow venv. ``lightning``
runs Lightning's ``MLFlowLogger`` on a real two-epoch fit; it runs under the project's
interpreter (torch and lightning live there) with the MLflow venv's site-packages appended to
``sys.path`` (PARITY_APPEND_PATH), since MLFlowLogger imports mlflow in the training process.
MLFLOW_TRACKING_URI names the server; artifacts go through its proxy. Prints one JSON
document: the run as the client reads it.
"""

import json
import os
import sys

if os.environ.get("PARITY_APPEND_PATH"):  # after this interpreter's own site-packages: torch stays its own
    sys.path.append(os.environ["PARITY_APPEND_PATH"])

import mlflow  # noqa: E402
from mlflow import MlflowClient  # noqa: E402


def sklearn_fit() -> str:
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import Ridge

    # No model and a regressor (a classifier's autolog uploads confusion-matrix and ROC plots):
    # the artifact routes have their own tests; this one compares the tracking records.
    mlflow.sklearn.autolog(log_models=False)
    x, y = load_diabetes(return_X_y=True)
    with mlflow.start_run(run_name="sklearn-parity") as run:
        Ridge(alpha=0.5).fit(x, y)
    return run.info.run_id


def lightning_fit() -> str:
    import lightning.pytorch as pl
    import torch
    from lightning.pytorch.loggers import MLFlowLogger

    class Tiny(pl.LightningModule):
        def __init__(self, lr: float = 0.1, hidden: int = 4) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.net = torch.nn.Sequential(torch.nn.Linear(3, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1))

        def training_step(self, batch, _):
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.net(x), y)
            self.log("train_loss", loss, on_step=True, on_epoch=True)
            return loss

        def validation_step(self, batch, _):
            x, y = batch
            self.log("val_loss", torch.nn.functional.mse_loss(self.net(x), y))

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)

    pl.seed_everything(0, verbose=False)
    x = torch.randn(64, 3)
    data = torch.utils.data.TensorDataset(x, x.sum(dim=1, keepdim=True))
    loader = torch.utils.data.DataLoader(data, batch_size=16)
    logger = MLFlowLogger(experiment_name="parity", run_name="lightning-parity", tracking_uri=mlflow.get_tracking_uri())
    trainer = pl.Trainer(
        max_epochs=2,
        logger=logger,
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
    )
    trainer.fit(Tiny(), loader, loader)
    return logger.run_id


if __name__ == "__main__":
    if sys.argv[1] == "sklearn":
        mlflow.set_experiment("parity")
    run_id = {"sklearn": sklearn_fit, "lightning": lightning_fit}[sys.argv[1]]()
    client = MlflowClient()
    run = client.get_run(run_id)
    histories = {
        key: [[m.step, m.value, m.timestamp] for m in client.get_metric_history(run_id, key)]
        for key in run.data.metrics
    }
    inputs = [
        {"name": d.dataset.name, "digest": d.dataset.digest, "source_type": d.dataset.source_type}
        for d in (run.inputs.dataset_inputs if run.inputs else [])
    ]
    experiment = client.get_experiment(run.info.experiment_id)
    print(
        json.dumps(
            {
                "experiment": experiment.name,
                "name": run.info.run_name,
                "status": run.info.status,
                "start_time": run.info.start_time,
                "end_time": run.info.end_time,
                "params": run.data.params,
                "metrics": run.data.metrics,
                "tags": run.data.tags,
                "histories": histories,
                "inputs": inputs,
            }
        )
    )
