"""`flightlog migrate-store` copies a feature's tables too: the registry survives the move."""

from __future__ import annotations

from pathlib import Path

import pytest

from flightlog.client import Client
from flightlog.registry import Registry, resolve
from flightlog.store.migrate import copy_sqlite_to_postgres
from tests.registry.conftest import logged_run


@pytest.mark.parametrize("client", ["sqlite"], indirect=True)
def test_models_aliases_and_events_move_to_postgres(client: Client, tmp_path: Path, postgres_uri: str) -> None:
    run = logged_run(tmp_path, {"model.bin": b"m"})
    reg = Registry(client)
    reg.register(run, "model.bin", "fraud", alias="production")
    reg.deploy("fraud@production", "fraud-api", "prod")
    home = client.settings.home
    client.close()

    counts = copy_sqlite_to_postgres(str(home), postgres_uri)
    assert counts["registry_versions"] == 1 and counts["registry_aliases"] == 1 and counts["registry_events"] == 3

    moved = Client(home=home, store=postgres_uri)
    try:
        assert resolve("models:/fraud@production", moved).run_id == run
        assert [d.version for d in Registry(moved).deployments()] == [1]
        assert [c.to_version for c in Registry(moved).alias_history("fraud", "production")] == [1]
    finally:
        moved.close()
