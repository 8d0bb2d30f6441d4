"""The whole failure read as a structure (contract C4, ``flightlog.diagnose.structure``): the
chain innermost first with libraries, codes and how each link entered it, wherever the text
was printed — real exceptions raised here (torch's data loader, process pools, joblib, rich)
and texts recorded from the libraries' own output."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from flightlog.diagnose.structure import Codes, FailureRead, Link, read_failure
from tests.diagnose.corpus.replay import events
from tests.diagnose.raising import disk_full_under_a_wrapper, traceback_of


def _python(code: str) -> str:
    """What a child interpreter printed on stderr (its uncaught exception)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stderr


def _shape(read: FailureRead) -> list[tuple[str, str]]:
    return [(link.short_type, link.via) for link in read.links]


def test_a_chain_innermost_first_with_its_relations_codes_and_libraries() -> None:
    read = read_failure(["epoch 1 loss=0.3", traceback_of(disk_full_under_a_wrapper)], exit_code=1)
    assert _shape(read) == [("OSError", "cause"), ("RuntimeError", "raised")]
    inner = read.innermost
    assert inner is not None and inner.codes == Codes(errno=28) and inner.library is None
    assert read.last_line == "RuntimeError: checkpoint could not be written"
    assert read.exit_code == 1 and read.from_traceback and read.lines_after_chain == 0
    assert read.lines == ["epoch 1 loss=0.3"]


def test_the_library_comes_from_the_class_s_module_else_the_raising_frame() -> None:
    import pandas as pd

    read = read_failure([traceback_of(lambda: pd.DataFrame({"a": [1]})["b"])])
    assert read.outermost is not None and read.outermost.library == "pandas"
    read = read_failure(
        ["sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) FATAL:  sorry, too many clients already"]
    )
    assert [(link.type, link.library, link.via) for link in read.links] == [
        ("psycopg2.OperationalError", "psycopg2", "wrapped"),
        ("sqlalchemy.exc.OperationalError", "sqlalchemy", "raised"),
    ]
    assert read.links[0].codes.sqlstate == "53300"


@pytest.mark.parametrize(
    ("message", "codes"),
    [
        (
            "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: https://x",
            Codes(http_status=429),
        ),
        ("google.api_core.exceptions.ResourceExhausted: 429 Quota exceeded for quota metric", Codes(http_status=429)),
        ("psycopg2.OperationalError: connection failed SQLSTATE[08006]", Codes(sqlstate="08006")),
        ("mysql.connector.errors.ProgrammingError: 1045 (28000): Access denied for user 'ml'", Codes(sqlstate="28P01")),
        ("grpc.RpcError: status = StatusCode.RESOURCE_EXHAUSTED details = 'quota'", Codes(grpc="RESOURCE_EXHAUSTED")),
        # PostgreSQL's conditions in its own words, as psycopg (3) prints them without the code
        (
            'psycopg.OperationalError: connection failed: connection to server at "db", port 5432 failed: '
            'FATAL:  role "trainer" does not exist',
            Codes(sqlstate="28000"),
        ),
        ('psycopg.OperationalError: FATAL:  database "features" does not exist', Codes(sqlstate="3D000")),
        (
            "psycopg.errors.SerializationFailure: could not serialize access due to concurrent update",
            Codes(sqlstate="40001"),
        ),
        ("pymysql.err.OperationalError: (1213, 'Deadlock found when trying to get lock')", Codes(sqlstate="40P01")),
        (
            "psycopg.errors.StringDataRightTruncation: value too long for type character varying(16)",
            Codes(sqlstate="22001"),
        ),
        ("RuntimeError: the job's container exited with code 137", Codes(exit_code=137)),
        ("ConnectionRefusedError: [Errno 111] Connection refused", Codes(errno=111)),
        (
            "subprocess.CalledProcessError: Command '['python', 'x.py']' returned non-zero exit status 2.",
            Codes(exit_code=2),
        ),
    ],
)
def test_codes_read_from_messages(message: str, codes: Codes) -> None:
    (link,) = read_failure([message]).links
    assert link.codes == codes


