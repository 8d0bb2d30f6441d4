"""The bounded disk-use walk of a working directory."""

from __future__ import annotations

import os
from pathlib import Path

from flightlog.resources import disk_usage


def test_counts_allocated_bytes_recursively(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "b").mkdir()
    (tmp_path / "a" / "b" / "big.bin").write_bytes(os.urandom(1 << 20))
    usage = disk_usage(str(tmp_path))
    assert usage.bytes >= 1 << 20
    assert usage.entries == 3
    assert usage.partial is False


def test_hard_links_count_once_and_symlinks_are_not_followed(tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(os.urandom(1 << 20))
    base = disk_usage(str(tmp_path)).bytes
    os.link(tmp_path / "data.bin", tmp_path / "again.bin")
    elsewhere = tmp_path.parent / (tmp_path.name + "-target")
    elsewhere.mkdir()
    (elsewhere / "huge.bin").write_bytes(os.urandom(4 << 20))
    os.symlink(elsewhere, tmp_path / "link")
    assert disk_usage(str(tmp_path)).bytes - base < 64 * 1024


def test_cap_marks_partial(tmp_path: Path) -> None:
    for i in range(30):
        (tmp_path / f"f{i}").write_text("x")
    usage = disk_usage(str(tmp_path), max_entries=10)
    assert usage.partial is True
    assert usage.entries == 10


def test_missing_directory_is_partial_zero(tmp_path: Path) -> None:
    usage = disk_usage(str(tmp_path / "missing"))
    assert (usage.bytes, usage.partial) == (0, True)


def test_capped_walk_has_counted_the_top_level_first(tmp_path: Path) -> None:
    deep = tmp_path / "venv" / "lib" / "site-packages"
    deep.mkdir(parents=True)
    for i in range(100):
        (deep / f"m{i}.py").write_text("x")
    (tmp_path / "checkpoint.pt").write_bytes(os.urandom(2 << 20))
    usage = disk_usage(str(tmp_path), max_entries=20)
    assert usage.partial is True
    assert usage.bytes >= 2 << 20
