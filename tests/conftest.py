"""Fixtures shared by every test package: a fresh FLIGHTLOG_HOME, and helpers to run real
processes (scripts, the CLI) against it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

FLIGHTLOG_ENV = [name for name in os.environ if name.startswith("FLIGHTLOG_")]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty FLIGHTLOG_HOME for this test, with every other FLIGHTLOG_ variable cleared."""
    for name in FLIGHTLOG_ENV:
        monkeypatch.delenv(name, raising=False)
    h = tmp_path / "home"
    monkeypatch.setenv("FLIGHTLOG_HOME", str(h))
    monkeypatch.chdir(tmp_path)
    yield h
