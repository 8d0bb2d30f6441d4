"""The SQL store's reads of one run's details: notes, runtime context, artifacts, evidence.

Apart from ``events.py`` because these are small per-run records read whole (one row per note,
artifact or piece of evidence), while events are the run's long series and logs, read in chunks,
filtered, and bounded by the query deadline. The artifact digests (``referenced_digests``,
``kept_digests``) are here too: they are what retention (``gc``) keeps.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from flightlog.models import Artifact, Note
from flightlog.store.sql.core import SqlCore

__all__ = ["SqlDetails"]


class SqlDetails(SqlCore):
    def notes(self, run_id: str) -> list[Note]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT id, run_id, time, author, text FROM notes WHERE run_id=? ORDER BY time, id", (run_id,)
            ).fetchall()
        return [Note(*r) for r in rows]

    def context(self, run_id: str) -> dict[str, Any]:
        """The runtime context; several writers (runner, ranks, the SDK inside a runner's run)
        are merged, the run's owner first (the process that sets its status: ``flightlog run``,
        or a plain ``init``), then by writer id. Why the owner: writer ids are random, and a
        script that calls ``flightlog.init()`` under ``flightlog run`` showed the runner's
        command line or its own ``sys.argv`` as the run's command by the toss of its id
        (issue 29)."""
        merged: dict[str, Any] = {}
        with self.db.read() as conn:
            for (data,) in conn.execute(
                "SELECT c.data FROM context c LEFT JOIN run_writers w ON w.run_id = c.run_id AND w.writer = c.writer "
                f"WHERE c.run_id=? ORDER BY COALESCE(w.owner, 0) DESC, c.writer{self.dialect.collate}",
                (run_id,),
            ):
                for key, value in json.loads(data).items():
                    merged.setdefault(key, value)
        return merged

    def artifacts(self, run_id: str) -> list[Artifact]:
        return self._artifacts("run_id=?", [run_id])

    def artifacts_by_digest(self, sha256s: Sequence[str]) -> list[Artifact]:
        if not sha256s:
            return []
        return self._artifacts(*self.dialect.any_of("sha256", list(sha256s)))

    def _artifacts(self, where: str, args: list[Any]) -> list[Artifact]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT id, run_id, role, kind, path, source, size, sha256, uri, step, time, attempt, meta "
                f"FROM artifacts WHERE {where} ORDER BY time, id",
                args,
            ).fetchall()
        return [
            Artifact(
                id=r[0],
                run_id=r[1],
                role=r[2],
                kind=r[3],
                path=r[4],
                source=r[5],
                size=r[6],
                sha256=r[7],
                uri=r[8],
                step=r[9],
                time=r[10],
                attempt=r[11],
                meta=json.loads(r[12]) if r[12] else None,
            )
            for r in rows
        ]

    def referenced_digests(self) -> set[str]:
        with self.db.read() as conn:
            return {r[0] for r in conn.execute("SELECT DISTINCT sha256 FROM artifacts WHERE uri LIKE 'cas:%'")}

    def kept_digests(self) -> list[tuple[str, str]]:
        """(run id, sha256) of every artifact whose content the store keeps (for gc)."""
        with self.db.read() as conn:
            return [(r[0], r[1]) for r in conn.execute("SELECT run_id, sha256 FROM artifacts WHERE uri LIKE 'cas:%'")]

    def evidence(self, run_id: str, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        sql, args = "SELECT kind, name, time, data FROM evidence WHERE run_id=?", [run_id]
        for column, value in (("kind", kind), ("name", name)):
            if value is not None:
                sql += f" AND {column}=?"
                args.append(value)
        with self.db.read() as conn:
            rows = conn.execute(sql + " ORDER BY time, id", args).fetchall()
        return [{"kind": r[0], "name": r[1], "time": r[2], "data": json.loads(r[3])} for r in rows]
