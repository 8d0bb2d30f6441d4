"""A private key printed across several reads is still redacted whole."""

from __future__ import annotations

import pytest

from flightlog.capture import CaptureConfig, CapturePipeline

from .conftest import run_pipeline

BODY = b"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
KEY = b"-----BEGIN OPENSSH PRIVATE KEY-----\n" + BODY * 6 + b"-----END OPENSSH PRIVATE KEY-----\n"
OUTPUT = b"loading key\n" + KEY + b"key loaded\n"


@pytest.mark.parametrize("cut", [5, 20, 40, 100, 250, 400, len(OUTPUT) - 12, len(OUTPUT) - 5])
def test_a_key_split_across_two_reads_is_redacted(cut: int) -> None:
    events, pipeline = run_pipeline([OUTPUT[:cut], OUTPUT[cut:]])
    assert [e["message"] for e in events] == ["loading key", "[REDACTED:private_key]", "key loaded"]
    assert pipeline.stats["redactions"] == 1
    assert pipeline.stats["lines"] == 10


def test_a_key_trickling_in_line_by_line_is_redacted() -> None:
    chunks = [line + b"\n" for line in OUTPUT.split(b"\n")[:-1]]
    events, _ = run_pipeline(chunks)
    assert [e["message"] for e in events] == ["loading key", "[REDACTED:private_key]", "key loaded"]


def test_a_key_held_too_long_is_released_redacted_and_its_rest_too() -> None:
    pipeline = CapturePipeline(CaptureConfig(env={}, group_idle=0.5))
    first, rest = KEY[:150], KEY[150:]
    batch = pipeline.feed("stdout", first, 1.0)
    batch.extend(pipeline.poll(1.2))
    batch.extend(pipeline.poll(2.0))  # quiet for longer than group_idle: released
    batch.extend(pipeline.feed("stdout", rest + b"after\n", 3.0))
    batch.extend(pipeline.close(4.0))
    text = "\n".join(batch.message)
    assert "b3BlbnNz" not in text and "END OPENSSH" not in text
    assert batch.message[-1] == "after"


def test_a_lone_key_header_does_not_swallow_the_lines_after_it() -> None:
    events, _ = run_pipeline([b"expected -----BEGIN RSA PRIVATE KEY----- header\n", b"Epoch 1 done\n"])
    assert [e["message"] for e in events] == [
        "expected [REDACTED:private_key] header",
        "Epoch 1 done",
    ]


# --- keys whose every line carries a prefix (issue 11) ----------------------------------------

PREFIXES = {
    "python_logging": lambda i: f"2026-12-01 10:00:{i % 60:02d},{i * 7 % 1000:03d} INFO app: ",
    "kubectl_timestamps": lambda i: f"2026-12-01T10:00:00.{(i * 1234567) % 10**9}Z ",
    "torchrun_rank": lambda i: "[rank0]: ",
    "root_logger": lambda i: "INFO:root:",
    "glog": lambda i: f"I1201 10:00:00.{i * 31 % 10**6:06d} 4242 train.cc:{40 + i}] ",
}
KEY_LINES = [line for line in KEY.decode().splitlines()]


def prefixed(shape: str, lines: list[str], start: int = 0) -> bytes:
    make = PREFIXES[shape]
    return b"".join(f"{make(start + i)}{line}\n".encode() for i, line in enumerate(lines))


def assert_no_key_material(messages: list[str]) -> None:
    text = "\n".join(messages)
    assert "b3BlbnNz" not in text
    assert "zc2gtZW" not in text
    assert "END OPENSSH" not in text


@pytest.mark.parametrize("shape", sorted(PREFIXES))
@pytest.mark.parametrize("per_line", [False, True], ids=["one_read", "line_by_line"])
def test_a_key_whose_every_line_has_a_prefix_is_redacted_whole(shape: str, per_line: bool) -> None:
    output = (
        prefixed(shape, ["loading key"])
        + prefixed(shape, KEY_LINES, start=1)
        + prefixed(shape, ["key loaded"], start=20)
    )
    chunks = output.splitlines(keepends=True) if per_line else [output]
    events, pipeline = run_pipeline(chunks)
    messages = [e["message"] for e in events]
    assert_no_key_material(messages)
    assert messages[0].endswith("loading key")
    assert messages[-1].endswith("key loaded")
    assert sum("[REDACTED:private_key]" in m for m in messages) == 1
    assert pipeline.stats["redactions"] == 1


@pytest.mark.parametrize("shape", sorted(PREFIXES))
def test_a_prefixed_key_released_unfinished_still_hides_its_rest(shape: str) -> None:
    pipeline = CapturePipeline(CaptureConfig(env={}, group_idle=0.5))
    head, rest = prefixed(shape, KEY_LINES[:3]), prefixed(shape, KEY_LINES[3:], start=3)
    batch = pipeline.feed("stderr", head, 1.0)
    batch.extend(pipeline.poll(2.0))  # quiet for longer than group_idle: released
    batch.extend(pipeline.feed("stderr", rest + prefixed(shape, ["after"], start=9), 3.0))
    batch.extend(pipeline.close(4.0))
    assert_no_key_material(list(batch.message))
    assert batch.message[-1].endswith("after")


def test_prefixed_keys_on_stdout_and_stderr_interleaved_are_both_redacted() -> None:
    pipeline = CapturePipeline(CaptureConfig(env={}))
    out_lines = prefixed("torchrun_rank", KEY_LINES).splitlines(keepends=True)
    err_lines = prefixed("kubectl_timestamps", KEY_LINES).splitlines(keepends=True)
    batch = pipeline.feed("stdout", b"[rank0]: starting\n", 1.0)
    now = 1.0
    for out, err in zip(out_lines, err_lines, strict=True):
        now += 0.01
        batch.extend(pipeline.feed("stderr", err, now))
        batch.extend(pipeline.feed("stdout", out, now))
    batch.extend(pipeline.close(now + 1))
    assert_no_key_material(list(batch.message))
    redacted = [s for s, m in zip(batch.stream, batch.message, strict=True) if "[REDACTED:private_key]" in m]
    assert sorted(redacted) == ["stderr", "stdout"]


def test_a_prefixed_header_does_not_swallow_ordinary_prefixed_lines() -> None:
    events, _ = run_pipeline([b"[rank0]: -----BEGIN RSA PRIVATE KEY-----\n[rank0]: Epoch 1 done, loss 0.5\n"])
    # the launcher's prefix names the rank and comes off the stored text (capture/launchers.py)
    assert [(e["rank"], e["message"]) for e in events] == [
        (0, "[REDACTED:private_key]"),
        (0, "Epoch 1 done, loss 0.5"),
    ]


@pytest.mark.parametrize("per_line", [False, True], ids=["one_read", "line_by_line"])
def test_two_prefixed_keys_interleaved_on_one_stream_and_foreign_lines_between(per_line: bool) -> None:
    a = prefixed("python_logging", KEY_LINES).splitlines(keepends=True)
    b = prefixed("torchrun_rank", KEY_LINES).splitlines(keepends=True)
    lines = [line for pair in zip(a, b, strict=True) for line in pair]
    lines.insert(5, b"a warning from another thread\n")
    events, _ = run_pipeline(lines if per_line else [b"".join(lines)])
    messages = [e["message"] for e in events]
    assert_no_key_material(messages)
    assert "a warning from another thread" in messages
    assert sum("[REDACTED:private_key]" in m for m in messages) == 2
