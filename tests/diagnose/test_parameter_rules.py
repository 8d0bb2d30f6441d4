"""The families of failures that no rule named before (issue 29): a setting the hardware cannot
meet, a key the configuration does not define, a library's range check of a parameter,
configuration values whose arithmetic does not work out, a port another process holds, a
connection attempt or a database's connection limit in words the general rules lacked, a
platform's time limit, a data loader's timeout, TensorFlow's permission refusal, a
distribution's NaN parameters.

Each family is read from a real script where its library is installed here (torch, XGBoost,
LightGBM, Lightning), else from the words its library prints (its source's fixed message, in a
traceback of that library's frames). Each was named by no rule before: the learned words alone
decided, and those do not carry to repositories the training never saw."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flightlog.diagnose.candidates import CANDIDATE_FLOOR, collect
from flightlog.diagnose.classify import read_process
from flightlog.diagnose.ranker import rank
from flightlog.diagnose.structure import FailureRead


def _read(traceback_text: str | None, lines: list[str]) -> FailureRead:
    return read_process(
        exit_code=1, signal=None, timed_out=False, oom_killed=False, traceback_text=traceback_text, last_lines=lines
    )


def _printed(tmp_path: Path, code: str) -> str:
    """What a real script prints when it fails (its own file, the libraries' frames and classes)."""
    script = tmp_path / "job.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=180)
    assert proc.returncode != 0, proc.stderr
    return proc.stderr


def _check(read: FailureRead, category: str, rule: str) -> None:
    """The family's rule names ``category``, and the diagnosis leads with it at 0.5 or more."""
    hits = collect(read)
    assert any(h.rule == rule and h.category == category and h.weight >= CANDIDATE_FLOOR for h in hits), sorted(
        {(h.category, h.rule) for h in hits}
    )
    top = rank(read, hits)[0]
    assert (top.category, top.confidence >= 0.5) == (category, True), (top.category, top.confidence)


def _traceback(frames: list[tuple[str, str]], exception: str) -> str:
    """A traceback through ``frames`` (file, code line) ending in ``exception`` (class: message)."""
    body = "".join(f'  File "{file}", line {10 + i}, in f{i}\n    {code}\n' for i, (file, code) in enumerate(frames))
    return f"Traceback (most recent call last):\n{body}{exception}"


_SITE = "/opt/venv/lib/python3.11/site-packages"


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        # torch's BatchSampler: "batch_size should be a positive integer value, but got batch_size=0"
        (
            "import torch\nfrom torch.utils.data import DataLoader\nDataLoader(list(range(8)), batch_size=0)\n",
            "a_library_s_range_check_of_a_parameter",
        ),
        # XGBoost's dmlc parameter manager: "value 0 for Parameter num_class should be greater equal to 1"
        (
            "import numpy as np, xgboost as xgb\n"
            "d = xgb.DMatrix(np.random.rand(20, 3), label=np.arange(20) % 2)\n"
            "xgb.train({'objective': 'multi:softmax', 'num_class': 0}, d, num_boost_round=1)\n",
            "a_library_s_range_check_of_a_parameter",
        ),
        # LightGBM's native check of its config: "Check failed: (num_leaves) > (1) at …/config_auto.cpp"
        (
            "import numpy as np, lightgbm as lgb\n"
            "d = lgb.Dataset(np.random.rand(50, 3), label=np.arange(50) % 2)\n"
            "lgb.train({'num_leaves': 1, 'verbose': -1}, d, num_boost_round=1)\n",
            "a_library_s_range_check_of_a_parameter",
        ),
        # a port another process holds: EADDRINUSE on the port the run was told to use
        (
            "import socket\nheld = socket.socket(); held.bind(('127.0.0.1', 0)); held.listen(1)\n"
            "port = held.getsockname()[1]\n"
            "store = socket.socket(); store.bind(('127.0.0.1', port))\n",
            "a_port_another_process_holds",
        ),
        # torch asked for the NCCL backend where it has none (a CPU build here; Windows, macOS)
        (
            "import torch, torch.distributed as dist\n"
            "if dist.is_nccl_available():\n    raise SystemExit('this torch has NCCL')\n"
            "dist.init_process_group('nccl', init_method='tcp://127.0.0.1:0', rank=0, world_size=1)\n",
            "a_setting_the_hardware_cannot_meet",
        ),
    ],
    ids=["torch-batch-size-0", "xgboost-num-class-0", "lightgbm-num-leaves-1", "address-in-use", "nccl-not-built-in"],
)
def test_a_parameter_a_library_checks_is_a_bad_parameter(tmp_path: Path, code: str, rule: str) -> None:
    """A library's own check of one of its parameters (XGBoost's and LightGBM's native checks,
    torch's samplers) and a port another process holds: read by the learned words alone
    before, as a generic library error (XGBoostError, LightGBMError: code_error's class)."""
    text = _printed(tmp_path, code)
    if "this torch has NCCL" in text:
        pytest.skip("this torch has NCCL: its refusal is not raised")
    _check(_read(text, text.splitlines()), "bad_parameter", rule)


