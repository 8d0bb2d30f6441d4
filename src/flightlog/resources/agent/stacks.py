"""A process's own evidence of where it is stuck: its threads' Python stacks, and the torch
Flight Recorder's record of the collectives it entered.

Both are read from a thread of the process that is not the stuck one: gloo's and NCCL's waits
and ``time.sleep`` release the GIL, so ``sys._current_frames()`` answers while the main thread
waits; the Flight Recorder is dumped through torch's own on-demand call
(``torch._C._distributed_c10d._dump_fr_trace_json``, the JSON twin of the ``_dump_fr_trace``
the Flight Recorder tutorial documents). A faulthandler dump (``faulthandler.register`` on a
signal: C code that holds the GIL cannot stop it) is parsed into the same shape.

Standard library only, and importable without the rest of flightlog: the runner's bootstrap
loads this package by path into workloads that may run another flightlog, or none (see
``agent/__init__.py``). Everything is bounded (threads, frames, characters, entries); what is
left out is counted in the result, never silently lost, and nothing here raises.

The shapes are contract C3 of docs/distributed.md: innermost frame last.
"""

from __future__ import annotations

import _thread
import os
import sys
import time

from .settings import hostname

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing into a workload at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

__all__ = [
    "current_stacks",
    "MAX_THREADS",
    "MAX_FRAMES",
    "MAX_FR_ENTRIES",
    "thread_stacks",
    "stacks_evidence",
    "flight_recorder_raw",
    "flight_recorder_evidence",
    "normalize_flight_recorder",
    "parse_faulthandler",
    "collective_progress",
]

MAX_THREADS = 64  # threads kept per dump (the main thread first)
MAX_FRAMES = 48  # frames kept per thread: the innermost 40 and the outermost 8
_OUTER_KEPT = 8
#: for a process without threading: this module is imported on its main thread (the bootstrap's start-up)
_main_ident = _thread.get_ident()
MAX_TOTAL_FRAMES = 1500  # frames kept per dump, all threads together
MAX_CODE_CHARS = 200
MAX_FR_ENTRIES = 64  # Flight Recorder entries kept in the evidence (the newest); the rest go to an artifact


def _frame_dict(filename: str, lineno: int, function: str) -> dict[str, Any]:
    code = ""
    try:
        import linecache  # here, not at the top: a workload's bootstrap imports this module (tokenize comes with it)

        code = linecache.getline(filename, lineno).strip()[:MAX_CODE_CHARS]
    except Exception:
        pass
    return {"file": filename, "line": lineno, "function": function, "code": code}


def _walk(frame: Any) -> list[tuple[str, int, str]]:
    """(file, line, function) innermost first."""
    out = []
    while frame is not None:
        code = frame.f_code
        out.append((code.co_filename, frame.f_lineno or 0, code.co_name))
        frame = frame.f_back
    return out


