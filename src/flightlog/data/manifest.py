"""Manifests: what a dataset looked like when a run read it, and what changed since.

A manifest lists every file of a dataset (relative path, size, mtime, SHA-256) with a summary
that makes the usual upstream surprises visible at a glance: file count, total size, counts per
extension and a log2 size histogram (a refresh that turned 1,000 large files into 100,000 small
ones shows up as a new hump on the left). Its ``digest`` hashes the sorted (path, size, content
hash) entries, so two manifests with the same digest describe the same bytes, whatever the
mtimes say; it is the identity of the input artifact in lineage.

Content hashes are cached by (path, size, mtime_ns) (:mod:`flightlog.data.hashcache`), so a
re-scan of an unchanged tree only stats the files. Symbolic links to files are followed;
symbolic links to directories are not (no cycles, no surprise trees).
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from flightlog.data import progress
from flightlog.data.hashcache import HashCache
from flightlog.errors import InvalidInput, NotFound
from flightlog.timefmt import format_size, iso

__all__ = ["build_manifest", "diff_manifests", "summary", "MANIFEST_VERSION"]

MANIFEST_VERSION = 1
_PARALLEL_HASH_BYTES = 8 << 20
_MAX_HASH_THREADS = 16


def _hash_file(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path} for its manifest: {exc.strerror or exc}") from None


def _walk(root: str, exclude: Sequence[str], skip_dir: str | None) -> tuple[list[tuple[str, int, int]], int]:
    """Regular files under root as (relative posix path, size, mtime_ns); plus a skipped count."""
    out: list[tuple[str, int, int]] = []
    skipped = 0
    stack = [("", root)]
    while stack:
        rel_dir, abs_dir = stack.pop()
        try:
            entries = list(os.scandir(abs_dir))
        except OSError:
            skipped += 1
            continue
        for e in entries:
            rel = f"{rel_dir}{e.name}"
            if exclude and any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(e.name, pat) for pat in exclude):
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    if e.path != skip_dir:
                        stack.append((rel + "/", e.path))
                    continue
                st = e.stat()  # follows a link to a file
            except OSError:
                skipped += 1  # dangling link, vanished file, permission denied
                continue
            if e.is_file():
                out.append((rel, st.st_size, st.st_mtime_ns))
    out.sort()
    return out, skipped


class _IsoStamps:
    """ISO-8601 times for many mtimes, formatting each distinct second only once."""

    def __init__(self) -> None:
        self._seconds: dict[int, str] = {}

    def __call__(self, mtime_ns: int) -> str:
        sec, ns = divmod(mtime_ns, 1_000_000_000)
        head = self._seconds.get(sec)
        if head is None:
            head = self._seconds[sec] = (iso(float(sec)) or "")[:-5]  # drop ".000Z"
        return f"{head}.{ns // 1_000_000:03d}Z"


def _bucket(size: int) -> int:
    """The log2 bucket a size falls in: the smallest power of two >= size (0 for empty files)."""
    return 0 if size <= 0 else 1 << (size - 1).bit_length()


def _histogram(sizes: Iterable[int]) -> list[dict[str, int]]:
    counts = Counter(_bucket(s) for s in sizes)
    if not counts:
        return []
    out = []
    if 0 in counts:
        out.append({"le": 0, "count": counts.pop(0)})
    if counts:
        k, top = min(counts).bit_length() - 1, max(counts).bit_length() - 1
        out.extend({"le": 1 << i, "count": counts.get(1 << i, 0)} for i in range(k, top + 1))
    return out


def _median(sorted_sizes: list[int]) -> float | None:
    n = len(sorted_sizes)
    if n == 0:
        return None
    mid = n // 2
    return float(sorted_sizes[mid]) if n % 2 else (sorted_sizes[mid - 1] + sorted_sizes[mid]) / 2


def _extension(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return name[dot:].lower() if dot > 0 else "(none)"


def build_manifest(
    path: str | os.PathLike[str],
    *,
    cache_dir: Path | None = None,
    exclude: Sequence[str] = (),
    show_progress: bool | None = None,
) -> dict[str, Any]:
    """Scan a file or directory into a JSON-able manifest (see the module docstring).

    ``cache_dir`` holds the hash cache (None: hash everything); ``exclude`` takes glob
    patterns matched against relative paths and file names.
    """
    root = Path(path).expanduser()
    if not root.exists():
        raise NotFound(f"no such file or directory: {root}")
    root = root.resolve()
    started = time.time()
    is_dir = root.is_dir()
    skip_dir = str(Path(cache_dir).resolve()) if cache_dir is not None else None
    if is_dir:
        entries, skipped = _walk(str(root), exclude, skip_dir)
    else:
        st = root.stat()
        entries, skipped = [(root.name, st.st_size, st.st_mtime_ns)], 0
    prefix = str(root) + "/" if is_dir else str(root.parent) + "/"

    cache = HashCache(cache_dir) if cache_dir is not None else None
    try:
        known = cache.load(str(root), is_dir=is_dir) if cache is not None else {}
        hashes: dict[str, str] = {}
        todo: list[tuple[str, int, int]] = []
        for rel, size, mtime in entries:
            hit = known.get(prefix + rel)
            if hit is not None and hit[0] == size and hit[1] == mtime:
                hashes[rel] = hit[2]
            else:
                todo.append((rel, size, mtime))
        _hash_all(todo, prefix, hashes, show_progress)
        if cache is not None:
            seen = {prefix + rel for rel, _, _ in entries}
            stale = [p for p in known if p not in seen] if is_dir else []
            cache.update(
                ((prefix + rel, size, mtime, hashes[rel]) for rel, size, mtime in todo),
                stale,
                scan_started=started,
            )
    finally:
        if cache is not None:
            cache.close()

    digest = hashlib.sha256()
    stamp = _IsoStamps()
    files = []
    exts: Counter[str] = Counter()
    for rel, size, mtime in entries:
        sha = hashes[rel]
        digest.update(f"{rel}\0{size}\0{sha}\n".encode())
        files.append({"path": rel, "size": size, "mtime": stamp(mtime), "sha256": sha})
        exts[_extension(rel)] += 1
    sizes = sorted(size for _, size, _ in entries)
    return {
        "version": MANIFEST_VERSION,
        "path": str(root),
        "kind": "dir" if is_dir else "file",
        "created": iso(started),
        "digest": "sha256:" + digest.hexdigest(),
        "file_count": len(entries),
        "total_size": sum(sizes),
        "median_size": _median(sizes),
        "extensions": dict(sorted(exts.items(), key=lambda kv: (-kv[1], kv[0]))),
        "size_histogram": _histogram(sizes),
        "skipped": skipped,
        "hashed": len(todo),
        "files": files,
    }


def _hash_all(todo: list[tuple[str, int, int]], prefix: str, out: dict[str, str], show_progress: bool | None) -> None:
    if not todo:
        return
    total = sum(size for _, size, _ in todo)
    with progress.task(f"hashing {len(todo):,} files", total=total, enabled=show_progress) as bar:
        if len(todo) == 1 or total < _PARALLEL_HASH_BYTES and len(todo) < 64:
            for rel, size, _ in todo:
                out[rel] = _hash_file(prefix + rel)
                bar.advance(size)
            return
        workers = min(_MAX_HASH_THREADS, 4 * (os.cpu_count() or 1))
        with ThreadPoolExecutor(workers, thread_name_prefix="flightlog-hash") as pool:
            for (rel, size, _), sha in zip(todo, pool.map(_hash_file, [prefix + r for r, _, _ in todo]), strict=True):
                out[rel] = sha
                bar.advance(size)


def summary(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest without its file list (what an artifact row or a listing shows)."""
    return {k: v for k, v in manifest.items() if k != "files"}


