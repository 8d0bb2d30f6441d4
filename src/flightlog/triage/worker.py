"""Triage reports made in a worker process of the server, never in the process that answers.

Why a process: a report is pure Python over every failure of a window (parsing, masking,
classifying: seconds over thousands of crafted failures, issue 31 item 8). In a thread of the
server it holds the interpreter's lock in turns with the event loop, and an embedded store's
one connection with ``/healthz``: a reader's ``GET /triage`` slowed every other request. A
worker process has an interpreter and a store connection of its own (SQLite in WAL mode lets
it read while the server writes; PostgreSQL gives it a pool of its own), so the server's loop
only waits on a pipe. The worker is started on the first report and remembers, per store,
categories by signature and each run's signature parts (budget.py), so a failure is parsed and
classified once however many reports read it.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import weakref
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from flightlog.client import Client
from flightlog.config import Settings
from flightlog.errors import FlightlogError, error_from_dict
from flightlog.store.registry import open_store
from flightlog.triage.budget import CLASSIFY_BUDGET, LruCache
from flightlog.triage.report import triage_report

__all__ = ["report_in_worker"]

_POOLS: dict[tuple[str, str], ProcessPoolExecutor] = {}
_LOCK = threading.Lock()


def _pool(store_uri: str, home: str, owner: object) -> ProcessPoolExecutor:
    with _LOCK:
        pool = _POOLS.get((store_uri, home))
        if pool is None:
            # spawn: a fork of a server with threads could copy a lock some thread held
            pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_end_with_the_server,
                initargs=(os.getpid(),),
            )
            _POOLS[(store_uri, home)] = pool
            weakref.finalize(owner, _close, (store_uri, home))
        return pool


def _close(key: tuple[str, str]) -> None:
    with _LOCK:
        pool = _POOLS.pop(key, None)
    if pool is not None:
        pool.shutdown(wait=False, cancel_futures=True)


def report_in_worker(store_uri: str, home: Path | str, owner: object, **options: Any) -> dict[str, Any]:
    """:func:`~flightlog.triage.report.triage_report` with ``options``, made by the worker
    process of (``store_uri``, ``home``), which lives as long as ``owner`` (the server's store).
    Blocks the calling thread (a worker thread of the server) until the report is made; the
    report's own errors are raised here as they were there."""
    future = _pool(store_uri, str(home), owner).submit(_make, store_uri, str(home), options)
    kind, value = future.result()
    if kind == "error":
        raise error_from_dict(value)
    return dict(value)


# ── in the worker process ──────────────────────────────────────────────────

#: how often the worker looks whether the server that started it is still there
PARENT_CHECK_S = 1.0


def _end_with_the_server(server_pid: int) -> None:
    """Ends the worker once the server that started it is gone. A server killed outright (kill
    -9, the OOM killer) never shuts its pool down, and the worker holds both ends of its call
    queue's pipe, so it would wait for work forever, an orphan holding a store connection."""

    def watch() -> None:
        while os.getppid() == server_pid:
            time.sleep(PARENT_CHECK_S)
        os._exit(0)

    threading.Thread(target=watch, name="flightlog-triage-parent", daemon=True).start()


_STATE: dict[tuple[str, str], tuple[Any, Any, Any]] = {}


def _make(store_uri: str, home: str, options: dict[str, Any]) -> tuple[str, Any]:
    state = _STATE.get((store_uri, home))
    if state is None:
        client = Client.for_lookups(Settings.from_env(home=Path(home)), store=open_store(store_uri))
        state = _STATE[(store_uri, home)] = (client, LruCache(100_000), LruCache(50_000))
    client, categories, parts = state
    try:
        report = triage_report(client, categories=categories, parts=parts, budget=CLASSIFY_BUDGET, **options)
    except FlightlogError as exc:
        return "error", exc.to_dict()
    return "report", report
