"""The pipeline as the runner uses it: stats, two reader threads, the default environment."""

from __future__ import annotations

import threading

import pytest

from flightlog.capture import CaptureConfig, CapturePipeline
from flightlog.logevents import LogBatch

from .conftest import run_pipeline


def test_stats_count_lines_bytes_truncations_redactions_and_events() -> None:
    output = [
        b"first password=hunter2\n",
        b"x" * 100 + b"\n",
        b'Traceback (most recent call last):\n  File "t.py", line 1\nValueError: x\n',
        b"no newline at the end",
    ]
    events, pipeline = run_pipeline(output, max_line_bytes=64)
    assert pipeline.stats == {
        "lines": 6,
        "bytes": sum(map(len, output)),
        "dropped_lines": 0,
        "dropped_bytes": 0,
        "truncated_lines": 1,
        "redactions": 1,
        "events": 4,
    }
    assert len(events) == 4


def test_the_environment_defaults_to_the_process_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLIGHTLOG_TEST_API_TOKEN", "tok-from-the-environment")
    pipeline = CapturePipeline(CaptureConfig())
    batch = pipeline.feed("stdout", b"using tok-from-the-environment\n", 1.0)
    batch.extend(pipeline.close(2.0))
    assert batch.message == ["using [REDACTED:env:FLIGHTLOG_TEST_API_TOKEN]"]


def test_two_reader_threads_may_feed_at_once() -> None:
    pipeline = CapturePipeline(CaptureConfig(env={}))
    batches: list[LogBatch] = []
    lock = threading.Lock()

    def reader(stream: str) -> None:
        for i in range(200):
            data = b"".join(b"%s %d %d\n" % (stream.encode(), i, j) for j in range(50))
            batch = pipeline.feed(stream, data, float(i))
            with lock:
                batches.append(batch)

    threads = [threading.Thread(target=reader, args=(s,)) for s in ("stdout", "stderr")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    batches.append(pipeline.close(1000.0))
    stored = LogBatch()
    for batch in batches:
        stored.extend(batch)
    assert len(stored) == 20_000 == pipeline.stats["events"] == pipeline.stats["lines"]
    for stream in ("stdout", "stderr"):
        mine = [m for s, m in zip(stored.stream, stored.message, strict=True) if s == stream]
        expected = [f"{stream} {i} {j}" for i in range(200) for j in range(50)]
        assert sorted(mine) == sorted(expected) and len(mine) == len(expected)


def test_order_within_a_stream_is_kept() -> None:
    data = b"".join(b"line %d\n" % i for i in range(5000)) + b"  continued\n" + b'{"msg": "json"}\nERROR x\n'
    events, _ = run_pipeline([data[i : i + 1000] for i in range(0, len(data), 1000)])
    messages = [e["message"] for e in events]
    assert messages[:4998] == [f"line {i}" for i in range(4998)]
    assert messages[4998:] == ["line 4998", "line 4999\n  continued", "json", "ERROR x"]


def test_close_flushes_everything_and_a_second_close_is_empty() -> None:
    pipeline = CapturePipeline(CaptureConfig(env={}))
    pipeline.feed("stdout", b"a\npartial", 1.0)
    pipeline.feed("stderr", b"Traceback (most recent call last):\n  File x\n", 1.0)
    closed = pipeline.close(2.0)
    assert sorted(closed.message) == [
        "Traceback (most recent call last):\n  File x",
        "a",
        "partial",
    ]
    assert len(pipeline.close(3.0)) == 0


def test_a_secret_split_across_two_reads_of_one_line_is_redacted() -> None:
    line = b"export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789\n"
    for cut in range(1, len(line)):
        events, _ = run_pipeline([line[:cut], line[cut:]])
        assert [e["message"] for e in events] == ["export GITHUB_TOKEN=[REDACTED:github_token]"]


def test_secrets_inside_a_traceback_are_redacted_and_the_block_kept_whole() -> None:
    tb = (
        b"Traceback (most recent call last):\n"
        b'  File "train.py", line 3, in <module>\n'
        b'    connect("postgresql://admin:s3cret@db/x")\n'
        b"ConnectionError: could not connect with password=s3cret\n"
    )
    events, pipeline = run_pipeline([tb])
    (event,) = events
    assert "s3cret" not in event["message"]
    assert event["message"].count("\n") == 3 and event["level"] == 40
    assert pipeline.stats["redactions"] == 2


def test_terminal_colours_are_stripped_so_levels_are_found() -> None:
    output = (
        b"\x1b[31mERROR\x1b[0m: disk full\n"
        b"\x1b[1;33mWARNING\x1b[0m:root:slow batch\n"
        b"\x1b[32m2026-12-01 10:00:00,123\x1b[0m | \x1b[1mERROR\x1b[0m | train:step - boom\n"
        b'\x1b[36m{"level": "critical", "msg": "gone"}\x1b[0m\n'
        b"\x1b]8;;https://example.com\x07link\x1b]8;;\x07 \xe2\x9c\x9b kept\n"
        b"\x1b[2K\rEpoch 1:  50%|\xe2\x96\x88\xe2\x96\x88 | 5/10\r\x1b[2KEpoch 1: 100%|\n"
    )
    events, _ = run_pipeline([output])
    assert [(e["message"], e["level"]) for e in events] == [
        ("ERROR: disk full", 40),
        ("WARNING:root:slow batch", 30),
        ("2026-12-01 10:00:00,123 | ERROR | train:step - boom", 40),
        ("gone", 50),
        ("link ✛ kept", 20),
        ("Epoch 1: 100%|", 20),
    ]
    assert not any("\x1b" in e["message"] for e in events)


def test_a_secret_split_by_colour_codes_is_still_redacted() -> None:
    events, _ = run_pipeline([b"password=\x1b[1mhunter2-long\x1b[0m token ghp_\x1b[0m" + b"a" * 36 + b"\n"])
    assert "hunter2" not in events[0]["message"] and "aaaa" not in events[0]["message"]
