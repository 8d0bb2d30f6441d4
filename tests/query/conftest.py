"""Fixtures of the query tests; helpers live in ``query_store``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

import pytest
from query_store import create_store


@pytest.fixture
def store(tmp_path: Path) -> Iterable[sqlite3.Connection]:
    conn = create_store(tmp_path / "flightlog.db")
    yield conn
    conn.close()
