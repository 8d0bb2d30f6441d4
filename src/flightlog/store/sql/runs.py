"""The SQL store's reads of runs: resolve an id, get a run, search by filter, projects, sizes.

Apart from the other reads because these answer "which runs": they read the ``runs`` table and
hydrate each row with its params, tags, metric summaries and counters, while ``details.py`` and
``events.py`` read what one run, already known, holds.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any

from flightlog.errors import AmbiguousId, InvalidInput, NotFound
from flightlog.models import KIND_TAG, SERVING_KIND, RunInfo
from flightlog.schema.values import param_value
from flightlog.statuses import ACTIVE_STATUSES, FAILED_STATUSES, sql_list
from flightlog.store.sql.core import SqlCore
from flightlog.store.sql.rows import RUN_COLUMNS, metric_summary, run_row

__all__ = ["SqlRuns"]

_RUN_REF = re.compile(r"[0-9A-Za-z_.-]+")  # compiled at import: a forked runner resolves its run with it


class SqlRuns(SqlCore):
    def resolve(self, ref: str, project: str | None = None) -> str:
        """A run id or unique prefix; with ``project``, among that project's runs only (a run
        of another project is then not found, exactly as one that does not exist)."""
        ref = ref.strip()
        if not ref or not _RUN_REF.fullmatch(ref):
            raise InvalidInput(f"{ref!r} is not a run id: use an id or a unique prefix (hex characters)")
        where, args = self.dialect.prefix("id", ref)
        if project is not None:
            where, args = f"{where} AND project=?", [*args, project]
        with self.db.read() as conn:
            rows = conn.execute(
                f"SELECT id FROM runs WHERE {where} ORDER BY id{self.dialect.collate} LIMIT 6", args
            ).fetchall()
        if not rows:
            within = "" if project is None else f" in project {project!r}"
            raise NotFound(f"no run with id or prefix {ref!r}{within}: list runs with `flightlog runs ls`")
        exact = [r[0] for r in rows if r[0] == ref]
        if exact:
            return str(exact[0])
        if len(rows) > 1:
            shown = ", ".join(r[0][:12] for r in rows[:5])
            raise AmbiguousId(
                f"run prefix {ref!r} matches several runs ({shown}{', …' if len(rows) > 5 else ''}): "
                "type more characters",
                details={"matches": [r[0] for r in rows]},
            )
        return str(rows[0][0])

    def get_run(self, ref: str) -> RunInfo:
        run_id = self.resolve(ref)
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE id=?", (run_id,)).fetchone()
            return self._hydrate(conn, [row])[0]

    def search_runs(
        self,
        *,
        project: str | None = None,
        filter: str | None = None,
        order_by: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[RunInfo]:
        from flightlog.query import compile_runs_query  # cost: imported by a listing, not by every store's opening

        sql, args = compile_runs_query(
            project=project,
            filter=filter,
            order_by=order_by,
            limit=limit,
            offset=offset,
            now=time.time(),
            placeholder=self.dialect.placeholder,
        )
        return self.query_runs(sql, args)

    def query_runs(self, sql: str, args: Sequence[Any]) -> list[RunInfo]:
        """The runs a compiled ``SELECT r.* FROM runs r …`` (the filter compiler's output) selects."""
        sql = sql.replace("SELECT r.*", "SELECT " + ", ".join(f"r.{c.strip()}" for c in RUN_COLUMNS.split(",")), 1)
        with self.db.budgeted_read(self._deadline()) as conn:
            rows = self.dialect.filter_cursor(conn).execute(sql, list(args)).fetchall()
        with self.db.read() as conn:
            return self._hydrate(conn, rows)

    def _hydrate(self, conn: Any, rows: list[Any]) -> list[RunInfo]:
        """Runs with their params, tags, metric summaries and counters, each in key order.

        Ordered by (run, key), SQLite reads the rows in its primary key's order and sorts
        nothing (sorting by key alone cost a fifth of a 1,000-run search)."""
        runs = [run_row(r) for r in rows]
        if not runs:
            return runs
        by_id = {r.id: r for r in runs}
        where, ids = self.dialect.any_of("run_id", list(by_id))
        c = self.dialect.collate
        for run_id, key, value, kind in conn.execute(
            f"SELECT run_id, key, value, kind FROM params WHERE {where} ORDER BY run_id{c}, key{c}", ids
        ):
            by_id[run_id].params[key] = param_value(value, kind)
        for run_id, key, value in conn.execute(
            f"SELECT run_id, key, value FROM tags WHERE {where} ORDER BY run_id{c}, key{c}", ids
        ):
            by_id[run_id].tags[key] = value
        for row in conn.execute(
            f"SELECT run_id, name, count, nonfinite, min, max, last_value, last_step, first_step, "
            f"first_time, last_time FROM metric_series WHERE {where} ORDER BY run_id{c}, name{c}",
            ids,
        ):
            by_id[row[0]].metrics[row[1]] = metric_summary(row[1:])
        for run_id, name, value in conn.execute(
            f"SELECT run_id, name, value FROM counters WHERE {where} ORDER BY run_id{c}, name{c}", ids
        ):
            by_id[run_id].counters[name] = value
        return runs

    def projects(self) -> list[dict[str, Any]]:
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT project, COUNT(*), MAX(created), "
                "SUM(CASE WHEN status='running' THEN 1 ELSE 0 END), "
                f"SUM(CASE WHEN status IN {sql_list(FAILED_STATUSES)} THEN 1 ELSE 0 END) "
                f"FROM runs GROUP BY project ORDER BY project{self.dialect.collate}"
            ).fetchall()
            # the serving replicas among them (models.KIND_TAG): the runs table counts them apart
            serving = dict(
                conn.execute(
                    "SELECT r.project, COUNT(*) FROM tags t JOIN runs r ON r.id = t.run_id "
                    "WHERE t.key = ? AND t.value = ? GROUP BY r.project",
                    (KIND_TAG, SERVING_KIND),
                ).fetchall()
            )
        return [
            {
                "name": r[0],
                "runs": r[1],
                "serving_runs": int(serving.get(r[0], 0)),
                "last_created": r[2],
                "running": int(r[3]),
                "failed": int(r[4]),
            }
            for r in rows
        ]

    def run_sizes(self) -> list[tuple[str, float, int]]:
        """(run id, end time, bytes it holds in the store and artifacts), oldest first, finished runs only."""
        with self.db.read() as conn:
            rows = conn.execute(
                f"""
                SELECT r.id, COALESCE(r.ended, r.updated, r.created),
                  COALESCE((SELECT SUM(LENGTH(steps)+LENGTH(times)+LENGTH(vals)) FROM metric_chunks m WHERE m.run_id=r.id),0)
                + COALESCE((SELECT SUM(LENGTH(data)) FROM log_chunks l WHERE l.run_id=r.id),0)
                + COALESCE((SELECT SUM(LENGTH(data)) FROM resource_samples s WHERE s.run_id=r.id),0)
                + COALESCE((SELECT SUM(size) FROM artifacts a WHERE a.run_id=r.id AND a.uri LIKE 'cas:%'),0)
                FROM runs r WHERE r.status NOT IN {sql_list(ACTIVE_STATUSES)}
                ORDER BY 2
                """
            ).fetchall()
        return [(r[0], r[1], int(r[2])) for r in rows]

    def children(self, run_id: str) -> list[str]:
        with self.db.read() as conn:
            return [r[0] for r in conn.execute("SELECT id FROM runs WHERE parent_id=? ORDER BY created, id", (run_id,))]