def test_a_json_log_line_s_escaped_traceback() -> None:
    line = json.dumps(
        {"levelname": "ERROR", "message": "step failed", "exc_info": traceback_of(disk_full_under_a_wrapper).rstrip()}
    )
    read = read_failure(["starting", line])
    assert _shape(read) == [("OSError", "cause"), ("RuntimeError", "raised")]
    # one JSON line per traceback line (a log shipper), and the traceback escaped in a plain line
    lines = [json.dumps({"level": "error", "msg": ln}) for ln in traceback_of(disk_full_under_a_wrapper).splitlines()]
    assert _shape(read_failure(lines)) == [("OSError", "cause"), ("RuntimeError", "raised")]
    escaped = "ERROR step failed: " + repr(traceback_of(disk_full_under_a_wrapper))
    assert _shape(read_failure([escaped]))[0] == ("OSError", "cause")


def test_launcher_prefixes_on_every_line() -> None:
    text = "\n".join(f"[rank0]: {ln}" for ln in traceback_of(disk_full_under_a_wrapper).splitlines())
    assert _shape(read_failure([text])) == [("OSError", "cause"), ("RuntimeError", "raised")]
    # one event per line, as a launcher's lines arrive
    assert _shape(read_failure(text.splitlines())) == [("OSError", "cause"), ("RuntimeError", "raised")]


def test_a_traceback_drawn_by_rich() -> None:
    pytest.importorskip("rich")
    code = (
        "import sys\nfrom rich.console import Console\nfrom rich.traceback import Traceback\n"
        "c = Console(width=100, file=sys.stderr, color_system=None)\n"
        "def save():\n    try:\n        raise OSError(28, 'No space left on device')\n"
        "    except OSError as e:\n        raise RuntimeError('checkpoint could not be written') from e\n"
        "try:\n    save()\nexcept Exception:\n    c.print(Traceback())\n"
    )
    text = _python(code)
    assert "╭" in text
    for texts in ([text], text.splitlines()):
        read = read_failure(texts)
        assert _shape(read) == [("OSError", "cause"), ("RuntimeError", "raised")]
        assert read.links[-1].frames and read.links[-1].frames[-1].function == "save"


def test_a_compiled_library_s_frames_are_the_library_s() -> None:
    """pandas's missing column is raised in its Cython code, whose frames name a path relative
    to the package (``pandas/_libs/index.pyx``) as the interpreter prints them, and no file at
    all as ``rich`` draws them (``in pandas._libs.index.IndexEngine.get_loc:172``): either way
    they are pandas's, not the workload's (issue 29: read as the workload's own code, the
    ``KeyError`` of a missing column looked like a bug of the script's)."""
    pytest.importorskip("pandas")
    body = "frame = pd.DataFrame({'user_id': [1], 'amount_usd': [3.0]})\n"
    plain = _python("import pandas as pd\n" + body + "frame['amount']\n")
    assert ".pyx" in plain
    reads = [read_failure(plain.splitlines())]
    if importlib.util.find_spec("rich") is not None:
        boxed = _python(
            "import sys\nimport pandas as pd\nfrom rich.console import Console\nfrom rich.traceback import Traceback\n"
            + body
            + "try:\n    frame['amount']\nexcept Exception:\n    Console(file=sys.stderr, width=120, color_system=None).print(Traceback())\n"
        )
        assert "in pandas._libs" in boxed
        reads.append(read_failure(boxed.splitlines()))
    for read in reads:
        inner = read.innermost
        assert inner is not None and inner.short_type == "KeyError" and inner.library == "pandas", inner
        assert inner.frames and all(f.in_library for f in inner.frames), inner.frames


