"""Renaming, retagging and describing a run after the fact, on every store (embedded, through a
server, PostgreSQL): a tag set to null is removed by every backend's ingest."""

from __future__ import annotations

from pathlib import Path

import flightlog


def test_rename_retag_describe_and_remove_tags_on_every_store(home: Path) -> None:
    with flightlog.init(project="p", name="draft", tags={"tmp": "1", "team": "cv"}, resources=False) as run:
        run.remove_tags("tmp")
        run.set_description("first try")
    client = flightlog.Client()
    assert client.run(run.id).tags == {"team": "cv", "description": "first try"}
    edited = client.edit_run(run.id, name="final", tags={"verdict": "keep"}, remove_tags=["team"], description="")
    assert edited.name == "final" and edited.tags == {"verdict": "keep"}
    assert [r.id for r in client.runs(filter="tags.verdict = 'keep'")] == [run.id]