def _check(m: Any, label: str) -> dict[str, Any]:
    if not isinstance(m, dict) or "files" not in m or "digest" not in m:
        raise InvalidInput(f"{label} is not a flightlog manifest: expected an object with files and digest")
    return m


def _change(a: float | None, b: float | None) -> dict[str, Any]:
    delta = None if a is None or b is None else b - a
    ratio = None if not a or b is None else b / a
    return {"a": a, "b": b, "delta": delta, "ratio": ratio}


def diff_manifests(a: dict[str, Any], b: dict[str, Any], *, small_factor: float = 0.5) -> dict[str, Any]:
    """What changed from manifest ``a`` to ``b``: files added, removed and changed, and shifts.

    ``shifts`` lists the changes a person should look at (file count, total and median size,
    extensions, and a shift to many small files: the share of files smaller than
    ``small_factor`` × a's median size rising by 25 points or more).
    """
    a, b = _check(a, "A"), _check(b, "B")
    fa = {f["path"]: f for f in a["files"]}
    fb = {f["path"]: f for f in b["files"]}
    added = [{"path": p, "size": fb[p]["size"]} for p in sorted(fb.keys() - fa.keys())]
    removed = [{"path": p, "size": fa[p]["size"]} for p in sorted(fa.keys() - fb.keys())]
    changed, touched, unchanged = [], 0, 0
    for p in sorted(fa.keys() & fb.keys()):
        x, y = fa[p], fb[p]
        if x["sha256"] != y["sha256"] or x["size"] != y["size"]:
            changed.append(
                {
                    "path": p,
                    "size_a": x["size"],
                    "size_b": y["size"],
                    "delta": y["size"] - x["size"],
                }
            )
        else:
            unchanged += 1
            touched += x.get("mtime") != y.get("mtime")
    sizes_a = sorted(f["size"] for f in a["files"])
    sizes_b = sorted(f["size"] for f in b["files"])
    exts = sorted(set(a.get("extensions", {})) | set(b.get("extensions", {})))
    ext_rows = []
    for e in exts:
        ca, cb = a.get("extensions", {}).get(e, 0), b.get("extensions", {}).get(e, 0)
        ext_rows.append({"extension": e, "a": ca, "b": cb, "delta": cb - ca})
    ha = {h["le"]: h["count"] for h in a.get("size_histogram", [])}
    hb = {h["le"]: h["count"] for h in b.get("size_histogram", [])}
    hist = [
        {"le": le, "a": ha.get(le, 0), "b": hb.get(le, 0), "delta": hb.get(le, 0) - ha.get(le, 0)}
        for le in sorted(ha.keys() | hb.keys())
    ]
    small = _small_shift(sizes_a, sizes_b, small_factor)
    out: dict[str, Any] = {
        "a": {"path": a.get("path"), "digest": a["digest"], "created": a.get("created")},
        "b": {"path": b.get("path"), "digest": b["digest"], "created": b.get("created")},
        "identical": a["digest"] == b["digest"],
        "counts": {
            "added": len(added),
            "removed": len(removed),
            "changed": len(changed),
            "unchanged": unchanged,
            "touched": touched,
        },
        "file_count": _change(len(sizes_a), len(sizes_b)),
        "total_size": _change(sum(sizes_a), sum(sizes_b)),
        "median_size": _change(_median(sizes_a), _median(sizes_b)),
        "extensions": ext_rows,
        "size_histogram": hist,
        "small_files": small,
        "added": added,
        "removed": removed,
        "changed": changed,
    }
    out["shifts"] = _shifts(out)
    return out


