"""Hugging Face Trainer: a tiny BERT built from a config (no downloads), with FlightlogCallback."""

import os
import sys
import tempfile

import torch
import transformers

from flightlog.integrations.huggingface import FlightlogCallback


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int, seed: int) -> None:
        self.ids = torch.randint(0, 32, (n, 6), generator=torch.Generator().manual_seed(seed))

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": torch.tensor(int(self.ids[i][0] < 16))}


transformers.set_seed(0)  # the model is made before the Trainer seeds: each run and its twin start alike
config = transformers.BertConfig(
    vocab_size=32,
    hidden_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=16,
    num_labels=2,
)
with tempfile.TemporaryDirectory() as out:
    args = transformers.TrainingArguments(
        output_dir=out,
        per_device_train_batch_size=8,
        max_steps=40,
        logging_steps=2,
        eval_strategy="steps",
        eval_steps=10,
        save_strategy="no",
        learning_rate=3e-3,
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
        report_to="none",
    )
    trainer = transformers.Trainer(
        model=transformers.BertForSequenceClassification(config),
        args=args,
        train_dataset=Tokens(160, 0),
        eval_dataset=Tokens(32, 1),
    )
    trainer.add_callback(
        FlightlogCallback(project=os.environ.get("FLIGHTLOG_PROJECT", "healthy"), name=os.environ.get("WORKLOAD_NAME"))
    )
    trainer.train()
print("done", file=sys.stderr)
