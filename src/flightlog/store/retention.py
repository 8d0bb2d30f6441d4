"""Retention: which finished runs to delete by age and by size, and the sweep after it.

Running runs are never deleted. Artifact files are content-addressed and may be shared by
several runs, so a file is removed only once no remaining run refers to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flightlog.journal import list_journals
from flightlog.journal.format import read_records

__all__ = ["GcPlan", "plan_gc", "run_gc"]


@dataclass
class GcPlan:
    run_ids: list[str] = field(default_factory=list)
    run_bytes: int = 0
    blobs: int = 0
    blob_bytes: int = 0
    journals: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.run_ids,
            "run_bytes": self.run_bytes,
            "blobs": self.blobs,
            "blob_bytes": self.blob_bytes,
            "journals": self.journals,
        }


def plan_gc(client: Any, *, older_than: float | None, max_size: int | None, now: float) -> GcPlan:
    store = client.store
    sizes = store.run_sizes()  # finished runs, oldest first: (id, ended, bytes)
    chosen: dict[str, int] = {}
    if older_than is not None:
        for run_id, ended, nbytes in sizes:
            if ended is not None and ended < now - older_than:
                chosen[run_id] = nbytes
    if max_size is not None:
        total = sum(n for _, _, n in sizes) - sum(chosen.values())
        for run_id, _, nbytes in sizes:
            if total <= max_size:
                break
            if run_id not in chosen:
                chosen[run_id] = nbytes
                total -= nbytes
    plan = GcPlan(run_ids=list(chosen), run_bytes=sum(chosen.values()))
    remaining = store.referenced_digests() if not chosen else _digests_after(store, set(chosen))
    plan.blobs, plan.blob_bytes = client.artifact_store.remove_unreferenced(remaining, dry_run=True)
    plan.journals = len(_shipped_finished_journals(client))
    return plan


def _digests_after(store: Any, deleted: set[str]) -> set[str]:
    return {sha for run_id, sha in store.kept_digests() if run_id not in deleted}


def _shipped_finished_journals(client: Any) -> list[Any]:
    done = []
    for journal in list_journals(client.settings.home):
        try:
            data = journal.path.read_bytes()
        except OSError:
            continue
        result = read_records(data)
        ended = any(r.get("k") == "writer_end" for _, r in result.records)
        if ended and journal.shipped_offset() >= result.end:
            done.append(journal)
    return done


def run_gc(client: Any, plan: GcPlan) -> dict[str, Any]:
    store = client.store
    if plan.run_ids:
        store.delete_runs(plan.run_ids)
    blobs, blob_bytes = client.artifact_store.remove_unreferenced(store.referenced_digests())
    journals = _shipped_finished_journals(client)
    for journal in journals:
        journal.remove()
    store.reclaim_space()
    return {
        "runs": plan.run_ids,
        "run_bytes": plan.run_bytes,
        "blobs": blobs,
        "blob_bytes": blob_bytes,
        "journals": len(journals),
    }
