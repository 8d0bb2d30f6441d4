"""What a signature masks and what it keeps: the parts that vary between occurrences of one
cause go, the words that say what went wrong stay."""

from __future__ import annotations

import pytest

from flightlog.models import RunInfo
from flightlog.triage.signature import normalize_message, signature_parts, user_frame


@pytest.mark.parametrize(
    ("raw", "masked"),
    [
        ("[Errno 2] No such file or directory: '/data/shard-17.csv'", "[Errno <n>] No such file or directory: <value>"),
        (
            "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; 1.2GB free)",
            "CUDA out of memory. Tried to allocate <n> GiB (GPU <n>; <n>GB free)",
        ),
        ("[Errno 111] Connection refused: 10.0.3.77:4242", "[Errno <n>] Connection refused: <addr>"),
        ("could not reach db.internal:5432 after 3 tries", "could not reach <addr> after <n> tries"),
        ("unknown user user_8812 in shard-17", "unknown user <id> in <id>"),
        ("object at 0x7f3a2c1b9e80 is not callable", "object at <hex> is not callable"),
        ("see https://x.org/a?b=1 for 550e8400-e29b-41d4-a716-446655440000", "see <url> for <uuid>"),
        ("run 01JD5R7X2MABCDEFGHJKMNPQRS failed reading /tmp/a/b.txt", "run <id> failed reading <path>"),
        ("lr must be positive, got -0.0042", "lr must be positive, got <n>"),
        ("expected float64, got int8 with shape 64x512", "expected float64, got int8 with shape <id>"),
        ("line one\nline two 42", "line one"),
        ("read/write error reading data/day-1.csv", "read/write error reading <path>"),
    ],
)
def test_masks(raw: str, masked: str) -> None:
    assert normalize_message(raw) == masked


def test_the_users_innermost_frame_skips_libraries_and_flightlog() -> None:
    failure = {
        "frames": [
            {"file": "/home/a/proj/train.py", "line": 10, "function": "main"},
            {"file": "/home/a/proj/data.py", "line": 20, "function": "load"},
            {"file": "/venv/lib/python3.11/site-packages/torch/utils/data.py", "line": 1, "function": "get"},
            {"file": "/usr/lib/python3.11/json/decoder.py", "line": 1, "function": "decode"},
            {"file": "/home/a/src/flightlog/sdk/run.py", "line": 1, "function": "log"},
        ]
    }
    assert user_frame(failure) == "data.py:load"
    assert user_frame({"frames": [{"file": "<frozen importlib._bootstrap>", "function": "x"}]}) is None


def test_a_run_without_an_exception_is_signed_by_how_it_ended() -> None:
    killed = RunInfo(id="a", project="p", name="n", status="killed", end_reason="signal", signal=15)
    assert signature_parts(killed)[1] == "ended by SIGTERM"
    lost = RunInfo(id="b", project="p", name="n", status="crashed", end_reason="lost")
    assert signature_parts(lost)[1] == "the process vanished without an end record"
    step = RunInfo(
        id="c", project="p", name="nightly.prep", status="failed", tags={"pipeline": "nightly", "pipeline_step": "prep"}
    )
    assert signature_parts(step)[3] == "nightly.prep"
