"""Launcher line prefixes, the elastic agent's summary, DeepSpeed's exits, error files and the
messages of ranks that only waited (``capture/launchers.py``), on real recorded output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flightlog.capture.launchers import (
    is_victim_message,
    launcher_of,
    parse_deepspeed_exits,
    parse_elastic_summary,
    read_error_file,
    read_prefix,
    split_launcher_prefix,
    strip_launcher_prefixes,
)
from flightlog.capture.pipeline import CaptureConfig, CapturePipeline

RECORDED = Path(__file__).parent / "recorded"


def recorded(name: str) -> str:
    return (RECORDED / name).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("line", "rank", "local", "text"),
    [
        ("[rank0]: Traceback (most recent call last):", 0, None, "Traceback (most recent call last):"),
        ('[rank12]:   File "train.py", line 3, in <module>', 12, None, '  File "train.py", line 3, in <module>'),
        ("[default1]:[rank5]: ValueError: x", 5, 1, "ValueError: x"),
        ("[default3]:step=0 loss=1.0", 3, 3, "step=0 loss=1.0"),
        (
            "[rank0]:[W1205 19:12:40.486000 2600 init.cpp:1] warn",
            0,
            None,
            "[W1205 19:12:40.486000 2600 init.cpp:1] warn",
        ),
        ("[1,3]<stdout>:epoch 1", 3, None, "epoch 1"),
        ("[1,0]<stderr>:Traceback (most recent call last):", 0, None, "Traceback (most recent call last):"),
        ("[step3]: loss 0.5", None, None, "[step3]: loss 0.5"),
        ("[INFO] starting", None, None, "[INFO] starting"),
        ("3: hello", None, None, "3: hello"),  # srun's label only when the launcher is known to label
    ],
)
def test_a_line_s_prefix_names_its_rank(line: str, rank: int | None, local: int | None, text: str) -> None:
    prefix = read_prefix(line)
    assert (prefix.rank, prefix.local_rank, prefix.text) == (rank, local, text)


def test_srun_labels_are_read_when_the_launcher_labels_lines() -> None:
    assert split_launcher_prefix(" 3: Traceback (most recent call last):", labels=True) == (
        3,
        "Traceback (most recent call last):",
    )
    assert split_launcher_prefix("12: loss 0.5", labels=True) == (12, "loss 0.5")
    assert launcher_of(["srun", "-l", "python", "train.py"]) == ("srun", True)
    assert launcher_of(["srun", "python", "train.py"]) == ("srun", False)
    assert launcher_of(["env", "OMP_NUM_THREADS=1", "torchrun", "--nproc_per_node", "2", "t.py"]) == ("torchrun", False)
    assert launcher_of(["python", "-m", "torch.distributed.run", "t.py"]) == ("torchrun", False)
    assert launcher_of(["/opt/venv/bin/deepspeed", "t.py"]) == ("deepspeed", False)
    assert launcher_of(["python", "train.py"]) == (None, False)


def test_a_block_loses_its_prefixes_srun_and_pdsh_only_when_every_line_carries_one() -> None:
    tb = "[rank1]: Traceback (most recent call last):\n[rank1]:   File \"a.py\", line 1, in f\n[rank1]: KeyError: 'x'"
    assert (
        strip_launcher_prefixes(tb)
        == "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'"
    )
    labelled = "0: Traceback (most recent call last):\n0:   File \"a.py\", line 1, in f\n0: KeyError: 'x'"
    assert strip_launcher_prefixes(labelled).startswith("Traceback (most recent call last):\n  File")
    pdsh = 'worker-3: Traceback (most recent call last):\nworker-3:   File "a.py", line 1, in f\nworker-3: OSError: x'
    assert strip_launcher_prefixes(pdsh).splitlines()[-1] == "OSError: x"
    ordinary = "0: cat\nsome text\n1: dog"  # not every line labelled: the program's own text
    assert strip_launcher_prefixes(ordinary) == ordinary
    logging = "INFO: starting\nINFO: loaded"  # one shared "word: " but no traceback: not a host
    assert strip_launcher_prefixes(logging) == logging


def test_torchrun_s_summary_names_each_rank_s_end_the_timeout_case() -> None:
    summary = parse_elastic_summary(recorded("torchrun_gloo_timeout.txt"))
    assert summary is not None and summary.script == "hang.py"
    by_rank = {r.rank: r for r in summary.ranks}
    assert set(by_rank) == {0, 1}
    # the agent calls rank 0 the root cause: it only timed out waiting for the stuck rank 1
    assert by_rank[0].root_cause and by_rank[0].exit_code == 1 and by_rank[0].signal is None
    assert by_rank[1].signal == 15 and by_rank[1].exit_code is None and not by_rank[1].root_cause
    assert by_rank[0].pid == 2608 and by_rank[1].pid == 2609 and by_rank[1].host == "localhost"
    assert by_rank[0].traceback is None  # "To enable traceback see: …" is no traceback


def test_torchrun_s_summary_keeps_each_rank_s_traceback_with_record() -> None:
    summary = parse_elastic_summary(recorded("torchrun_record.txt"))
    assert summary is not None
    root = summary.root_cause
    assert root is not None and root.rank == 1 and root.exit_code == 1
    assert root.traceback is not None and root.traceback.splitlines()[0] == "Traceback (most recent call last):"
    assert root.traceback.splitlines()[-1] == "ValueError: shard 7 has 0 rows (rank 1)"
    assert root.error_file is not None and root.error_file.endswith("/1/error.json")
    other = next(r for r in summary.ranks if r.rank == 0)
    assert other.signal == 15 and other.traceback is not None and is_victim_message(other.traceback)
    assert not is_victim_message(root.traceback)


def test_summaries_quoted_from_public_threads() -> None:
    summary = parse_elastic_summary(recorded("accelerate_sigkill.txt"))
    assert summary is not None and summary.script == "src/open_r1/grpo_gsm.py"
    assert [(r.rank, r.signal, r.pid, r.root_cause) for r in summary.ranks] == [(0, 9, 14750, True)]
    ds = parse_deepspeed_exits(recorded("deepspeed_launcher.txt").splitlines())
    assert ds is not None and [(r.rank, r.exit_code, r.signal) for r in ds.ranks] == [(4, 1, None)]
    oom = parse_deepspeed_exits(recorded("deepspeed_oom.txt").splitlines())
    assert oom is not None and [(r.rank, r.exit_code, r.signal) for r in oom.ranks] == [(0, None, 9)]
    assert parse_elastic_summary(recorded("lightning_ddp_tqdm.txt")) is None


def test_prefixed_summaries_and_truncated_ones_never_raise() -> None:
    text = recorded("torchrun_record.txt")
    prefixed = "\n".join("[default0]:" + line for line in text.splitlines())
    assert parse_elastic_summary(prefixed) is not None
    start = text.index("ChildFailedError")
    for cut in range(start, len(text), 97):  # every truncation of the summary: None or a partial one
        summary = parse_elastic_summary(text[:cut])
        assert summary is None or all(r.rank is None or r.rank in (0, 1) for r in summary.ranks)


def test_error_files_as_record_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "error.json"
    path.write_text(
        json.dumps(
            {
                "message": {
                    "message": "ValueError: shard 7 has 0 rows",
                    "extraInfo": {"py_callstack": "Traceback (most recent call last):\n...", "timestamp": "1764961112"},
                }
            }
        )
    )
    error = read_error_file(path)
    assert error is not None and error.message == "ValueError: shard 7 has 0 rows"
    assert error.traceback is not None and error.timestamp == 1764961112.0
    path.write_text("{not json")
    assert read_error_file(path) is None
    path.write_text(json.dumps({"message": 3}))
    assert read_error_file(path) is None
    assert read_error_file(tmp_path / "missing.json") is None


@pytest.mark.parametrize(
    "message",
    [
        "RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
        "Timed out waiting 8000ms for recv operation to complete",
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
        "[127.0.0.1]:64646. This is typically caused by a remote worker crashing.",
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600007 milliseconds before timing out.",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited "
        "or there was a network error, NCCL version 2.19.3",
    ],
)
def test_messages_of_ranks_that_only_waited(message: str) -> None:
    assert is_victim_message(message)


@pytest.mark.parametrize(
    "message",
    ["ValueError: shard 7 has 0 rows", "torch.OutOfMemoryError: CUDA out of memory.", "KeyError: 'label'"],
)
def test_a_rank_s_own_error_is_no_victim_message(message: str) -> None:
    assert not is_victim_message(message)


def _events(text: str, **config: object) -> list[tuple[int | None, str]]:
    pipeline = CapturePipeline(CaptureConfig(env={}, **config))  # type: ignore[arg-type]
    batch = pipeline.feed("stderr", text.encode(), 1000.0)
    batch.extend(pipeline.close(1001.0))
    return list(zip(batch.rank, batch.message, strict=True))


def test_each_rank_s_traceback_is_one_event_with_its_rank_and_no_prefix() -> None:
    events = _events(recorded("torchrun_record.txt"))
    ranked = {rank: message for rank, message in events if rank is not None}
    assert set(ranked) == {0, 1}
    assert ranked[1].startswith('Traceback (most recent call last):\n  File "/tmp/try28/rec.py"')
    assert ranked[1].endswith("ValueError: shard 7 has 0 rows (rank 1)")
    assert "Connection closed by peer" in ranked[0].splitlines()[-1]
    assert not any("[rank" in message for _, message in events)


def test_interleaved_ranks_stay_apart_and_tee_prefixes_name_local_ranks() -> None:
    a = recorded("torchrun_record.txt").splitlines()
    r0 = [line for line in a if line.startswith("[rank0]")]
    r1 = [line for line in a if line.startswith("[rank1]")]
    mixed = [line for pair in zip(r0, r1, strict=False) for line in pair] + r0[len(r1) :] + r1[len(r0) :]
    events = _events("\n".join(mixed) + "\n")
    assert sorted(rank for rank, _ in events) == [0, 1]
    assert all(message.startswith("Traceback (most recent call last):") for _, message in events)
    tee = _events(recorded("torchrun_tee.txt"))
    steps = [(rank, message) for rank, message in tee if message.startswith("step=")]
    assert {rank for rank, _ in steps} == {0, 1} and all(f"rank={rank}" in m for rank, m in steps)


def test_srun_labels_in_the_pipeline_only_when_told() -> None:
    text = "0: Traceback (most recent call last):\n0:   File \"a.py\", line 1, in f\n0: KeyError: 'x'\n1: step 3\n"
    told = _events(text, launcher_labels=True)
    assert told[0] == (0, "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nKeyError: 'x'")
    assert (1, "step 3") in told
    assert all(rank is None for rank, _ in _events(text))


@pytest.mark.parametrize("chunks", ["at once", "line by line"])
def test_each_rank_s_finished_traceback_is_stored_before_the_launcher_s_lines_that_follow_it(chunks: str) -> None:
    """A rank's traceback past its exception line waits for a chained exception that may
    follow; the launcher's own lines after it (its failure summary) end that wait, so events
    keep the order of the output. Before, the last rank's traceback was held until the stream
    closed and stored after torchrun's ``ChildFailedError``, and the reading of the failure saw
    the launcher's summary first."""
    text = recorded("torchrun_record.txt")
    pipeline = CapturePipeline(CaptureConfig(env={}))
    pieces = [text] if chunks == "at once" else text.splitlines(keepends=True)
    batch = pipeline.feed("stderr", b"", 1000.0)
    for piece in pieces:
        batch.extend(pipeline.feed("stderr", piece.encode(), 1000.0))
    batch.extend(pipeline.close(1001.0))
    messages = list(batch.message)
    summary = next(i for i, m in enumerate(messages) if "ChildFailedError" in m)
    ranks = [i for i, rank in enumerate(batch.rank) if rank is not None]
    assert len(ranks) == 2 and max(ranks) < summary, list(zip(batch.rank, [m[:60] for m in messages], strict=True))
