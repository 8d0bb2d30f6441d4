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
    edited = cli_json(
        home,
        "runs",
        "edit",
        run.id[:8],
        "--name",
        "new",
        "--tag",
        "team=nlp",
        "--untag",
        "tmp",
        "-d",
        "a described run",
    )
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


@pytest.mark.embedded_only("talks to its own server with tokens of several roles")
def test_http_edit_endpoint_checks_roles_and_input(home: Path, tmp_path: Path) -> None:
    import httpx

    from flightlog.server.testing import serve_in_thread

    with serve_in_thread(tmp_path / "srv", auth=True) as server:
        writer, reader = server.token("writer"), server.token("reader")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("FLIGHTLOG_URL", server.url)
            mp.setenv("FLIGHTLOG_TOKEN", writer)
            with flightlog.init(project="p", name="draft", tags={"tmp": "1"}, resources=False) as run:
                pass
        with httpx.Client(base_url=f"{server.url}/api/v1") as api:
            edited = api.post(
                f"/runs/{run.id}/edit",
                headers={"Authorization": f"Bearer {writer}"},
                json={"name": "final", "description": "why", "tags": {"team": "cv"}, "remove_tags": ["tmp"]},
            )
            assert edited.status_code == 200, edited.text
            assert edited.json()["name"] == "final" and edited.json()["tags"] == {"team": "cv", "description": "why"}
            denied = api.post(f"/runs/{run.id}/edit", headers={"Authorization": f"Bearer {reader}"}, json={"name": "x"})
            assert denied.status_code == 403
            for body, message in (
                ({}, "nothing to change"),
                ({"name": " "}, "name needs some text"),
                ({"color": "red"}, "cannot edit"),
                ({"tags": ["a"]}, "tags must be an object"),
                ({"name": 3}, "name must be a string"),
            ):
                bad = api.post(f"/runs/{run.id}/edit", headers={"Authorization": f"Bearer {writer}"}, json=body)
                assert bad.status_code == 400 and message in bad.json()["error"]["message"], (body, bad.text)