def _small_shift(sizes_a: list[int], sizes_b: list[int], factor: float) -> dict[str, Any]:
    med = _median(sizes_a)
    if not sizes_a or not sizes_b or med is None:
        return {"threshold": None, "share_a": None, "share_b": None, "detected": False}
    threshold = med * factor
    share_a = sum(s < threshold for s in sizes_a) / len(sizes_a)
    share_b = sum(s < threshold for s in sizes_b) / len(sizes_b)
    return {
        "threshold": threshold,
        "share_a": share_a,
        "share_b": share_b,
        "detected": share_b - share_a >= 0.25,
    }


def _shifts(d: dict[str, Any]) -> list[str]:
    out = []
    fc, ts, ms = d["file_count"], d["total_size"], d["median_size"]
    if fc["a"] != fc["b"] and (not fc["a"] or abs(fc["b"] - fc["a"]) >= max(1, 0.1 * fc["a"])):
        out.append(f"file count {fc['a']:,} → {fc['b']:,}" + (f" (×{fc['ratio']:.2f})" if fc["ratio"] else ""))
    if ts["a"] and ts["b"] is not None and abs(ts["b"] - ts["a"]) >= 0.1 * ts["a"]:
        out.append(f"total size {format_size(ts['a'])} → {format_size(ts['b'])} (×{ts['ratio']:.2f})")
    if ms["a"] and ms["b"] is not None and (ms["b"] <= ms["a"] / 2 or ms["b"] >= ms["a"] * 2):
        out.append(f"median file size {format_size(ms['a'])} → {format_size(ms['b'])} (×{ms['ratio']:.3g})")
    sf = d["small_files"]
    if sf["detected"]:
        out.append(
            f"shift to small files: {sf['share_a']:.0%} → {sf['share_b']:.0%} of files are smaller than "
            f"{format_size(sf['threshold'])}"
        )
    for e in d["extensions"]:
        if e["a"] == 0:
            out.append(f"new extension {e['extension']}: {e['b']:,} files")
        elif e["b"] == 0:
            out.append(f"extension {e['extension']} gone ({e['a']:,} files before)")
        elif abs(e["delta"]) >= max(1, 0.1 * e["a"]):
            out.append(f"{e['extension']} files {e['a']:,} → {e['b']:,}")
    if d["counts"]["changed"]:
        n = d["counts"]["changed"]
        out.append(f"{n:,} file{'s' if n != 1 else ''} changed content")
    return out