def test_a_data_loader_worker_s_original_traceback() -> None:
    pytest.importorskip("torch")
    code = (
        "import torch\nfrom torch.utils.data import DataLoader, Dataset\n"
        "class D(Dataset):\n    def __len__(self): return 4\n"
        "    def __getitem__(self, i): raise FileNotFoundError(2, 'No such file or directory', f'/data/img_{i}.png')\n"
        "if __name__ == '__main__':\n    next(iter(DataLoader(D(), num_workers=1)))\n"
    )
    read = read_failure(_python(code).splitlines())
    # torch re-raises the worker's type with its own words; the worker's traceback is in the message
    assert _shape(read)[-2:] == [("FileNotFoundError", "worker"), ("FileNotFoundError", "raised")]
    assert read.links[-2].codes.errno == 2 and read.links[-2].frames[-1].function == "__getitem__"
    assert read.links[-1].message == "Caught FileNotFoundError in DataLoader worker process 0."
    assert read.links[-1].library == "torch"


@pytest.mark.parametrize(
    "code",
    [
        "from concurrent.futures import ProcessPoolExecutor\ndef work(x):\n    raise OSError(28, 'No space left on device')\n"
        "if __name__ == '__main__':\n    with ProcessPoolExecutor(1) as ex:\n        ex.submit(work, 1).result()\n",
        "from multiprocessing import Pool\ndef work(x):\n    raise OSError(28, 'No space left on device')\n"
        "if __name__ == '__main__':\n    with Pool(1) as p:\n        p.map(work, [1])\n",
        "from joblib import Parallel, delayed\ndef work(x):\n    raise OSError(28, 'No space left on device')\n"
        "Parallel(n_jobs=2)(delayed(work)(i) for i in range(2))\n",
    ],
    ids=["process_pool", "multiprocessing_pool", "joblib"],
)
def test_a_pool_worker_s_traceback_re_raised_by_its_parent(code: str) -> None:
    read = read_failure([_python(code)])
    assert ("OSError", "worker") in _shape(read) and read.outermost is not None
    worker = next(link for link in read.links if link.via == "worker")
    assert worker.codes.errno == 28 and '"""' not in worker.message


def test_ray_s_task_error_carries_the_worker_s_frames() -> None:
    text = (
        "ray.exceptions.RayTaskError(ConnectionError): ray::fetch() (pid=4242, ip=10.0.0.3)\n"
        '  File "/home/ray/job.py", line 12, in fetch\n'
        "    r = requests.get(url)\n"
        "ConnectionError: HTTPConnectionPool(host='feature-store', port=80): Max retries exceeded"
    )
    read = read_failure([text])
    assert [(link.type, link.via) for link in read.links] == [
        ("ConnectionError", "worker"),
        ("ray.exceptions.RayTaskError", "raised"),
    ]
    assert read.links[0].frames[-1].function == "fetch"


def test_a_launcher_s_own_traceback_wraps_the_rank_s() -> None:
    rank = traceback_of(disk_full_under_a_wrapper)
    launcher = (
        "Traceback (most recent call last):\n"
        '  File "/usr/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "train.py FAILED\n"
    )
    read = read_failure([rank, "E0105 12:00:00 1234 api.py:881] failed (exitcode: 1) local_rank: 0", launcher])
    assert _shape(read) == [("OSError", "cause"), ("RuntimeError", "worker"), ("ChildFailedError", "raised")]


