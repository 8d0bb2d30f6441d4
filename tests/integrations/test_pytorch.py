"""Plain PyTorch: ``timed_batches`` times a real DataLoader against the step, and diagnosis
reads the stages it records."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import flightlog

torch = pytest.importorskip("torch")

from flightlog.integrations.pytorch import timed_batches  # noqa: E402

pytestmark = pytest.mark.embedded_only("the integration writes through the SDK; transports are covered in tests/sdk")


class SlowDataset(torch.utils.data.Dataset):
    def __init__(self, n: int, delay: float) -> None:
        self.n, self.delay = n, delay

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        time.sleep(self.delay)
        x = torch.full((3,), float(i))
        return x, x.sum(dim=0, keepdim=True)


def _train(loader_delay: float, step_delay: float) -> str:
    model = torch.nn.Linear(3, 1)
    optim = torch.optim.SGD(model.parameters(), lr=0.001)
    loader = torch.utils.data.DataLoader(SlowDataset(12, loader_delay), batch_size=1)
    with flightlog.init(project="torch", resources=False) as run:
        for step, (x, y) in enumerate(timed_batches(loader)):
            loss = torch.nn.functional.mse_loss(model(x), y)
            optim.zero_grad()
            loss.backward()
            optim.step()
            time.sleep(step_delay)
            run.log({"loss": loss.item()}, step=step)
    return run.id


def test_timed_batches_records_loader_and_step_spans_and_diagnosis_sees_the_bottleneck(home: Path) -> None:
    run_id = _train(loader_delay=0.1, step_delay=0.0)
    client = flightlog.Client()
    stages = {s.name: s for s in client.stages(run_id)}
    assert stages["data_loading"].count == 12 and stages["train_step"].count == 12
    assert stages["data_loading"].total >= 12 * 0.1
    assert client.metric_history(run_id, "loss").steps.tolist() == list(range(12))
    findings = {f["category"]: f for f in client.diagnose(run_id, auto_baseline=False)["findings"]}
    assert findings["data_loader_bottleneck"]["confidence"] >= 0.5
    assert "data_loading" in findings["data_loader_bottleneck"]["summary"]


def test_a_fast_loader_is_not_a_bottleneck(home: Path) -> None:
    run_id = _train(loader_delay=0.0, step_delay=0.1)
    stages = {s.name: s for s in flightlog.Client().stages(run_id)}
    assert stages["train_step"].total >= 12 * 0.1
    findings = flightlog.Client().diagnose(run_id, auto_baseline=False)["findings"]
    assert not [f for f in findings if f["category"] == "data_loader_bottleneck" and f["confidence"] >= 0.5]


def test_breaking_out_of_the_loop_records_the_last_step(home: Path) -> None:
    with flightlog.init(project="torch", resources=False) as run:
        for i, _ in enumerate(timed_batches(range(10), run)):
            if i == 2:
                break
    stages = {s.name: s for s in flightlog.Client().stages(run.id)}
    assert stages["data_loading"].count == 3 and stages["train_step"].count == 3