def _bounded(frames: list[tuple[str, int, str]], budget: int) -> tuple[list[tuple[str, int, str]], int]:
    """The innermost and the outermost frames of one thread (innermost first), and how many were left out."""
    keep = max(0, min(MAX_FRAMES, budget))
    if len(frames) <= keep:
        return frames, 0
    outer = min(_OUTER_KEPT, keep // 4)
    kept = frames[: keep - outer] + (frames[len(frames) - outer :] if outer else [])
    return kept, len(frames) - len(kept)


def thread_stacks(skip: set[int] | None = None) -> tuple[list[dict[str, Any]], int]:
    """Every thread's Python stack (the main thread first, flightlog's own threads last),
    innermost frame last; and how many frames were left out to stay within the bounds. ``skip``
    holds thread idents not to show (the watcher's own)."""
    try:
        frames = sys._current_frames()
    except Exception:
        return [], 0
    # threading is never imported here: imported first on the watch's thread, it would take that one for the main thread
    threading = sys.modules.get("threading")
    names = {t.ident: t.name for t in threading.enumerate()} if threading is not None else {}
    main = threading.main_thread().ident if threading is not None else _main_ident

    # the main thread, then the workload's threads, then flightlog's own (``flightlog-*``): when
    # the bounds cut the list, what is cut is flightlog's, not the data loader that hangs
    def place(ident: int) -> tuple[bool, bool, str, int]:
        name = names.get(ident, "~")
        return ident != main, name.startswith("flightlog-"), name, ident

    order = sorted(frames, key=place)
    threads: list[dict[str, Any]] = []
    dropped = 0
    budget = MAX_TOTAL_FRAMES
    for ident in order:
        if skip and ident in skip:
            continue
        walked = _walk(frames[ident])
        if len(threads) >= MAX_THREADS or budget <= 0:
            dropped += len(walked)
            continue
        kept, left_out = _bounded(walked, budget)
        budget -= len(kept)
        dropped += left_out
        thread = {
            "name": names.get(ident, f"thread-{ident}"),
            "id": ident,
            "frames": [_frame_dict(f, n, fn) for f, n, fn in reversed(kept)],
        }
        if left_out:
            thread["omitted_frames"] = left_out
        threads.append(thread)
    del frames
    return threads, dropped


def stacks_evidence(
    rank: int | None, reason: str, *, skip: set[int] | None = None, source: str = "sdk", **extra: Any
) -> dict[str, Any]:
    """The ``stacks`` evidence of this process now (contract C3)."""
    threads, dropped = thread_stacks(skip)
    data: dict[str, Any] = {
        "rank": rank,
        "pid": os.getpid(),
        "host": hostname(),
        "time": time.time(),
        "reason": reason,
        "source": source,
        "threads": threads,
        "truncated": dropped > 0,
    }
    if dropped:
        data["dropped_frames"] = dropped
    data.update(extra)
    return data


# ── the Flight Recorder ────────────────────────────────────────────────────────────────────────


def _distributed() -> Any:
    """``torch.distributed`` when the process already imported it and joined a process group; else None.
    Never imports torch: a process that did not is no distributed rank of torch's."""
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return None
    try:
        return dist if dist.is_available() and dist.is_initialized() else None
    except Exception:
        return None


def collective_progress() -> int | None:
    """How many collectives this rank issued on its default process group (torch's own sequence
    number: a cheap read of a counter), or None outside a torch process group."""
    dist = _distributed()
    if dist is None:
        return None
    try:
        return int(dist.distributed_c10d._get_default_group()._get_sequence_number_for_group())
    except Exception:
        return None


def flight_recorder_raw() -> str | None:
    """The Flight Recorder's buffer as torch dumps it (JSON text), or None: not a torch rank, the
    recorder off (``TORCH_FR_BUFFER_SIZE`` unset when the group was made), or no such call."""
    if _distributed() is None:
        return None
    c10d = sys.modules.get("torch._C._distributed_c10d")
    if c10d is None:
        return None
    dump = getattr(c10d, "_dump_fr_trace_json", None) or getattr(c10d, "_dump_nccl_trace_json", None)
    if dump is None:
        return None
    try:
        raw = dump(True, False)  # includeCollectives, onlyActive
    except Exception:
        return None
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    return raw if isinstance(raw, str) else None


_KNOWN_VERSIONS = r"^2\.\d+$"  # compiled where used (re caches it): not at a workload's start-up


def normalize_flight_recorder(raw: str, rank: int | None, max_entries: int = MAX_FR_ENTRIES) -> dict[str, Any]:
    """Torch's dump read into the ``flight_recorder`` evidence (contract C3): the newest
    ``max_entries`` entries, each ``{"seq", "op", "pg", "sizes", "state", "time_created"}`` (and
    ``"p2p"``, ``"retired"``, ``"dtypes"``, ``"timeout_s"``, ``"backend"`` where known).

    A dump that does not parse, or of a version this reader does not know, is kept as a
    ``problem`` beside what could be read: the reader of the evidence says so rather than
    guessing."""
    import json  # here, with ``re`` below: a workload's bootstrap imports this module, a dump is rare
    import re

    out: dict[str, Any] = {"rank": rank, "pid": os.getpid(), "time": time.time(), "version": None, "entries": []}
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        out.update(truncated=True, problem=f"the Flight Recorder dump is not JSON ({exc}); it may be truncated")
        return out
    if not isinstance(doc, dict):
        out.update(truncated=False, problem="the Flight Recorder dump is not a JSON object")
        return out
    version = doc.get("version")
    out["version"] = version if isinstance(version, str) else None
    if not (isinstance(version, str) and re.match(_KNOWN_VERSIONS, version)):
        out["problem"] = (
            f"Flight Recorder dump version {version!r} is not one flightlog knows (2.x); entries read as 2.x"
        )
    raw_entries = doc.get("entries")
    if not isinstance(raw_entries, list):
        raw_entries = []
    entries = [e for e in (_entry(x) for x in raw_entries) if e is not None]
    out["total"] = len(entries)
    out["truncated"] = len(entries) > max_entries
    out["entries"] = entries[-max_entries:] if max_entries else []
    return out


def _entry(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    name = str(raw.get("profiling_name") or "")
    backend, _, op = name.rpartition(":")
    p2p = bool(raw.get("is_p2p"))
    seq = raw.get("p2p_seq_id") if p2p else raw.get("collective_seq_id")
    created = raw.get("time_created_ns")
    group = raw.get("process_group")
    pg = group[1] if isinstance(group, list) and len(group) > 1 else raw.get("pg_id")
    entry: dict[str, Any] = {
        "seq": seq if isinstance(seq, int) else None,
        "op": op or name or None,
        "pg": str(pg) if pg is not None else None,
        "sizes": raw.get("input_sizes") if isinstance(raw.get("input_sizes"), list) else None,
        "state": raw.get("state"),
        "time_created": created / 1e9 if isinstance(created, (int, float)) and created > 0 else None,
    }
    if backend:
        entry["backend"] = backend
    if p2p:
        entry["p2p"] = True
    if "retired" in raw:
        entry["retired"] = bool(raw.get("retired"))
    if isinstance(raw.get("input_dtypes"), list):
        entry["dtypes"] = raw["input_dtypes"]
    timeout = raw.get("timeout_ms")
    if isinstance(timeout, (int, float)) and timeout > 0:
        entry["timeout_s"] = timeout / 1000
    return entry


def flight_recorder_evidence(rank: int | None) -> tuple[dict[str, Any] | None, str | None]:
    """The ``flight_recorder`` evidence of this rank now, and torch's raw dump when the evidence
    had to leave entries out (kept as an artifact by whoever records it); (None, None) when
    there is no recorder to read."""
    raw = flight_recorder_raw()
    if raw is None:
        return None, None
    data = normalize_flight_recorder(raw, rank)
    if not data.get("total") and not data.get("problem"):
        return None, None  # the recorder is off (no TORCH_FR_BUFFER_SIZE): nothing to show
    return data, (raw if data.get("truncated") else None)


# ── faulthandler's text ─────────────────────────────────────────────────────────────────────────

# compiled where used (re caches them), not when a workload's bootstrap imports this module
_THREAD = r"^(Current thread|Thread) (0x[0-9a-fA-F]+|\d+)(?: \[(?P<name>[^\]]*)\])? \(most recent call first\):"
_FRAME = r'^\s+File "(?P<file>.*)", line (?P<line>\d+|\?\?\?) in (?P<function>.*)$'


def parse_faulthandler(text: str) -> list[list[dict[str, Any]]]:
    """faulthandler's dumps (``dump_traceback(all_threads=True)``), each a list of threads in the
    C3 shape (innermost frame last); several dumps in one text (one per signal) come back in
    order. Lines it does not know are skipped."""
    import re  # here: a workload's bootstrap imports this module, and ``re`` (with ``enum``) costs its start-up

    dumps: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] | None = None
    thread: dict[str, Any] | None = None
    for line in text.splitlines():
        head = re.match(_THREAD, line)
        if head:
            # a dump starts at its first thread: faulthandler prints the current thread first or
            # last depending on the version, so a new dump is a thread id seen again
            ident = head.group(2)
            if current is None or any(t["id"] == ident for t in current):
                current = []
                dumps.append(current)
            thread = {
                "name": head.group("name") or ("current" if line.startswith("Current") else f"thread {ident}"),
                "id": ident,
                "frames": [],
            }
            current.append(thread)
            continue
        frame = re.match(_FRAME, line)
        if frame and thread is not None:
            number = frame.group("line")
            lineno = int(number) if number.isdigit() else 0
            thread["frames"].insert(0, _frame_dict(frame.group("file"), lineno, frame.group("function").strip()))
    for dump in dumps:
        for t in dump:
            if len(t["frames"]) > MAX_FRAMES:
                t["omitted_frames"] = len(t["frames"]) - MAX_FRAMES
                t["frames"] = t["frames"][-MAX_FRAMES:]
    return dumps


# ── read back: which stacks still say where a process is ──────────────────────────────────────


def current_stacks(
    stacks: Sequence[dict[str, Any]],
    *,
    stalls: Sequence[dict[str, Any]] = (),
    progress_at: Iterable[float | None] = (),
) -> dict[str, Any] | None:
    """The newest of ``stacks`` records while it still says where the process is: no sign of
    progress came after it — a ``stall`` record saying ``resumed`` (the watch saw a step, a stage,
    a heartbeat or a collective move), or a time in ``progress_at`` (a step logged, a collective
    entered). None when the process moved on since: those stacks say where it *was* during a
    stall that resolved (a slow ``import torch`` under load), not where it stopped or ended.

    A log line is no such sign: any thread prints one (the NCCL watchdog, a data loader) while
    the main thread stays stuck. One function for every reader that says where a rank or a
    process is (the culprit, a hang's report, ``flightlog ranks --stacks``; issue 28)."""
    if not stacks:
        return None
    latest = max(stacks, key=lambda d: _time_of(d) or 0.0)
    taken = _time_of(latest)
    if taken is None:
        return latest
    resumed = [_time_of(s) for s in stalls if s.get("state") == "resumed"]
    moved = [t for t in (*resumed, *progress_at) if isinstance(t, (int, float)) and t > taken]
    return None if moved else latest


def _time_of(record: dict[str, Any]) -> float | None:
    t = record.get("time")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