def test_a_launcher_s_traceback_after_a_rank_s_exception_line_alone() -> None:
    """A rank that printed only its exception line (its frames cut by a log shipper, or a
    library that logs the error without them), then the launcher's traceback: the rank's
    exception is the cause, not ``ChildFailedError``."""
    launcher = (
        "Traceback (most recent call last):\n"
        '  File "/usr/bin/torchrun", line 8, in <module>\n'
        "    sys.exit(main())\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    )
    rank = "AssertionError: train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 8 != 2 * 1 * 1"
    read = read_failure([rank, "E0105 12:00:00 1234 api.py:881] failed (exitcode: 1) local_rank: 0", launcher])
    assert _shape(read) == [("AssertionError", "worker"), ("ChildFailedError", "raised")]
    assert "micro_batch_per_gpu" in read.innermost.message


def test_a_native_check_failure_before_sigabrt() -> None:
    lines = [
        "I0105 12:34:50.000000  1234 main.cc:10] starting",
        "F0105 12:34:56.789012  1234 gpu_device.cc:123] Check failed: cudaSuccess == cudaStat (2 vs. 0) out of memory",
        "*** Check failure stack trace: ***",
        "    @     0x7f3c2b1c4d5a  google::LogMessage::Fail()",
    ]
    read = read_failure(lines, signal=6, exit_code=-6)
    assert [link.type for link in read.links] == ["NativeCheckFailure"]
    assert "out of memory" in read.links[0].message and read.signal == 6
    thrown = read_failure(
        [
            "terminate called after throwing an instance of 'c10::Error'\n"
            "  what():  CUDA error: an illegal memory access was encountered"
        ]
    )
    assert [(link.type, link.library) for link in thrown.links] == [("c10.Error", "torch")]


def test_faulthandler_s_stack_dump_is_not_the_program_s_last_words() -> None:
    """A real interpreter crashed by native code, with faulthandler on: its stack dump (threads,
    frames) is a stack, so the fatal error line stays the last line the rules read."""
    code = "import ctypes, faulthandler, sys\nfaulthandler.enable()\nprint('calling native code', file=sys.stderr, flush=True)\nctypes.string_at(0)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "most recent call first" in done.stderr, done.stderr
    read = read_failure(done.stderr.splitlines(), exit_code=done.returncode)
    assert read.last_line == "Fatal Python error: Segmentation fault"
    assert read.lines == ["calling native code", "Fatal Python error: Segmentation fault"]
    assert read.links == []


def test_exit_facts_and_a_process_with_no_exception() -> None:
    read = read_failure(
        ["step 10 loss=0.2", "step 20 loss=0.1"],
        exit_code=137,
        signal=9,
        memory_share_at_end=0.98,
        rank=3,
        end_reason="signal",
    )
    assert read.links == [] and read.memory_share_at_end == 0.98 and read.rank == 3
    assert read.last_line == "step 20 loss=0.1" and not read.from_traceback
    assert read_failure([]).links == [] and read_failure([]).last_line is None


def test_a_handled_traceback_followed_by_more_output() -> None:
    read = read_failure([traceback_of(disk_full_under_a_wrapper), "retrying on another volume", "saved", "epoch 2"])
    assert read.lines_after_chain == 3 and read.last_line == "epoch 2"


def test_a_link_is_a_parsed_exception() -> None:
    link = Link("ValueError", "bad", [], library=None)
    assert link.headline() == "ValueError: bad" and link.via == "raised" and not link.codes


# ── a launcher's report after its child's last words (issue 29, whole runs) ──────
RECORDED = Path(__file__).resolve().parents[1] / "capture" / "recorded"
NCCL_WATCHDOG = [
    "[rank2]:[E1206 18:44:16.997991020 ProcessGroupNCCL.cpp:607] [Rank 2] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=7487, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800096 "
    "milliseconds before timing out.",
    "[rank2]:[E1206 18:44:16.998102331 ProcessGroupNCCL.cpp:1537] [PG 0 Rank 2] Timeout at NCCL work: 7487, last "
    "enqueued NCCL work: 7487, last completed NCCL work: 7486.",
]


def _torchrun_report(recorded_name: str) -> list[str]:
    """torchrun's own lines of a recorded run: its log lines, its ``ChildFailedError`` and summary."""
    text = (RECORDED / recorded_name).read_text(encoding="utf-8")
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if "closing signal" in ln or "failed (exitcode" in ln)
    return lines[start:]


