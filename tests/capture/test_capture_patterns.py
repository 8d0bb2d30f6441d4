"""User patterns from files and options."""

from __future__ import annotations

from pathlib import Path

import pytest

from flightlog.capture import CaptureConfig, CapturePipeline
from flightlog.errors import InvalidInput
from flightlog.redaction.patterns import load_patterns

from .conftest import run_pipeline


def test_load_patterns_reads_files_skips_comments_and_missing_files(tmp_path: Path) -> None:
    local = tmp_path / "flightlog.redact.txt"
    local.write_text("# customer ids\nCUST-[0-9]{6}\n\n   internal\\.corp\\.example   \n")
    home = tmp_path / "home" / "redact.txt"
    home.parent.mkdir()
    home.write_text("  # indented comment\nproject-(alpha|beta)\n")
    assert load_patterns([local, tmp_path / "missing.txt", home]) == [
        "CUST-[0-9]{6}",
        "internal\\.corp\\.example",
        "project-(alpha|beta)",
    ]


def test_a_bad_pattern_in_a_file_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "redact.txt"
    path.write_text("ok\n# fine\n[unclosed\n")
    with pytest.raises(InvalidInput) as info:
        load_patterns([path])
    assert f"{path}:3" in info.value.message
    assert "'[unclosed'" in info.value.message


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="found a directory"):
        load_patterns([tmp_path])


def test_user_patterns_apply_to_stored_lines() -> None:
    events, pipeline = run_pipeline([b"customer CUST-123456 paid\n"], extra_patterns=["CUST-[0-9]{6}"])
    assert [e["message"] for e in events] == ["customer [REDACTED:custom] paid"]
    assert pipeline.stats["redactions"] == 1


def test_config_refuses_nonsense() -> None:
    for bad in ({"max_rate": 0}, {"max_line_bytes": 0}, {"rate_interval": 0}, {"group_idle": -1}):
        with pytest.raises(InvalidInput):
            CaptureConfig(env={}, **bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        CapturePipeline(CaptureConfig(env={}, extra_patterns=["("]))