def test_peer_ranks_that_never_came_are_the_service_s(tmp_path: Path) -> None:
    """torch's rendezvous store waiting for ranks that never joined ("Timed out after 2 seconds
    waiting for clients. 1/2 clients joined."): the other ranks' side, as NCCL's socket errors
    are — named by no rule before."""
    code = (
        "import datetime\nfrom torch.distributed import TCPStore\n"
        "TCPStore('127.0.0.1', 0, 2, True, timeout=datetime.timedelta(seconds=1), wait_for_workers=True)\n"
    )
    text = _printed(tmp_path, code)
    _check(_read(text, text.splitlines()), "service_unavailable", "peer_ranks_that_never_answered")


def test_a_data_loader_that_waited_past_its_timeout_is_a_timeout(tmp_path: Path) -> None:
    """torch's ``DataLoader(timeout=1)`` on a worker slower than that: "DataLoader timed out after
    1 seconds", a time limit the run set on its input pipeline."""
    code = (
        "import time\nfrom torch.utils.data import DataLoader, Dataset\n"
        "class Slow(Dataset):\n"
        "    def __len__(self):\n        return 4\n"
        "    def __getitem__(self, i):\n        time.sleep(30)\n        return i\n"
        "if __name__ == '__main__':\n"
        "    next(iter(DataLoader(Slow(), num_workers=1, timeout=1)))\n"
    )
    text = _printed(tmp_path, code)
    _check(_read(text, text.splitlines()), "timeout", "a_data_loader_s_timeout")


def test_a_distribution_whose_parameters_are_nan_is_a_nan(tmp_path: Path) -> None:
    """torch.distributions' argument check on a policy head that produced NaN ("Expected
    parameter loc … to satisfy the constraint Real(), but found invalid values: tensor([nan])"):
    the network's numbers went NaN, as a loss does."""
    code = (
        "import torch\n"
        "loc = torch.tensor([1e38]) * 10 - torch.tensor([1e38]) * 10\n"
        "torch.distributions.Normal(loc, torch.ones(1))\n"
    )
    text = _printed(tmp_path, code)
    _check(_read(text, text.splitlines()), "nan_loss", "a_distribution_whose_parameters_are_nan")