def test_a_launcher_s_report_after_a_rank_that_printed_no_exception() -> None:
    """A rank whose watchdog printed the timeout and aborted, then torchrun's report (recorded):
    the report is the launcher's, not the failure — no ``ChildFailedError`` link with nothing
    under it, and the rank's last line is the last line read (before: the summary's ``====``)."""
    report = _torchrun_report("torchrun_gloo_timeout.txt")
    read = read_failure(["epoch 1 step 7400 loss=1.82", *NCCL_WATCHDOG, *report], exit_code=1)
    assert read.links == [] and read.launcher == "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"
    assert read.last_line is not None and read.last_line.startswith("[E1206 18:44:16.998102331 ProcessGroupNCCL")
    assert read.lines[-1] == read.last_line and any("exitcode  : 1 (pid: 2608)" in ln for ln in read.lines)
    assert read.lines_after_chain == 0


def test_a_launcher_s_report_after_a_rank_s_traceback_recorded() -> None:
    """The recorded torchrun run whose rank 0 timed out in ``all_reduce``: the rank's exception is
    the cause under the launcher's wrapper, its exception line the last the rank printed, and it
    is not also an earlier "handled" error."""
    text = (RECORDED / "torchrun_gloo_timeout.txt").read_text(encoding="utf-8")
    read = read_failure(text.splitlines(), exit_code=1)
    assert _shape(read) == [("RuntimeError", "worker"), ("ChildFailedError", "raised")]
    assert read.last_line is not None and read.last_line.startswith("RuntimeError: [/__w/pytorch/pytorch/third_party")
    assert read.handled == [] and read.lines_after_chain == 0


# ── the frames are there, where the reader did not look (issue 29) ──────────
_LOGGED_LINE_BY_LINE = """
import logging, sys, traceback
logging.basicConfig(format="%(levelname)s %(asctime)s engine.py:366] %(message)s", datefmt="%m-%d %H:%M:%S")
log = logging.getLogger("engine")
def raise_if_cache_size_invalid(blocks):
    if blocks <= 0:
        raise ValueError("No available memory for the cache blocks. Try increasing `gpu_memory_utilization`.")
try:
    raise_if_cache_size_invalid(0)
except ValueError:
    for line in traceback.format_exc().splitlines():  # as vLLM's engine logs a worker's traceback
        log.error(line)
    sys.exit(1)
"""


def test_a_traceback_logged_line_by_line_behind_a_logger_s_prefix() -> None:
    """A logger's prefix (with its time) before every line of a traceback, each line an event
    of its own as a run's capture splits it: the prefix is taken off and the frames are read."""
    stderr = _python(_LOGGED_LINE_BY_LINE)
    assert stderr.count("engine.py:366] ") >= 4, stderr
    read = read_failure(events(stderr), exit_code=1)
    (link,) = read.links
    assert link.short_type == "ValueError" and link.message.startswith("No available memory")
    assert [f.function for f in link.frames] == ["<module>", "raise_if_cache_size_invalid"]
    assert read.from_traceback


def test_a_container_runtime_s_prefix_and_a_frame_that_lost_its_line_break() -> None:
    """docker compose's ``service  | `` before every line (ourresearch/openalex-topic-
    classification#3) is a prefix; the word before a frame that lost its line break
    (``KeyError  File …``, FreedomIntelligence/HuatuoGPT#37) is not."""
    compose = (
        "openalex_topic_ai  | Traceback (most recent call last):\n"
        'openalex_topic_ai  |   File "/opt/program/predictor.py", line 15, in <module>\n'
        "openalex_topic_ai  |     from sentence_transformers import SentenceTransformer\n"
        'openalex_topic_ai  |   File "/usr/local/lib/python3.8/dist-packages/sentence_transformers/__init__.py", line 3,'
        " in <module>\n"
        "openalex_topic_ai  |     from huggingface_hub import cached_download\n"
        "openalex_topic_ai  | ImportError: cannot import name 'cached_download' from 'huggingface_hub'\n"
    )
    (link,) = read_failure(events(compose), exit_code=1).links
    assert link.short_type == "ImportError" and link.library == "sentence_transformers" and len(link.frames) == 2
    glued = (
        'KeyError  File "HuatuoGPT/scripts/finetune.py", line 70, in __getitem__\n'
        "    da = self.data[index]\n"
        "KeyError: 7\n"
    )
    (link,) = read_failure(events(glued), exit_code=1).links
    assert (link.short_type, link.message) == ("KeyError", "7")


