"""A real shape mismatch under each integration, in a script run *without* ``flightlog run``,
is stored as the runner stores it: failed, the traceback kept (on the failure and as one
stderr event at level error), the last lines printed, and ``flightlog diagnose`` names the
same top category as for the same script under ``flightlog run``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import child_env, cli, cli_json, needs

pytestmark = pytest.mark.embedded_only(
    "both runs are compared through the local store; transports are covered in tests/sdk"
)

FLIGHTLOG = str(Path(sys.executable).with_name("flightlog"))


def _script(tmp_path: Path, code: str) -> Path:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(code))
    return path


def _run(home: Path, argv: list[str], project: str, tmp_path: Path) -> dict[str, Any]:
    """Run the workload, then the run it left in ``project``: info, logs and diagnosis."""
    env = child_env(
        home,
        FLIGHTLOG_PROJECT=project,
        FLIGHTLOG_CONSOLE="auto",
        KERAS_BACKEND="torch",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr[-3000:]
    [run] = [r for r in cli_json(home, "runs", "ls", "--project", project) if r["parent_id"] is None]
    info = cli_json(home, "runs", "show", run["id"])
    logs = [json.loads(line) for line in cli(home, "logs", run["id"], "--format", "json").stdout.splitlines()]
    diagnosis = cli_json(home, "diagnose", run["id"])
    return {"info": info, "logs": logs, "diagnosis": diagnosis, "stderr": proc.stderr}


def assert_crash_recorded_as_under_the_runner(
    home: Path, tmp_path: Path, code: str, message: str, printed: str, named: str | None = None
) -> dict[str, Any]:
    """``message``: in the exception's text; ``printed``: a line the workload printed before the
    crash; ``named``: what the top finding names (default: the message)."""
    script = _script(tmp_path, code)
    plain = _run(home, [sys.executable, str(script)], "plain", tmp_path)
    runner = _run(
        home, [FLIGHTLOG, "run", "--project", "runner", "--", sys.executable, str(script)], "runner", tmp_path
    )

    info = plain["info"]
    assert info["status"] == "failed" and info["end_reason"] == "exception", info
    failure = info["failure"]
    assert message in failure["traceback"] and "Traceback (most recent call last)" in failure["traceback"]
    assert any(printed in line for line in failure["last_lines"]), failure["last_lines"]
    tracebacks = [e for e in plain["logs"] if "Traceback (most recent call last)" in e["message"]]
    assert len(tracebacks) == 1, plain["logs"]
    [event] = tracebacks
    assert event["stream"] == "stderr" and event["level"] == "error" and message in event["message"]
    assert any(printed in e["message"] for e in plain["logs"])  # the output before the crash, too

    top = plain["diagnosis"]["findings"][0]
    expected = runner["diagnosis"]["findings"][0]
    assert top["category"] == expected["category"], (top, expected)
    assert top["confidence"] >= min(0.5, expected["confidence"])
    assert (named or message) in top["summary"] + json.dumps(top["evidence"])
    assert plain["diagnosis"]["kind"] == runner["diagnosis"]["kind"]
    return plain


def test_lightning_logger_records_the_crash_it_sees_in_finalize(home: Path, tmp_path: Path) -> None:
    needs("lightning")
    plain = assert_crash_recorded_as_under_the_runner(
        home,
        tmp_path,
        """
        import torch
        import lightning.pytorch as L
        from flightlog.integrations.lightning import FlightlogLogger

        class Model(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.net = torch.nn.Linear(4, 1)  # the data has 3 features
            def training_step(self, batch, batch_idx):
                x, y = batch
                print(f"training step {batch_idx}", flush=True)
                return torch.nn.functional.mse_loss(self.net(x), y)
            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)

        x = torch.randn(16, 3)
        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)), batch_size=8)
        trainer = L.Trainer(max_epochs=1, logger=FlightlogLogger(resources=False), accelerator="cpu", devices=1,
                            enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False)
        trainer.fit(Model(), loader)
    """,
        "mat1 and mat2 shapes cannot be multiplied",
        "training step 0",
    )
    assert plain["diagnosis"]["findings"][0]["category"] == "code_error"


def test_huggingface_callback_run_records_the_crash(home: Path, tmp_path: Path) -> None:
    needs("transformers")
    assert_crash_recorded_as_under_the_runner(
        home,
        tmp_path,
        """
        import torch
        import transformers
        from flightlog.integrations.huggingface import FlightlogCallback

        class Tiny(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(32, 8)
                self.head = torch.nn.Linear(16, 2)  # the embeddings are 8 wide
            def forward(self, input_ids, labels=None):
                print(f"forward of {len(input_ids)} rows", flush=True)
                logits = self.head(self.embed(input_ids).mean(dim=1))
                return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}

        class Tokens(torch.utils.data.Dataset):
            def __len__(self):
                return 8
            def __getitem__(self, i):
                return {"input_ids": torch.arange(6) % 32, "labels": torch.tensor(i % 2)}

        args = transformers.TrainingArguments(output_dir="out", per_device_train_batch_size=4, max_steps=2,
                                              use_cpu=True, disable_tqdm=True, report_to="none", save_strategy="no")
        trainer = transformers.Trainer(model=Tiny(), args=args, train_dataset=Tokens(),
                                       callbacks=[FlightlogCallback(resources=False)])
        trainer.train()
    """,
        "mat1 and mat2 shapes cannot be multiplied",
        "forward of 4 rows",
    )


def test_keras_callback_run_records_a_crash_before_its_first_hook(home: Path, tmp_path: Path) -> None:
    needs("keras")
    assert_crash_recorded_as_under_the_runner(
        home,
        tmp_path,
        """
        import numpy as np
        import keras
        from flightlog.integrations.keras import FlightlogKerasCallback

        x = np.random.default_rng(0).normal(size=(40, 5)).astype("float32")
        model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        callback = FlightlogKerasCallback(resources=False)
        print("fitting 40 rows", flush=True)
        model.fit(x, x.sum(axis=1, keepdims=True), epochs=2, batch_size=8, verbose=0, callbacks=[callback])
    """,
        "incompatible with the layer",
        "fitting 40 rows",
        named="ValueError: Exception encountered when calling Sequential",
    )


def test_xgboost_callback_run_records_the_crash(home: Path, tmp_path: Path) -> None:
    needs("xgboost")
    assert_crash_recorded_as_under_the_runner(
        home,
        tmp_path,
        """
        import numpy as np
        import xgboost as xgb
        from flightlog.integrations.xgboost import FlightlogXGBoostCallback

        x = np.random.default_rng(0).normal(size=(80, 4))
        y = x[:, 0] * 2 + x[:, 1]
        dtrain, dvalid = xgb.DMatrix(x[:60], label=y[:60]), xgb.DMatrix(x[60:], label=y[60:])

        def mae(preds, data):
            print(f"scoring {len(preds)} rows", flush=True)
            return "mae", float(np.abs(preds - y[:60]).mean())  # the training labels, whatever the set

        xgb.train({"max_depth": 3, "nthread": 1}, dtrain, num_boost_round=5, evals=[(dtrain, "train"), (dvalid, "valid")],
                  custom_metric=mae, callbacks=[FlightlogXGBoostCallback(resources=False)])
    """,
        "operands could not be broadcast together with shapes (20,) (60,)",
        "scoring 20 rows",
    )


def test_lightgbm_callback_run_records_a_crash_in_the_first_round(home: Path, tmp_path: Path) -> None:
    needs("lightgbm")
    assert_crash_recorded_as_under_the_runner(
        home,
        tmp_path,
        """
        import numpy as np
        import lightgbm as lgb
        from flightlog.integrations.lightgbm import flightlog_lightgbm_callback

        x = np.random.default_rng(0).normal(size=(80, 4))
        y = x[:, 0] * 2 + x[:, 1]
        train = lgb.Dataset(x[:60], label=y[:60])
        valid = lgb.Dataset(x[60:], label=y[60:], reference=train)

        def mae(preds, data):
            return "mae", float(np.abs(preds - y[:60]).mean()), False  # the training labels, whatever the set

        callback = flightlog_lightgbm_callback(resources=False)
        print("boosting 6 rounds", flush=True)
        lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1, "min_data_in_leaf": 5}, train,
                  num_boost_round=6, valid_sets=[valid], valid_names=["valid"], feval=mae, callbacks=[callback])
    """,
        "operands could not be broadcast together with shapes (20,) (60,)",
        "boosting 6 rounds",
    )


def test_plain_init_records_its_uncaught_exception(home: Path, tmp_path: Path) -> None:
    needs("torch")
    plain = assert_crash_recorded_as_under_the_runner(
        home,
        tmp_path,
        """
        import torch
        import flightlog

        run = flightlog.init(resources=False)
        for step in range(3):
            print(f"step {step}", flush=True)
            run.log({"loss": 1.0 / (step + 1)}, step=step)
        torch.randn(8, 3) @ torch.randn(4, 1)
    """,
        "mat1 and mat2 shapes cannot be multiplied",
        "step 2",
    )
    assert "flightlog: run " in plain["stderr"]  # where it went, said once
    assert plain["diagnosis"]["findings"][0]["category"] == "code_error"


def test_a_sweep_trial_that_raises_is_failed_with_its_traceback_and_last_lines(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "auto")  # the default, which the test fixtures turn off
    np = pytest.importorskip("numpy")
    from flightlog.sweeps import sweep

    def train(trial: Any) -> float:
        print(f"trial {trial.number} with lr={trial.params['lr']}", flush=True)
        if trial.number == 1:
            return float((np.zeros(20) - np.zeros(60)).mean())  # a real shape mismatch
        return 1.0

    result = sweep(train, {"lr": [0.1, 0.2]}, metric="val_loss", method="grid", trials=2, project="sw", name="s")
    failed = [t for t in result.trials if t.state == "failed"]
    assert [t.number for t in failed] == [1]
    info = cli_json(home, "runs", "show", failed[0].run_id)
    assert info["status"] == "failed" and info["end_reason"] == "exception"
    assert info["failure"]["last_lines"] == ["trial 1 with lr=0.2"]
    logs = [json.loads(line) for line in cli(home, "logs", failed[0].run_id, "--format", "json").stdout.splitlines()]
    assert [(e["stream"], e["level"]) for e in logs] == [("stdout", "info"), ("stderr", "error")]
    assert "operands could not be broadcast together with shapes (20,) (60,)" in logs[1]["message"]
    top = cli_json(home, "diagnose", failed[0].run_id)["findings"][0]
    assert top["category"] == "code_error" and "could not be broadcast" in top["summary"]
