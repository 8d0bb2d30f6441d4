"""Reads never write: a store opened read-only (``sqlite:///…?mode=ro``, on a file nobody may
write) answers every method of the StoreReader protocol, and a write is refused clearly."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

import flightlog
from flightlog.errors import StoreUnavailable
from flightlog.models import LogQuery
from flightlog.store import StoreReader, open_store


@pytest.fixture
def filled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    home = tmp_path / "home"
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_STORE", "FLIGHTLOG_TOKEN", "FLIGHTLOG_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FLIGHTLOG_HOME", str(home))
    report = tmp_path / "report.txt"
    report.write_text("all good")
    run = flightlog.init(
        project="p", params={"lr": 0.1}, tags={"team": "a"}, resources=False, console=False, quiet=True
    )
    for step in range(3):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
    with run.stage("train"):
        run.log_event("hello", level="warning")
    run.note("a hypothesis")
    run.log_artifact(report)
    run.log_evidence("custom", "doc", {"x": 1})
    run.finish()
    return home / "flightlog.db", run.id


def test_every_reader_method_works_on_a_read_only_store(filled: tuple[Path, str]) -> None:
    db, run_id = filled
    db.chmod(stat.S_IRUSR)
    for side in ("-wal", "-shm"):
        assert not Path(f"{db}{side}").exists() or os.access(f"{db}{side}", os.R_OK)
    before = db.read_bytes()
    store = open_store(f"sqlite:///{db}?mode=ro")
    try:
        assert isinstance(store, StoreReader)
        assert store.resolve(run_id[:8]) == run_id
        info = store.get_run(run_id)
        assert info.status == "succeeded" and info.params == {"lr": 0.1}
        assert [r.id for r in store.search_runs(project="p", filter="params.lr > 0.01", order_by="-created")] == [
            run_id
        ]
        assert store.projects()[0]["name"] == "p"
        assert [n.text for n in store.notes(run_id)] == ["a hypothesis"]
        assert isinstance(store.context(run_id), dict)
        arts = store.artifacts(run_id)
        assert [a.path for a in arts] == ["report.txt"]
        assert [a.run_id for a in store.artifacts_by_digest([arts[0].sha256 or ""])] == [run_id]
        assert store.children(run_id) == []
        assert store.evidence(run_id, "custom", "doc")[0]["data"] == {"x": 1}
        assert store.metric_summaries(run_id)["loss"].count == 3
        assert list(store.metric_history(run_id, "loss").steps) == [0, 1, 2]
        assert [e.message for e in store.logs(run_id, LogQuery(grep="hello"))] == ["hello"]
        assert [s.name for s in store.stages(run_id)] == ["train"]
        assert store.resource_samples(run_id) == []
        with pytest.raises(StoreUnavailable, match="read-only"):
            store.update_run(run_id, status="failed")
    finally:
        store.close()
    assert db.read_bytes() == before


def test_a_client_on_a_read_only_store_reconciles_without_error(filled: tuple[Path, str]) -> None:
    db, run_id = filled
    with flightlog.Client(store=f"sqlite:///{db}?mode=ro") as client:
        assert client.run(run_id[:8]).status == "succeeded"
        assert client.reconcile(force=True)["errors"] == []


def test_a_read_only_store_is_never_created(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable, match="never created"):
        open_store(f"sqlite:///{tmp_path / 'none.db'}?mode=ro")
    assert not (tmp_path / "none.db").exists()