def test_ipython_frames_whose_header_was_cut_off() -> None:
    """IPython 8 prints a frame as ``File path:line, in function(args)`` with its source and an
    arrow (yangheng95/PyABSA#375, the header not pasted): the frame is read, so the IndexError is
    torch's, raised in ``cross_entropy``."""
    text = (
        "File /opt/conda/lib/python3.10/site-packages/torch/nn/functional.py:3029, in cross_entropy(input, target,"
        " weight, size_average, ignore_index, reduce, reduction, label_smoothing)\n"
        "   3027 if size_average is not None or reduce is not None:\n"
        "   3028     reduction = _Reduction.legacy_get_string(size_average, reduce)\n"
        "-> 3029 return torch._C._nn.cross_entropy_loss(input, target, weight, _Reduction.get_enum(reduction),"
        " ignore_index, label_smoothing)\n"
        "\n"
        "IndexError: Target 2 is out of bounds.\n"
    )
    (link,) = read_failure(events(text), exit_code=1).links
    assert link.short_type == "IndexError" and link.library == "torch"
    assert [(f.function, f.line) for f in link.frames] == [("cross_entropy", 3029)]
    assert link.frames[0].code.startswith("return torch._C._nn.cross_entropy_loss(")


def test_an_exception_in_a_reporter_s_backticks_or_a_python_2_repr() -> None:
    (link,) = read_failure(["error: `RuntimeError: numel: integer multiplication overflow`"], exit_code=1).links
    assert (link.short_type, link.message) == ("RuntimeError", "numel: integer multiplication overflow")
    dask = (
        "ValueError: Metadata inference failed in `add`.\n"
        "Original error is below:\n"
        "------------------------\n"
        "TypeError(\"ufunc 'add' did not contain a loop with signature matching types dtype('<U21')\",)\n"
    )
    read = read_failure(events(dask), exit_code=1)
    assert [(link.short_type, link.via) for link in read.links] == [("TypeError", "wrapped"), ("ValueError", "raised")]


# ── a traceback whose header was cut off or whose indent was stripped (issue 29) ──
_FRAMES_LOGGED_WITHOUT_HEADER = """
import json, sys, traceback
def load_config(text):
    return json.loads(text)
try:
    load_config("{'lr': 0.1}")
except ValueError as exc:
    # a handler that logs the frames and the exception line, as format_tb and
    # format_exception_only print them: no "Traceback (most recent call last):" above
    sys.stderr.write("".join(traceback.format_tb(exc.__traceback__)))
    sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
    sys.exit(1)
"""


def test_frames_printed_without_the_traceback_s_header() -> None:
    """Frames that run up to an exception line are a traceback whose header was not printed
    (a handler that logs ``format_tb``, a log window or a paste that starts inside it): the
    exception is read with its frames and where it was raised, as from a whole traceback."""
    stderr = _python(_FRAMES_LOGGED_WITHOUT_HEADER)
    assert "Traceback (most recent call last)" not in stderr and 'File "' in stderr, stderr
    read = read_failure(["loading the configuration", *events(stderr)], exit_code=1)
    (link,) = read.links
    assert link.short_type == "JSONDecodeError" and link.library == "json"
    assert [f.function for f in link.frames][:3] == ["<module>", "load_config", "loads"], link.frames
    assert read.from_traceback


