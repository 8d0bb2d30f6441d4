"""What a store keeps on disk is owner-only under a umask of 022 (issue 18, item 7): the home,
the SQLite database with its -wal and -shm, journals and their .shipped offsets, artifact
blobs and their directories, locally and on a server's side (the http transport)."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flightlog.store.registry import open_store
from tests.helpers import cli, run_script


@pytest.fixture
def umask_022() -> Iterator[None]:
    """The usual umask (world-readable files by default), for this test and the processes it starts."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _too_open(root: Path) -> list[str]:
    found = []
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if path.is_symlink():
            continue
        if mode & 0o077:
            found.append(f"{path.relative_to(root.parent)} {oct(mode)}")
    return found


def test_a_fresh_stores_files_are_owner_only(umask_022: None, home: Path, tmp_path: Path) -> None:
    data = tmp_path / "weights.bin"
    data.write_bytes(b"\x00" * 1000)
    run_script(
        home,
        f"""
        import flightlog
        run = flightlog.init(project="vision", params={{"lr": 0.1}})
        for step in range(5):
            run.log({{"loss": 1.0 / (step + 1)}}, step=step)
        run.log_artifact({str(data)!r}, name="weights")
        print("training line")
        run.finish()
    """,
    )
    cli(home, "run", "--project", "vision", "--", sys.executable, "-c", "print('from the runner')")
    roots = [p for p in (home, tmp_path / "server") if p.exists()]
    made = {p.name for root in roots for p in root.rglob("*")}
    assert "flightlog.db" in made and any(name.startswith("sha256") or len(name) == 62 for name in made), made
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert [problem for root in roots for problem in _too_open(root)] == []


@pytest.mark.embedded_only("the files SQLite makes next to a database while it is open")
def test_the_databases_wal_and_shm_are_owner_only(umask_022: None, home: Path) -> None:
    store = open_store(f"sqlite:///{home / 'flightlog.db'}")
    try:
        store.create_token("0123456789ab", "f" * 64, "reader", None, None)  # type: ignore[attr-defined]
        names = {p.name: stat.S_IMODE(p.stat().st_mode) for p in home.iterdir()}
        assert {"flightlog.db", "flightlog.db-wal", "flightlog.db-shm"} <= set(names), names
        assert all(mode == 0o600 for name, mode in names.items() if name.startswith("flightlog.db")), names
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
    finally:
        store.close()


@pytest.mark.embedded_only("a mode chosen for an existing directory is the user's")
def test_an_existing_home_keeps_its_mode(umask_022: None, home: Path) -> None:
    home.mkdir(mode=0o750)
    os.chmod(home, 0o750)
    run_script(
        home,
        """
        import flightlog
        flightlog.init(project="p").finish()
    """,
    )
    assert stat.S_IMODE(home.stat().st_mode) == 0o750
    assert _too_open(home / "journal") == [] if (home / "journal").exists() else True
    assert stat.S_IMODE((home / "flightlog.db").stat().st_mode) == 0o600
