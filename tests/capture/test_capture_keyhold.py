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
    events, _ = run_pipeline(
        [b"expected -----BEGIN RSA PRIVATE KEY----- header\n", b"Epoch 1 done\n"]
    )
    assert [e["message"] for e in events] == [
        "expected [REDACTED:private_key] header",
        "Epoch 1 done",
    ]