def test_a_traceback_printed_at_the_margin() -> None:
    """A log formatter (h2oai/h2o-llmstudio#256) or a paste that stripped the indent of every
    line, with the header or without it: the frames and their source lines are read as the
    interpreter indents them."""
    h2o = (
        "2023-07-01 16:41:05,669 - ERROR: Exception occurred during H2O LLM Studio run:\n"
        "Traceback (most recent call last):\n"
        'File "/root/.venv/lib/python3.10/site-packages/torch/serialization.py", line 441, in save\n'
        "_save(obj, opened_zipfile, pickle_module, pickle_protocol)\n"
        'File "/root/.venv/lib/python3.10/site-packages/torch/serialization.py", line 668, in _save\n'
        "zip_file.write_record(name, storage.data_ptr(), num_bytes)\n"
        "RuntimeError: [enforce fail at inline_container.cc:471] . PytorchStreamWriter failed writing file"
        " data/228: file write failed\n"
    )
    read = read_failure(events(h2o), exit_code=1)
    (link,) = read.links
    assert link.short_type == "RuntimeError" and link.message.startswith("[enforce fail")
    assert [(f.function, f.code) for f in link.frames] == [
        ("save", "_save(obj, opened_zipfile, pickle_module, pickle_protocol)"),
        ("_save", "zip_file.write_record(name, storage.data_ptr(), num_bytes)"),
    ]
    assert link.library == "torch" and read.from_traceback
    accelerate = (
        'File "/usr/local/lib/python3.10/dist-packages/accelerate/accelerator.py", line 1324, in prepare_model\n'
        "raise ValueError(\n"
        "ValueError: You can't train a model that has been loaded in 8-bit precision on a different device"
        " than the one you're training on.\n"
    )
    read = read_failure(events(accelerate), exit_code=1)
    (link,) = read.links
    assert (link.library, link.frames[0].code, read.from_traceback) == ("accelerate", "raise ValueError(", True)


def test_frames_that_end_in_no_exception_line_are_not_a_traceback() -> None:
    """torch's anomaly mode prints the forward call's frames inside a warning: no exception
    follows them, so they are not a cut-off traceback."""
    anomaly = (
        "/opt/conda/lib/python3.10/site-packages/torch/autograd/__init__.py:200: UserWarning: Error detected in"
        " PowBackward0. Traceback of forward call that caused the error:\n"
        '  File "/work/train.py", line 41, in <module>\n'
        "    loss = model(batch).pow(2).mean()\n"
        " (Triggered internally at ../torch/csrc/autograd/python_anomaly_mode.cpp:119.)\n"
        "  Variable._execution_engine.run_backward(\n"
    )
    read = read_failure(events(anomaly), exit_code=1)
    assert not read.from_traceback and all(link.frames == [] for link in read.links), read.links


_HEADER_BEHIND_A_TIME = """
import logging, sys, traceback
logging.basicConfig(format="[%(asctime)s] %(message)s", datefmt="%H:%M:%S")
def search(url):
    raise ConnectionError(f"HTTPSConnectionPool(host={url!r}, port=443): Max retries exceeded")
try:
    search("bing.comhttps")
except ConnectionError:
    logging.error(traceback.format_exc().rstrip())  # the record's message is the traceback
    sys.exit(1)
"""


def test_a_logger_s_prefix_before_the_header_alone() -> None:
    """A log record whose message is the traceback prefixes its first line only
    (``[14:42:02] Traceback (most recent call last):``): the header is read as the interpreter's."""
    stderr = _python(_HEADER_BEHIND_A_TIME)
    assert stderr.startswith("[") and "] Traceback (most recent call last):" in stderr, stderr
    read = read_failure(events(stderr), exit_code=1)
    (link,) = read.links
    assert link.short_type == "ConnectionError" and [f.function for f in link.frames] == ["<module>", "search"]
    assert read.from_traceback


