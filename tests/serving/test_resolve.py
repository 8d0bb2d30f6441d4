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


def test_every_documented_form_resolves_through_the_registry_or_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`NAME:VERSION` as the docs list it: resolved by the registry, the replica runs in the model's
    project (not the process's default) with its training run and digest, so `deployments show`
    counts it; a reference the registry cannot resolve is refused, naming the forms that work."""
    home = tmp_path / "home"
    monkeypatch.setenv("FLIGHTLOG_HOME", str(home))
    monkeypatch.setenv("FLIGHTLOG_QUIET", "1")
    from flightlog.registry import Registry
    from tests.helpers import cli_json
    from tests.registry.conftest import logged_run

    trained = logged_run(tmp_path, {"model.bin": b"weights"}, project="churn-team")
    with Client(home) as client:
        Registry(client).register(trained, "model.bin", "churn")
    cli_json(home, "deploy", "churn:1", "--endpoint", "churn-api", "--env", "prod")
    env = child_env(home, FLIGHTLOG_PROJECT="default")  # the process's default project is not the model's
    run_script(home, "from flightlog import serving\nserving.attach(model='churn:1', endpoint='churn-api')", env=env)
    refused = run_script(
        home,
        """
        from flightlog import serving
        for ref in ("churn:2", "nope:1", "churn:x"):
            try:
                serving.attach(model=ref, endpoint="churn-api")
            except Exception as exc:
                print(type(exc).__name__, exc)
    """,
        env=env,
    ).stdout.splitlines()
    assert [line.split()[0] for line in refused] == ["NotFound", "NotFound", "InvalidInput"], refused
    assert all("NAME:VERSION" in line and "models:/NAME@ALIAS" in line for line in refused), refused
    with Client(home) as client:
        (run,) = [r for r in client.runs() if r.tags.get("serving.endpoint")]
    assert run.project == "churn-team" and run.params["serving.model_run"] == trained
    assert run.params["serving.digest"] == hashlib.sha256(b"weights").hexdigest()
    shown = cli_json(home, "deployments", "show", "churn-api", "--env", "prod")
    assert [r["run_id"] for r in shown["replicas"]] == [run.id], "the replica is the deployment's"
