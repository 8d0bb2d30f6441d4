"""What the server's access checks read and keep in the SQL store: which project a run or a blob
belongs to, API tokens, web UI sessions, and the shared secrets replicas sign with.

Apart from the run reads because none of it is a run's data: it is the server's authority over
who may see what, kept in the store so that every replica of a server agrees (a token revoked
through one is revoked for all; a cursor one signs, another verifies).

Why blob grants (``has_digest``, ``grant_blob``): content is addressed by its SHA-256, which is
not a secret (it is in every artifact listing). A token limited to a project may only see, or
point an artifact at, content that its project has shown it holds: by uploading it (the server
checks the hash), or through an artifact of the project that points at uploaded content.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any

from flightlog.store.sql.core import SqlCore, parts

__all__ = ["SqlAccess"]

_TOKEN_COLUMNS = ("id", "role", "project", "name", "created", "last_used", "revoked")


class SqlAccess(SqlCore):
    def __init__(self) -> None:
        super().__init__()
        self._secrets: dict[str, bytes] = {}
        self.auth_changes = 0  # tokens revoked through this store object (server/auth.py's cache)

    # ── runs by project (a token limited to a project sees its runs only) ──────
    def run_projects(self, run_ids: Sequence[str]) -> dict[str, str]:
        """The project of each existing run among ``run_ids``."""
        out: dict[str, str] = {}
        with self.db.read() as conn:
            for part in parts(list(dict.fromkeys(run_ids))):
                where, args = self.dialect.any_of("id", part)
                out.update(conn.execute(f"SELECT id, project FROM runs WHERE {where}", args).fetchall())
        return out

    # ── blobs by project (see the module doc) ────────────────────────────────
    def has_digest(self, sha256: str, project: str | None = None) -> bool:
        """Whether content with this digest is recorded (in ``project``, when given: an artifact
        of the project whose content is that uploaded blob, or an upload made for the project)."""
        with self.db.read() as conn:
            if project is None:
                return conn.execute("SELECT 1 FROM artifacts WHERE sha256=? LIMIT 1", (sha256,)).fetchone() is not None
            if conn.execute("SELECT 1 FROM blob_projects WHERE sha256=? AND project=?", (sha256, project)).fetchone():
                return True
            row = conn.execute(
                "SELECT 1 FROM artifacts a JOIN runs r ON r.id = a.run_id "
                "WHERE a.sha256=? AND a.uri=? AND r.project=? LIMIT 1",
                (sha256, f"cas:sha256/{sha256}", project),
            ).fetchone()
        return row is not None

    def grant_blob(self, sha256: str, project: str) -> None:
        """Record that ``project`` holds this content (its token uploaded it, hash checked)."""
        with self.db.write() as conn:
            conn.execute(
                self.dialect.or_ignore("INSERT INTO blob_projects(sha256, project) VALUES(?, ?)"), (sha256, project)
            )

    # ── web UI sessions, shared secrets ───────────────────────────────────────
    def create_session(self, digest: str, token_id: str, expires: float) -> None:
        """Keep a web UI session (by the SHA-256 of its id); expired sessions are swept on the way."""
        now = time.time()
        with self.db.write() as conn:
            conn.execute("DELETE FROM sessions WHERE expires < ?", (now,))
            conn.execute(
                "INSERT INTO sessions(hash, token_id, created, expires) VALUES(?, ?, ?, ?)",
                (digest, token_id, now, expires),
            )

    def session_by_hash(self, digest: str) -> dict[str, Any] | None:
        """The token behind a live session (its row, plus the session's ``expires``), or None."""
        with self.db.read() as conn:
            row = conn.execute(
                f"SELECT {', '.join('t.' + c for c in _TOKEN_COLUMNS)}, s.expires FROM sessions s "
                "JOIN tokens t ON t.id = s.token_id WHERE s.hash=?",
                (digest,),
            ).fetchone()
        if row is None:
            return None
        return {**_token_row(row[:-1]), "expires": row[-1]}

    def delete_session(self, digest: str) -> bool:
        with self.db.write() as conn:
            return int(conn.execute("DELETE FROM sessions WHERE hash=?", (digest,)).rowcount) > 0

    def shared_secret(self, name: str) -> bytes:
        """32 random bytes kept in this store under ``name``, made on first use: every process
        that opens the store (server replicas) gets the same key, so what one signs (pagination
        cursors) another verifies. Never shown; a new store means new keys."""
        cached = self._secrets.get(name)
        if cached is not None:
            return cached
        key = f"secret:{name}"
        with self.db.read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        if row is None:
            with self.db.write() as conn:  # the first replica to get here makes it; the others keep theirs unused
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO NOTHING",
                    (key, secrets.token_hex(32)),
                )
                row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        self._secrets[name] = value = bytes.fromhex(str(row[0]))
        return value

    # ── API tokens ────────────────────────────────────────────────────────────
    def create_token(self, token_id: str, digest: str, role: str, project: str | None, name: str | None) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO tokens(id, hash, role, project, name, created) VALUES(?, ?, ?, ?, ?, ?)",
                (token_id, digest, role, project, name, time.time()),
            )

    def token_by_hash(self, digest: str) -> dict[str, Any] | None:
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {', '.join(_TOKEN_COLUMNS)} FROM tokens WHERE hash=?", (digest,)).fetchone()
        return None if row is None else _token_row(row)

    def tokens(self) -> list[dict[str, Any]]:
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {', '.join(_TOKEN_COLUMNS)} FROM tokens ORDER BY created, id").fetchall()
        return [_token_row(r) for r in rows]

    def revoke_token(self, token_id: str) -> bool:
        """Revoke a token; False when no token has that id (revoking twice is fine)."""
        with self.db.write() as conn:
            cur = conn.execute("UPDATE tokens SET revoked=COALESCE(revoked, ?) WHERE id=?", (time.time(), token_id))
            found = int(cur.rowcount) > 0
        self.auth_changes += 1  # a server's remembered token rows are stale (server/auth.py)
        return found

    def touch_token(self, token_id: str, when: float) -> None:
        with self.db.write() as conn:
            conn.execute("UPDATE tokens SET last_used=? WHERE id=?", (when, token_id))


def _token_row(row: Any) -> dict[str, Any]:
    return dict(zip(_TOKEN_COLUMNS, row, strict=True))