def test_ray_s_wrapper_as_the_exception_line_of_a_traceback() -> None:
    """Ray Tune logs the driver's traceback ending in ``RayTaskError(AssertionError): …``
    (ray-project/ray#8230): the wrapper and the class it wraps are both read."""
    tune = (
        "2020-04-30 16:16:01,818\tERROR trial_runner.py:512 -- Trial IMPALA_MultiAgentEnv_00000: Error processing event.\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.6/dist-packages/ray/tune/ray_trial_executor.py", line 381, in fetch_result\n'
        "    result = ray.get(trial_future[0], DEFAULT_GET_TIMEOUT)\n"
        '  File "/usr/local/lib/python3.6/dist-packages/ray/worker.py", line 1526, in get\n'
        "    raise value.as_instanceof_cause()\n"
        "ray.exceptions.RayTaskError(AssertionError): ray::IMPALA.train() (pid=25776, ip=192.168.202.97)\n"
    )
    read = read_failure(events(tune), exit_code=1)
    assert [(link.type, link.via) for link in read.links] == [
        ("AssertionError", "wrapped"),
        ("ray.exceptions.RayTaskError", "raised"),
    ]
    assert len(read.links[-1].frames) == 2 and read.from_traceback


_WORKER_ONLY = (
    "Caught FileNotFoundError in DataLoader worker process 0.\n"
    "Original Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.7/dist-packages/torch/utils/data/_utils/worker.py", line 202, in _worker_loop\n'
    "    data = fetcher.fetch(index)\n"
    '  File "<ipython-input-14-7bc4d2497e8a>", line 40, in make_mask\n'
    "    tree = ET.parse(annot)\n"
    '  File "/usr/lib/python3.7/xml/etree/ElementTree.py", line 587, in parse\n'
    '    source = open(source, "rb")\n'
    "FileNotFoundError: [Errno 2] No such file or directory: '/content/NEUDET/annotations/rolled-in_scale_21.xml'\n"
)


def test_a_worker_s_original_traceback_without_its_parent_s() -> None:
    """The data loader's ``Original Traceback`` printed without the parent's own traceback
    (the log kept the wrapper's words and the worker's frames): the worker's chain is read; when
    the worker's exception line was cut off too, the parent's exception line is read instead."""
    read = read_failure(events(_WORKER_ONLY), exit_code=1)
    (link,) = read.links
    assert link.short_type == "FileNotFoundError" and link.codes.errno == 2 and len(link.frames) == 3
    assert read.from_traceback
    cut = "FileNotFoundError: " + _WORKER_ONLY.rsplit("FileNotFoundError:", 1)[0]
    read = read_failure(events(cut), exit_code=1)
    assert read.innermost is not None and read.innermost.short_type == "FileNotFoundError", read.links


_PIP_BUILD_FAILED = """Collecting flash-attn==2.5.8
  Downloading flash_attn-2.5.8.tar.gz (2.5 MB)
  Preparing metadata (setup.py): started
  Preparing metadata (setup.py): finished with status 'error'
  error: subprocess-exited-with-error

  × python setup.py egg_info did not run successfully.
  │ exit code: 1
  ╰─> [6 lines of output]
      Traceback (most recent call last):
        File "<string>", line 2, in <module>
        File "<pip-setuptools-caller>", line 34, in <module>
        File "/tmp/pip-install-7x0o1n2c/flash-attn_5d3e/setup.py", line 9, in <module>
          from packaging.version import parse, Version
      ModuleNotFoundError: No module named 'packaging'
      [end of output]

  note: This error originates from a subprocess, and is likely not a problem with pip.
error: metadata-generation-failed

× Encountered error while generating package metadata.
╰─> See above for output.
"""


def test_a_traceback_indented_as_a_whole_inside_another_tool_s_output() -> None:
    """pip prints a failed build's output indented under its own lines: the traceback's
    exception is the indented ``ModuleNotFoundError``, not pip's ``error: …`` at the margin
    below it."""
    read = read_failure(["installing the requirements", *events(_PIP_BUILD_FAILED)], exit_code=1)
    (link,) = read.links
    assert (link.short_type, link.message.splitlines()[0]) == ("ModuleNotFoundError", "No module named 'packaging'")
    assert [f.function for f in link.frames] == ["<module>"] * 3 and read.from_traceback
    assert link.frames[-1].code == "from packaging.version import parse, Version"
