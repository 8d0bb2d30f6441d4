"""Lightning's own DDP launcher on CPU (2 processes), with `flightlog.init()` at the top of the
script and no `flightlog run`: rank 0 starts its run before Lightning starts rank 1, which joins
it; rank 0 becomes rank 0 of the run when Lightning makes it one. One run, two ranks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import flightlog
from tests.helpers import child_env, needs

SCRIPT = """
import flightlog
run = flightlog.init(project="pl")
import torch
from torch.utils.data import DataLoader, TensorDataset
import lightning.pytorch as L

class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, i):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        run.log({"loss": loss.item()}, step=self.global_step)
        print(f"step {self.global_step} on rank {self.global_rank}", flush=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

data = DataLoader(TensorDataset(torch.randn(16, 2), torch.randn(16, 1)), batch_size=4)
trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=1, logger=False,
                    enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Model(), data)
"""


@pytest.mark.embedded_only("Lightning's processes meet through this host's journals; the store's side has its tests")
def test_lightning_ddp_ranks_are_one_run(home: Path, tmp_path: Path) -> None:
    needs("lightning.pytorch")  # looked up, not imported: only the job's ranks run it (~5 s of CPU)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, str(script)],
        env=child_env(home, FLIGHTLOG_CONSOLE="auto"),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    client = flightlog.Client()
    [run] = client.runs(project="pl")
    assert run.status == "succeeded"
    ranks = client.ranks(run)
    assert [(r.rank, r.world_size, r.launcher, r.state, r.last_step) for r in ranks] == [
        (0, 2, "lightning", "succeeded", 1),
        (1, 2, "lightning", "succeeded", 1),
    ]
    for rank in (0, 1):
        assert [e.message for e in client.logs(run, rank=rank, grep="^step")] == [
            f"step {s} on rank {rank}" for s in (0, 1)
        ]
        assert len(client.metric_history(run, "loss", rank=rank)) == 2
