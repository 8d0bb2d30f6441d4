"""Manifests: content digests, the hash cache, and diffs that show what changed."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from flightlog.data import build_manifest, diff_manifests
from flightlog.data.hashcache import HashCache
from flightlog.errors import InvalidInput, NotFound

OLD = time.time() - 3600  # older than the racy window, so the cache may keep the hashes


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        os.utime(p, (OLD, OLD))
    return root


def test_manifest_lists_files_with_hashes_and_summary(tmp_path: Path) -> None:
    root = _tree(
        tmp_path / "ds",
        {"a.jpg": b"x" * 1000, "sub/b.jpg": b"y" * 10, "sub/c.txt": b"", "README": b"hi"},
    )
    m = build_manifest(root)
    assert m["path"] == str(root.resolve()) and m["kind"] == "dir"
    assert m["file_count"] == 4 and m["total_size"] == 1012
    assert [f["path"] for f in m["files"]] == ["README", "a.jpg", "sub/b.jpg", "sub/c.txt"]
    a = m["files"][1]
    assert a["sha256"] == hashlib.sha256(b"x" * 1000).hexdigest()
    assert a["size"] == 1000 and a["mtime"].endswith("Z")
    assert m["extensions"] == {".jpg": 2, "(none)": 1, ".txt": 1}
    assert m["size_histogram"] == [
        {"le": 0, "count": 1},
        {"le": 2, "count": 1},
        {"le": 4, "count": 0},
        {"le": 8, "count": 0},
        {"le": 16, "count": 1},
        *({"le": 1 << i, "count": 0} for i in range(5, 10)),
        {"le": 1024, "count": 1},
    ]
    assert m["digest"].startswith("sha256:") and len(m["digest"]) == 71


def test_digest_depends_on_content_not_on_mtime_or_location(tmp_path: Path) -> None:
    files = {"a.bin": b"1", "b/c.bin": b"22"}
    m1 = build_manifest(_tree(tmp_path / "one", files))
    m2 = build_manifest(_tree(tmp_path / "two", files))
    assert m1["digest"] == m2["digest"]
    os.utime(tmp_path / "two" / "a.bin", (OLD + 5, OLD + 5))
    assert build_manifest(tmp_path / "two")["digest"] == m1["digest"]
    (tmp_path / "two" / "a.bin").write_bytes(b"2")
    assert build_manifest(tmp_path / "two")["digest"] != m1["digest"]


def test_single_file_manifest(tmp_path: Path) -> None:
    f = tmp_path / "data.csv"
    f.write_text("a,b\n1,2\n")
    m = build_manifest(f)
    assert m["kind"] == "file" and m["file_count"] == 1 and m["files"][0]["path"] == "data.csv"


def test_cache_skips_hashing_unchanged_files_and_sees_changes(tmp_path: Path) -> None:
    root = _tree(tmp_path / "ds", {f"f{i}.bin": bytes([i]) * 100 for i in range(50)})
    cache = tmp_path / "cache"
    first = build_manifest(root, cache_dir=cache)
    assert first["hashed"] == 50
    again = build_manifest(root, cache_dir=cache)
    assert again["hashed"] == 0 and again["digest"] == first["digest"]
    # Same size, new content and a new mtime: hashed again, digest changes.
    p = root / "f3.bin"
    p.write_bytes(b"\xff" * 100)
    os.utime(p, (OLD + 10, OLD + 10))
    changed = build_manifest(root, cache_dir=cache)
    assert changed["hashed"] == 1 and changed["digest"] != first["digest"]


def test_recently_modified_files_are_not_cached(tmp_path: Path) -> None:
    """A file written within the racy window may change again in the same mtime tick."""
    root = tmp_path / "ds"
    root.mkdir()
    (root / "fresh.bin").write_bytes(b"new")
    cache = tmp_path / "cache"
    build_manifest(root, cache_dir=cache)
    assert build_manifest(root, cache_dir=cache)["hashed"] == 1


def test_cache_forgets_deleted_files(tmp_path: Path) -> None:
    root = _tree(tmp_path / "ds", {"a": b"1", "b": b"2"})
    cache = tmp_path / "cache"
    build_manifest(root, cache_dir=cache)
    (root / "b").unlink()
    build_manifest(root, cache_dir=cache)
    with HashCache(cache) as hc:
        assert set(hc.load(str(root.resolve()), is_dir=True)) == {str(root.resolve() / "a")}


def test_unwritable_cache_degrades_to_hashing(tmp_path: Path) -> None:
    root = _tree(tmp_path / "ds", {"a": b"1"})
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("x")
    m = build_manifest(root, cache_dir=blocker / "cache")
    assert m["hashed"] == 1


def test_exclude_and_directory_symlinks(tmp_path: Path) -> None:
    root = _tree(tmp_path / "ds", {"keep.csv": b"1", "skip.tmp": b"2", ".cache/x": b"3"})
    outside = _tree(tmp_path / "outside", {"big.bin": b"4"})
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "file-link.csv").symlink_to(root / "keep.csv")
    (root / "dangling").symlink_to(tmp_path / "missing")
    m = build_manifest(root, exclude=["*.tmp", ".cache"])
    assert [f["path"] for f in m["files"]] == ["file-link.csv", "keep.csv"]
    assert m["skipped"] == 1


def test_missing_path_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no such file"):
        build_manifest(tmp_path / "nope")


def test_diff_finds_added_removed_and_changed_files(tmp_path: Path) -> None:
    a = build_manifest(_tree(tmp_path / "a", {"keep": b"same", "gone": b"old", "edit": b"v1"}))
    b = build_manifest(_tree(tmp_path / "b", {"keep": b"same", "new": b"fresh", "edit": b"v2!"}))
    d = diff_manifests(a, b)
    assert not d["identical"]
    assert [x["path"] for x in d["added"]] == ["new"]
    assert [x["path"] for x in d["removed"]] == ["gone"]
    assert d["changed"] == [{"path": "edit", "size_a": 2, "size_b": 3, "delta": 1}]
    assert d["counts"] == {"added": 1, "removed": 1, "changed": 1, "unchanged": 1, "touched": 0}
    assert diff_manifests(a, a)["identical"]


def test_diff_shows_a_shift_to_many_small_files(tmp_path: Path) -> None:
    before = {f"img/{i}.jpg": os.urandom(64 * 1024) for i in range(40)}
    after = dict(before)
    after.update({f"img/thumb_{i}.jpg": os.urandom(2 * 1024) for i in range(400)})
    a = build_manifest(_tree(tmp_path / "v1", before))
    b = build_manifest(_tree(tmp_path / "v2", after))
    d = diff_manifests(a, b)
    assert d["small_files"]["detected"]
    assert d["small_files"]["share_a"] == 0 and d["small_files"]["share_b"] == pytest.approx(400 / 440)
    assert d["file_count"] == {"a": 40, "b": 440, "delta": 400, "ratio": 11.0}
    assert d["median_size"]["b"] < d["median_size"]["a"] / 10
    small = {h["le"]: h for h in d["size_histogram"]}[2048]
    assert (small["a"], small["b"]) == (0, 400)
    assert any("small files" in s for s in d["shifts"])
    assert any("file count 40 → 440" in s for s in d["shifts"])
    assert not diff_manifests(a, a)["small_files"]["detected"]


def test_diff_rejects_things_that_are_not_manifests() -> None:
    with pytest.raises(InvalidInput, match="not a flightlog manifest"):
        diff_manifests({"x": 1}, {"files": [], "digest": "sha256:0"})
