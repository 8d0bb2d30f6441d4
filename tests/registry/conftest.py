"""Registry tests run against real stores: the embedded SQLite file and a real PostgreSQL,
with runs recorded by the real SDK."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import flightlog
from flightlog.client import Client


@pytest.fixture(params=["sqlite", "postgres"])
def client(request: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    """A Client over a fresh store of each kind; the SDK in this process writes to the same store."""
    for name in ("FLIGHTLOG_URL", "FLIGHTLOG_TOKEN", "FLIGHTLOG_STORE", "FLIGHTLOG_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FLIGHTLOG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FLIGHTLOG_PROJECT", "fraud-team")
    monkeypatch.setenv("FLIGHTLOG_CONSOLE", "off")
    if request.param == "postgres":
        monkeypatch.setenv("FLIGHTLOG_STORE", request.getfixturevalue("postgres_uri"))
    c = Client()
    yield c
    c.close()


def logged_run(
    tmp_path: Path, files: dict[str, bytes], *, project: str = "fraud-team", inputs: dict[str, bytes] | None = None
) -> str:
    """A finished run, recorded by the SDK, that logged ``files`` as output artifacts (and
    ``inputs`` as input data snapshots)."""
    run = flightlog.init(project=project, name="train")
    for name, data in (inputs or {}).items():
        source = tmp_path / f"in-{name}"
        source.write_bytes(data)
        run.log_input(source, name=name)
    for name, data in files.items():
        source = tmp_path / name.replace("/", "_")
        source.write_bytes(data)
        run.log_artifact(source, name=name)
    run.finish()
    return run.id