@pytest.mark.parametrize(
    ("frames", "exception", "category", "rule"),
    [
        # triton's JIT: a kernel configuration whose blocks need more shared memory than the GPU has
        (
            [("/work/infer.py", "out = model.generate(ids)"), (f"{_SITE}/triton/runtime/jit.py", "kernel.run(grid)")],
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 98304, "
            "Hardware limit: 65536. Reducing block sizes or `num_stages` may help.",
            "bad_parameter",
            "a_setting_the_hardware_cannot_meet",
        ),
        # Lightning: a GPU index the machine does not have
        (
            [
                ("/work/train.py", "trainer = pl.Trainer(accelerator='gpu', devices=[1])"),
                (f"{_SITE}/lightning_fabric/accelerators/cuda.py", "raise MisconfigurationException("),
            ],
            "lightning_fabric.utilities.exceptions.MisconfigurationException: You requested gpu: [1]\n"
            " But your machine only has: [0]",
            "bad_parameter",
            "a_setting_the_hardware_cannot_meet",
        ),
        # yacs (detectron2's configs): a key the defaults do not declare
        (
            [
                ("/work/train.py", "cfg.merge_from_file(args.config_file)"),
                (f"{_SITE}/yacs/config.py", 'raise KeyError("Non-existent config key: {}".format(full_key))'),
            ],
            "KeyError: 'Non-existent config key: MODEL.ROI_HEADS.NUM_CLASS'",
            "bad_parameter",
            "a_key_the_configuration_does_not_define",
        ),
        # TRL's GRPO: configuration values whose arithmetic does not work out
        (
            [
                ("/work/grpo.py", "trainer = GRPOTrainer(model, args=training_args)"),
                (f"{_SITE}/trl/trainer/grpo_trainer.py", "raise ValueError("),
            ],
            "ValueError: The global train batch size (3 x 2) must be evenly divisible by the number of "
            "generations per prompt (4). Given the current train batch size, the valid values for the number "
            "of generations are: [2, 3, 6].",
            "bad_parameter",
            "configuration_values_that_do_not_work_out",
        ),
        # mmdetection: the head's classes against the dataset's
        (
            [
                ("/work/tools/train.py", "train_detector(model, datasets, cfg)"),
                (f"{_SITE}/mmdet/datasets/utils.py", "assert module.num_classes == len(dataset.CLASSES)"),
            ],
            "AssertionError: The `num_classes` (80) in Shared2FCBBoxHead of MMDataParallel does not matches "
            "the length of `CLASSES` 4) in CocoDataset",
            "bad_parameter",
            "a_model_head_configured_otherwise_than_its_dataset",
        ),
        # vLLM: a context length the model does not have
        (
            [
                ("/work/serve.py", "llm = LLM(model=path, max_model_len=8192)"),
                (f"{_SITE}/vllm/config.py", "raise ValueError("),
            ],
            "ValueError: User-specified max_model_len (8192) is greater than the derived max_model_len "
            "(max_position_embeddings=4096 or model_max_length=None in model's config.json). This may lead to "
            "incorrect model outputs or CUDA errors.",
            "bad_parameter",
            "a_context_length_the_model_cannot_hold",
        ),
        # Accelerate with DeepSpeed: a scheduler the config file does not describe
        (
            [
                ("/work/train.py", "model, opt, sched = accelerator.prepare(model, opt, sched)"),
                (f"{_SITE}/accelerate/accelerator.py", "raise ValueError("),
            ],
            "ValueError: You cannot create a DummyScheduler without specifying a scheduler in the config file.",
            "bad_parameter",
            "accelerate_s_check_of_what_it_prepares",
        ),
        # Hydra: a command-line override that does not parse
        (
            [
                ("/work/train.py", "main()"),
                (f"{_SITE}/hydra/core/override_parser/overrides_parser.py", "raise OverrideParseException("),
            ],
            "hydra.errors.OverrideParseException: LexerNoViableAltException: trainer.max_epochs=10\r",
            "bad_parameter",
            "a_command_line_override_that_does_not_parse",
        ),
        # Dask: a scheduler that did not answer the connection attempt
        (
            [
                ("/work/etl.py", "client = Client('tcp://10.0.0.5:8786')"),
                (f"{_SITE}/distributed/comm/core.py", "raise OSError(msg)"),
            ],
            "OSError: Timed out trying to connect to tcp://10.0.0.5:8786 after 30 s",
            "service_unavailable",
            "a_connection_attempt_that_failed",
        ),
        # MySQL at its connection limit, by its code alone (PyMySQL cut the text short)
        (
            [
                ("/work/features.py", "conn = pymysql.connect(host=host, user=user)"),
                (f"{_SITE}/pymysql/err.py", "raise errorclass(errno, errval)"),
            ],
            "pymysql.err.OperationalError: (1040, 'ny connections')",
            "service_unavailable",
            "a_database_at_its_connection_limit",
        ),
        # OpenAI's API failing on its side (its fixed words for a 500)
        (
            [
                ("/work/label.py", "resp = client.chat.completions.create(model=name, messages=msgs)"),
                (f"{_SITE}/openai/_base_client.py", "raise self._make_status_error_from_response(err.response)"),
            ],
            "openai.InternalServerError: The server experienced an error while processing your request. Sorry "
            "about that! You can retry your request, or contact us through our help center at help.openai.com "
            "if the error persists.",
            "service_unavailable",
            "an_api_failing_on_its_side",
        ),
        # TensorFlow's class for a permission the file system refused
        (
            [
                ("/work/train.py", "tf.io.gfile.rmtree(train_dir)"),
                (f"{_SITE}/tensorflow/python/lib/io/file_io.py", "_pywrap_file_io.DeleteRecursively(dirname)"),
            ],
            "tensorflow.python.framework.errors_impl.PermissionDeniedError: Failed to delete a file: "
            "/tmp/train/events.out.tfevents.1509357717.node2",
            "credentials_error",
            "tensorflow_s_permission_denied",
        ),
    ],
    ids=[
        "triton-shared-memory",
        "lightning-gpu-index",
        "yacs-unknown-key",
        "trl-divisible",
        "mmdet-num-classes",
        "vllm-max-model-len",
        "accelerate-dummy-scheduler",
        "hydra-override",
        "dask-connect",
        "mysql-1040",
        "openai-500",
        "tensorflow-permission",
    ],
)
def test_a_library_s_words_for_a_family_name_its_cause(
    frames: list[tuple[str, str]], exception: str, category: str, rule: str
) -> None:
    """The words a library not installed here prints for one class of problem, in a traceback
    of its frames: each was named by no rule before."""
    text = _traceback(frames, exception)
    _check(_read(text, ["loading", *text.splitlines()]), category, rule)


