"""Hugging Face: a real Trainer trains a tiny model built from a config (no downloads)."""

from __future__ import annotations

from pathlib import Path

import pytest

import flightlog

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from flightlog.integrations.huggingface import FlightlogCallback  # noqa: E402

pytestmark = pytest.mark.embedded_only("the integration writes through the SDK; transports are covered in tests/sdk")


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int) -> None:
        gen = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, 32, (n, 6), generator=gen)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": torch.tensor(int(self.ids[i][0] % 2))}


def _trainer(tmp_path: Path, **args: object) -> transformers.Trainer:
    config = transformers.BertConfig(
        vocab_size=32,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
        num_labels=2,
    )
    model = transformers.BertForSequenceClassification(config)
    training = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=4,
        max_steps=6,
        logging_steps=2,
        save_steps=3,
        eval_strategy="steps",
        eval_steps=3,
        learning_rate=1e-3,
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
        **args,
    )
    return transformers.Trainer(model=model, args=training, train_dataset=Tokens(24), eval_dataset=Tokens(8))


def test_trainer_callback_records_args_logs_checkpoints_and_stages(home: Path, tmp_path: Path) -> None:
    callback = FlightlogCallback(project="nlp", name="tiny-bert", resources=False)
    trainer = _trainer(tmp_path, report_to="none")
    trainer.add_callback(callback)
    trainer.train()
    run_id = callback.run.id

    client = flightlog.Client()
    info = client.run(run_id)
    assert info.status == "succeeded" and info.project == "nlp"
    assert info.params["args.learning_rate"] == 1e-3 and info.params["args.max_steps"] == 6
    assert info.params["model.hidden_size"] == 8 and info.params["model.vocab_size"] == 32
    assert "args.hub_token" not in info.params and "args.output_dir" not in info.params
    assert client.metric_history(run_id, "loss").steps.tolist() == [2, 4, 6]
    assert client.metric_history(run_id, "eval_loss").steps.tolist() == [3, 6]
    saved = sorted((Path(a.source or "").name, a.step) for a in client.artifacts(run_id) if a.kind == "checkpoint")
    assert saved == [("checkpoint-3", 3), ("checkpoint-6", 6)]
    stages = {s.name: s for s in client.stages(run_id)}
    assert stages["train_step"].count == 6
    assert 1 <= stages["data_loading"].count <= 6


def test_report_to_flightlog_picks_the_callback(home: Path, tmp_path: Path) -> None:
    with flightlog.init(project="nlp", resources=False) as run:
        trainer = _trainer(tmp_path, report_to="flightlog")
        assert any(isinstance(c, FlightlogCallback) for c in trainer.callback_handler.callbacks)
        trainer.train()
    info = flightlog.Client().run(run.id)
    assert info.status == "succeeded"  # the callback did not finish a run it did not start early
    assert info.metrics["loss"].count == 3 and "train_runtime" in info.metrics
