"""A throw-away PostgreSQL server for tests and benchmarks, from the system's binaries.

    from flightlog.store.postgres.testing import TemporaryPostgres

    with TemporaryPostgres() as pg:
        uri = pg.create_database("t1")          # postgresql://postgres@127.0.0.1:PORT/t1
        ...

It runs ``initdb`` into a fresh temporary directory and starts ``postgres`` on a free loopback
port with durability off (fsync, synchronous commit: a test database is thrown away). The
binaries come from ``PATH`` or ``/usr/lib/postgresql/*/bin`` (Debian's ``postgresql``
package; ``scripts/setup-postgres.sh`` installs it). PostgreSQL refuses to run as root, so
under root the server runs as the unprivileged ``nobody`` user on a directory it owns.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

__all__ = ["TemporaryPostgres", "find_binaries", "PostgresNotInstalled"]


class PostgresNotInstalled(RuntimeError):
    pass


def find_binaries() -> Path:
    """The directory holding ``initdb`` and ``postgres``."""
    found = shutil.which("initdb")
    if found and shutil.which("postgres"):
        return Path(found).resolve().parent
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "postgres").exists():
            return Path(candidate)
    raise PostgresNotInstalled(
        "no PostgreSQL server binaries (initdb, postgres) on PATH or in /usr/lib/postgresql/*/bin: "
        "run scripts/setup-postgres.sh (apt-get install postgresql) or install PostgreSQL 13 or newer"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TemporaryPostgres:
    def __init__(self, *, port: int | None = None, max_connections: int = 200) -> None:
        self.bin = find_binaries()
        self.port = port or _free_port()
        self.max_connections = max_connections
        self.root = Path(tempfile.mkdtemp(prefix="flightlog-pg-"))
        self.data = self.root / "data"
        self.process: subprocess.Popen[bytes] | None = None
        self._as_user: list[str] = []
        if os.geteuid() == 0:
            import pwd

            user = pwd.getpwnam("nobody")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as_user = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--"]

    # ── lifecycle ───────────────────────────────────────────────────────────
    def start(self) -> TemporaryPostgres:
        if not self.data.exists():
            subprocess.run(
                [
                    *self._as_user,
                    str(self.bin / "initdb"),
                    "-D",
                    str(self.data),
                    "-A",
                    "trust",
                    "-U",
                    "postgres",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                cwd=self.root,
            )
        log = open(self.root / "postgres.log", "ab")  # noqa: SIM115 - held for the server's lifetime
        self.process = subprocess.Popen(
            [
                *self._as_user,
                str(self.bin / "postgres"),
                "-D",
                str(self.data),
                "-p",
                str(self.port),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                f"unix_socket_directories={self.root}",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                f"max_connections={self.max_connections}",
                "-c",
                "shared_buffers=64MB",
            ],
            stdout=log,
            stderr=log,
            cwd=self.root,
        )
        log.close()
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 60.0) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.process.returncode}: {self.log_tail()}")
            try:
                with psycopg.connect(self.uri("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"postgres did not accept connections in {timeout:.0f}s: {self.log_tail()}"
                    ) from None
                time.sleep(0.05)

    def stop(self) -> None:
        """Fast shutdown (SIGINT): sessions are ended, the server exits."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(2)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> TemporaryPostgres:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.cleanup()

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join((self.root / "postgres.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # ── databases ───────────────────────────────────────────────────────────
    def uri(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str, template: str | None = None) -> str:
        """A new empty (or copied from ``template``) database; returns its URI."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.uri("postgres"), autocommit=True) as conn:
            statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
            if template:
                # FILE_COPY (PostgreSQL 15+) copies a small database several times faster than WAL_LOG
                strategy = " STRATEGY FILE_COPY" if conn.info.server_version >= 150000 else ""
                statement = sql.SQL("CREATE DATABASE {} TEMPLATE {}" + strategy).format(
                    sql.Identifier(name), sql.Identifier(template)
                )
            conn.execute(statement)
        return self.uri(name)

    def drop_database(self, name: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.uri("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
