"""The server's access bookkeeping in the embedded store: which projects hold which blobs, and
the web UI's sessions. Part of :class:`~flightlog.store.sqlite.store.SqliteStore`.

Why blob grants: content is addressed by its SHA-256, which is not a secret (it is in every
artifact listing). A token limited to a project may only see, or point an artifact at, content
that its project has shown it holds: by uploading it (the server checks the hash), or through
an artifact of the project that points at uploaded content.
"""

from __future__ import annotations

import time
from typing import Any

from flightlog.store.sqlite.connection import Database

__all__ = ["AccessRecords"]

_TOKEN_COLUMNS = ("id", "role", "project", "name", "created", "last_used", "revoked")


class AccessRecords:
    db: Database

    # ── blobs by project ──────────────────────────────────────────────────────
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
            conn.execute("INSERT OR IGNORE INTO blob_projects(sha256, project) VALUES(?, ?)", (sha256, project))

    # ── web UI sessions ───────────────────────────────────────────────────────
    def create_session(self, digest: str, token_id: str, expires: float) -> None:
        """Keep a session (by the SHA-256 of its id); expired sessions are swept on the way."""
        now = time.time()
        with self.db.write() as conn:
            conn.execute("DELETE FROM sessions WHERE expires < ?", (now,))
            conn.execute(
                "INSERT INTO sessions(hash, token_id, created, expires) VALUES(?, ?, ?, ?)", (digest, token_id, now, expires)
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
        return {**dict(zip(_TOKEN_COLUMNS, row[:-1], strict=True)), "expires": row[-1]}

    def delete_session(self, digest: str) -> bool:
        with self.db.write() as conn:
            return conn.execute("DELETE FROM sessions WHERE hash=?", (digest,)).rowcount > 0
