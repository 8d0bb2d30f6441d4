"""The store side of the ``flightlog_store_migrations`` hook: a feature's own tables, applied
by the SQLite and PostgreSQL stores on open, versioned per feature, idempotent."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flightlog.plugins import StoreMigrations, features, hookimpl
from flightlog.store.registry import open_store

_V1 = ["CREATE TABLE demo_items (id INTEGER PRIMARY KEY, label TEXT NOT NULL)"]
_V2 = ["ALTER TABLE demo_items ADD COLUMN note TEXT"]


def _feature(name: str, sqlite: list[list[str]], postgres: list[list[str]], tables: tuple[str, ...]) -> Any:
    module = types.ModuleType(f"test_feature_{name}")

    @hookimpl
    def flightlog_store_migrations() -> list[StoreMigrations]:
        return [StoreMigrations(name, sqlite, postgres, tables)]

    module.flightlog_store_migrations = flightlog_store_migrations  # type: ignore[attr-defined]
    return module


@pytest.fixture
def plug() -> Iterator[Any]:
    """Register a feature module in this process's table for one test."""
    added: list[Any] = []

    def register(module: Any) -> None:
        features().manager.register(module, name=module.__name__)
        added.append(module)

    yield register
    for module in added:
        if features().manager.is_registered(module):
            features().manager.unregister(module)


@pytest.fixture(params=["sqlite", "postgres"])
def store_uri(request: Any, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("postgres_uri"))
    return f"sqlite:///{tmp_path / 'flightlog.db'}"


def _meta(store: Any, key: str) -> str | None:
    with store.db.read() as conn:
        row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return None if row is None else str(row[0])


def test_feature_tables_are_created_versioned_and_upgraded(store_uri: str, plug: Any) -> None:
    plug(_feature("demo", [_V1], [_V1], ("demo_items",)))
    store = open_store(store_uri)
    with store.db.write() as conn:  # type: ignore[attr-defined]
        conn.execute("INSERT INTO demo_items(id, label) VALUES(1, 'kept')")
    assert _meta(store, "schema_version:demo") == "1"
    assert _meta(store, "schema_version:registry") is not None  # the built-in registry's tables too
    store.close()

    reopened = open_store(store_uri)  # idempotent: nothing applied twice (CREATE TABLE would fail)
    assert _meta(reopened, "schema_version:demo") == "1"
    reopened.close()

    features().manager.unregister(name="test_feature_demo")
    plug(_feature("demo", [_V1, _V2], [_V1, _V2], ("demo_items",)))  # a newer release of the feature
    upgraded = open_store(store_uri)
    with upgraded.db.read() as conn:  # type: ignore[attr-defined]
        assert conn.execute("SELECT id, label, note FROM demo_items").fetchall() == [(1, "kept", None)]
    assert _meta(upgraded, "schema_version:demo") == "2"
    upgraded.close()


def test_a_broken_feature_migration_is_left_out_and_the_store_opens(
    store_uri: str, plug: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    broken = ["CREATE TABLE broken_a (id INTEGER)", "THIS IS NOT SQL"]
    plug(_feature("broken", [broken], [broken], ("broken_a",)))
    store = open_store(store_uri)
    err = capfd.readouterr().err
    assert "the feature 'broken' (store migrations) was left out" in err
    assert _meta(store, "schema_version:broken") is None
    with store.db.read() as conn:  # type: ignore[attr-defined]
        tables = [
            r[0]
            for r in conn.execute(  # rolled back whole: its first statement left nothing behind
                "SELECT name FROM sqlite_master WHERE type='table'"
                if store_uri.startswith("sqlite")
                else "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchall()
        ]
    assert "broken_a" not in tables and "registry_versions" in tables
    store.close()
