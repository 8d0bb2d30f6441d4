"""Editing after the fact: rename, retag and describe a run from the SDK, the Client and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

import flightlog
from tests.helpers import cli, cli_json


def test_sdk_renames_describes_and_removes_tags_while_running(home: Path) -> None:
    with flightlog.init(project="p", name="draft", tags={"tmp": "1", "team": "cv"}, resources=False) as run:
        run.rename("resnet-baseline")
        run.set_description("baseline for the augmentation study")
        run.remove_tags("tmp", "never-set")
    info = flightlog.Client().run(run.id)
    assert info.name == "resnet-baseline" and run.name == "resnet-baseline"
    assert info.tags == {"team": "cv", "description": "baseline for the augmentation study"}
    with pytest.raises(flightlog.FlightlogError, match="name needs some text"):
        run.rename("  ")


def test_cli_and_client_edit_a_finished_run_and_filters_see_it(home: Path) -> None:
    with flightlog.init(project="p", name="old", tags={"tmp": "x"}, resources=False) as run:
        run.log({"loss": 0.5})
    edited = cli_json(home, "runs", "edit", run.id[:8], "--name", "new", "--tag", "team=nlp", "--untag", "tmp",
                      "-d", "a described run")
    assert edited["id"] == run.id and edited["name"] == "new" and edited["status"] == "succeeded"
    assert edited["tags"] == {"team": "nlp", "description": "a described run"}
    client = flightlog.Client()
    assert [r.id for r in client.runs(filter="tags.description ~ 'described'")] == [run.id]
    assert client.edit_run(run.id, description="").tags == {"team": "nlp"}
    assert client.run(run.id).metrics["loss"].last == 0.5  # nothing else changed

    nothing = cli(home, "runs", "edit", run.id, check=False)
    assert nothing.returncode != 0 and "nothing to change" in nothing.stderr
    bad = cli(home, "runs", "edit", run.id, "--tag", "novalue", check=False)
    assert bad.returncode != 0 and "KEY=VALUE" in bad.stderr
    missing = cli(home, "runs", "edit", "zzzzzz", "--name", "x", check=False)
    assert missing.returncode != 0 and "zzzzzz" in missing.stderr