@pytest.mark.parametrize(
    "lines",
    [
        # Travis CI's words when a job runs past its limit
        ["Running tests", "The job exceeded the maximum time limit for jobs, and has been terminated."],
        # submitit's, on Slurm's USR1 before the time limit
        [
            "[2021-10-21 11:50:15,215][submitit][INFO] - Job has timed out. Ran 0 minutes out of requested 2 minutes.",
            "[2021-10-21 11:50:15,216][submitit][WARNING] - Caught signal SIGUSR1 on gpu05: this job is timed-out.",
            "[2021-10-21 11:50:15,256][submitit][INFO] - Job not requeued because: timed-out too many times.",
        ],
    ],
    ids=["travis", "submitit"],
)
def test_a_platform_s_time_limit_in_its_own_words_is_a_timeout(lines: list[str]) -> None:
    """A platform's or a launcher's time limit, printed without an exception: "no clear cause"
    (code_error 0.25) before."""
    _check(_read(None, lines), "timeout", "a_platform_s_time_limit")


def test_a_benign_mention_of_a_setting_is_no_finding() -> None:
    """vLLM's warning that names ``max_model_len`` on a healthy start, and a port given in a
    launcher's line, are no parameter's failure."""
    lines = [
        "WARNING 04-16 12:12:41 arg_utils.py:766] Chunked prefill is enabled by default for models with "
        "max_model_len > 32K.",
        "INFO: Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
    ]
    hits = collect(_read(None, lines))
    assert not [h for h in hits if h.category == "bad_parameter"], [(h.category, h.rule) for h in hits]
