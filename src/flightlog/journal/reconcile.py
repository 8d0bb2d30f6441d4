"""Reconciliation: bring the store up to date with what this host's journals and processes say,
before a listing reads it. The one place where reading leads to writing, called explicitly.

A run whose owner process died without an end record (SIGKILL, the OOM killer, a lost power
supply) still reads ``running`` in the store. Its journals may hold its real end, never shipped;
else it ``crashed`` (``end_reason: lost``). :func:`reconcile` settles every such run of this
host: it ships the run's journals the way ``flightlog sync`` does (``journal/sync.py``), then
marks the run crashed if it is still unfinished and nothing is left unshipped. A journal that
cannot be shipped now leaves its run as it is, for ``flightlog sync`` to settle.

Readers call it, never the read functions themselves: :class:`flightlog.Client` when it opens
(``Client(reconcile=False)`` opts out), and through it the CLI's ``runs ls`` and every other
command. The store's read methods never write, so a store opened read-only reads fine.

It is cheap when nothing changed. A marker beside the journals
(``FLIGHTLOG_HOME/journal/.reconciled-<store>``) records, after each full pass, the names of
the journals then present and the live runs it saw (id, pid and start) — those of the store's
rows, and those whose journal's owner lives though the store has no row of them yet. The next call finds
the same journal names, a marker younger than :data:`MARKER_MAX_AGE_S`, and every recorded
owner still alive: then it returns without touching the store (a directory listing and a
liveness check per live run). A new run on this host adds a journal, so it changes the names;
a recorded owner that died fails its check; either leads to a full pass, one indexed query
for this host's unfinished runs. A run whose journals live in another ``FLIGHTLOG_HOME`` is
caught by the full pass the marker's age forces.

The ranks of a distributed job have no owner process to check: each rank's writer is settled
on its own. A full pass also looks at this host's journals of ranks (``writer`` headers with a
rank) and ships those whose processes are gone, marking them lost (``journal/sync.py``); the
marker keeps the live ones, so that the death of one forces the next full pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flightlog.errors import FlightlogError
from flightlog.journal.files import journal_root, list_journals
from flightlog.journal.format import MAGIC
from flightlog.journal.liveness import process_alive
from flightlog.journal.sync import header_alive, journal_header, settle_dead_writers, sync
from flightlog.models import RunInfo
from flightlog.statuses import OWNED_STATUSES

if TYPE_CHECKING:
    from flightlog.store.base import Store

__all__ = ["ReconcileReport", "reconcile", "MARKER_MAX_AGE_S", "UNFINISHED"]

MARKER_MAX_AGE_S = 30.0
UNFINISHED = OWNED_STATUSES  # what a live owner process still has to finish


@dataclass
class ReconcileReport:
    """What one call did: ``skipped`` when the marker showed nothing had changed."""

    skipped: bool = False
    checked: int = 0  # unfinished runs of this host looked at
    synced: list[str] = field(default_factory=list)  # dead owners' runs whose journals were shipped
    crashed: list[str] = field(default_factory=list)  # runs marked crashed (end_reason lost)
    errors: list[str] = field(default_factory=list)  # what could not be done now (a reader's token may not write)

    def to_dict(self) -> dict[str, Any]:
        return {
            "skipped": self.skipped,
            "checked": self.checked,
            "synced": self.synced,
            "crashed": self.crashed,
            "errors": self.errors,
        }


def reconcile(home: Path, store: Store, *, store_key: str = "", force: bool = False) -> ReconcileReport:
    """Settle this host's runs whose owner died (see the module's docstring). Never raises for
    what the store refuses (a read-only store, a reader's token): that goes in ``errors``.

    ``store_key`` names the store (its URI) so that homes shared by several stores keep one
    marker each; ``force`` makes a full pass whatever the marker says."""
    report = ReconcileReport()
    home = Path(home)
    marker = _marker_path(home, store_key)
    names = _journal_names(home)
    if not force and _unchanged(marker, names):
        report.skipped = True
        return report
    host = socket.gethostname()
    try:
        candidates = store.search_runs(
            filter=f"status in ('running', 'created') and host = {_quoted(host)}", limit=None
        )
    except FlightlogError as exc:
        report.errors.append(f"cannot list this host's unfinished runs: {exc}")
        return report
    live: list[dict[str, Any]] = []
    for run in candidates:
        if run.status not in UNFINISHED or run.host != host or not run.pid:
            continue
        report.checked += 1
        if _alive(run):
            live.append(
                {
                    "id": run.id,
                    "pid": run.pid,
                    "started": run.started or run.created,
                    "pstart": run.timeline.get("owner_process_start"),
                    "boot": run.timeline.get("host_boot"),
                }
            )
            continue
        _settle(home, store, run, report)
    live.extend(_settle_host_journals(home, store, host, report, seen={r["id"] for r in live}))
    if not report.errors:
        _write_marker(marker, names if report.synced == [] else _journal_names(home), live)
    return report


def _alive(run: RunInfo) -> bool:
    return process_alive(
        run.pid,
        run.started or run.created,
        process_start=run.timeline.get("owner_process_start"),
        boot=run.timeline.get("host_boot"),
    )


def _settle(home: Path, store: Store, run: RunInfo, report: ReconcileReport) -> None:
    """Ship a dead owner's journals, then mark its run crashed if it is still unfinished and
    nothing is left unshipped."""
    if list_journals(home, run.id):
        try:
            sync(home, store, run_id=run.id)
            run = store.get_run(run.id)
        except (FlightlogError, OSError) as exc:
            report.errors.append(f"run {run.id}: cannot ship its journals now ({exc}); `flightlog sync` settles it")
            return
        report.synced.append(run.id)
        if run.status == "crashed":  # the sync found the owner's journal without an end record
            report.crashed.append(run.id)
            return
        if _has_unshipped_journal(home, run.id):
            return
    if run.status not in UNFINISHED:
        return
    try:
        store.update_run(run.id, status="crashed", end_reason="lost", ended=run.updated or time.time())
    except FlightlogError as exc:  # e.g. a reader's token may not write: report, don't record
        report.errors.append(f"run {run.id}: cannot mark it crashed ({exc})")
        return
    report.crashed.append(run.id)


def _settle_host_journals(
    home: Path, store: Store, host: str, report: ReconcileReport, *, seen: set[str]
) -> list[dict[str, Any]]:
    """One look at this host's journals: ship and mark lost those of ranks whose processes are
    gone; return the live writers the marker must watch — the live ranks, and the live owners of
    runs the store did not list (``seen``: the live runs it did), a run whose first records were
    not shipped yet when this pass ran. Without them the marker held the run's journal but not its process, and a SIGKILL
    went unseen until the marker aged (30 s of a dead replica read as serving)."""
    live: list[dict[str, Any]] = []
    dead: set[str] = set()
    for journal in list_journals(home):
        header = journal_header(journal)
        if header is None or header.get("forked") or header.get("host") != host:
            continue  # no header yet, a forked child's, or another host's writer (a shared home)
        if header.get("owner") or header.get("rank") is None:
            if header.get("owner") and journal.run_id not in seen and header_alive(header):
                live.append(_live_entry(f"{journal.run_id}+{journal.writer_id}", header))
            continue
        if header_alive(header):
            live.append(_live_entry(f"{journal.run_id}+{journal.writer_id}", header))
        else:
            dead.add(journal.run_id)
    for run_id in sorted(dead):
        try:
            if settle_dead_writers(home, store, run_id):
                report.synced.append(run_id)
        except (FlightlogError, OSError) as exc:
            report.errors.append(f"run {run_id}: cannot settle its lost ranks now ({exc})")
    return live


def _live_entry(key: str, header: dict[str, Any]) -> dict[str, Any]:
    """A live writer's process as the marker keeps it (what ``process_alive`` checks)."""
    return {
        "id": key,
        "pid": header.get("pid"),
        "started": header.get("t"),
        "pstart": header.get("pstart"),
        "boot": header.get("boot"),
    }


def _has_unshipped_journal(home: Path, run_id: str) -> bool:
    """Some journal of the run holds records past its shipped mark (a bare header holds none)."""
    for journal in list_journals(home, run_id):
        try:
            size = journal.path.stat().st_size
        except FileNotFoundError:
            continue
        if size > max(journal.shipped_offset(), len(MAGIC)):
            return True
    return False


# ── the marker ──────────────────────────────────────────────────────────────
def _marker_path(home: Path, store_key: str) -> Path:
    digest = hashlib.sha256(store_key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return journal_root(home) / f".reconciled-{digest}"


def _journal_names(home: Path) -> list[str]:
    try:
        return sorted(n for n in os.listdir(journal_root(home)) if n.endswith(".journal"))
    except OSError:
        return []


def _unchanged(marker: Path, names: list[str]) -> bool:
    """The marker is young, lists the same journals, and every run it saw alive still is."""
    try:
        state = json.loads(marker.read_text(encoding="utf-8"))
        if state.get("journals") != names or not 0 <= time.time() - float(state["at"]) < MARKER_MAX_AGE_S:
            return False
        return all(
            process_alive(r["pid"], r["started"], process_start=r.get("pstart"), boot=r.get("boot"))
            for r in state.get("live", [])
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return False  # none yet, or unreadable: a full pass writes a fresh one


def _write_marker(marker: Path, names: list[str], live: Sequence[dict[str, Any]]) -> None:
    state = {"at": time.time(), "journals": names, "live": list(live)}
    tmp = marker.with_name(f"{marker.name}.{os.getpid()}.tmp")
    try:
        if not marker.parent.is_dir():
            return  # no journal was ever written here: nothing to mark beside
        tmp.write_text(json.dumps(state), encoding="utf-8")
        os.replace(tmp, marker)
    except OSError:  # a read-only home: every call then makes a full pass, which is still correct
        try:
            tmp.unlink()
        except OSError:
            pass


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
