"""attach(model="fraud@production") asks the registry: the replica reports the version the alias
names, in the model's project, with the version's run and digest; an unknown alias is refused."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from flightlog import Client
from tests.helpers import child_env, run_script


def test_an_alias_is_resolved_to_its_version_and_an_unknown_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("FLIGHTLOG_HOME", str(home))
    monkeypatch.setenv("FLIGHTLOG_QUIET", "1")
    from flightlog.registry import Registry
    from tests.registry.conftest import logged_run

    trained = logged_run(tmp_path, {"model.bin": b"weights"})
    with Client(home) as client:
        Registry(client).register(trained, "model.bin", "fraud", alias="production")
    run_script(
        home,
        """
        from flightlog import serving
        serving.attach(model="fraud@production", endpoint="fraud-api")
    """,
        env=child_env(home),
    )
    out = run_script(
        home,
        """
        from flightlog import serving
        try:
            serving.attach(model="fraud@staging", endpoint="fraud-api")
        except Exception as exc:
            print(type(exc).__name__, exc)
    """,
        env=child_env(home),
    ).stdout
    assert out.startswith("NotFound") and "staging" in out, out
    with Client(home) as client:
        replicas = [r for r in client.runs() if r.tags.get("serving.endpoint")]
        assert len(replicas) == 1, "the refused attach recorded nothing"
        run = replicas[0]
        assert (
            run.project == "fraud-team" and run.tags["serving.version"] == "1" and run.tags["serving.model"] == "fraud"
        )
        assert run.params["serving.model_run"] == trained
        assert run.params["serving.digest"] == hashlib.sha256(b"weights").hexdigest()
