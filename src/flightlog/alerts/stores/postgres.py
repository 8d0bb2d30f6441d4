"""Alerts in the PostgreSQL store (its migration 3), on the store's connection pool.

As in SQLite, every transition is one ``UPDATE … WHERE id=%s AND state=%s`` and the partial
unique index ``alerts_open`` keeps one open episode per identity. That is what lets several
servers evaluate the same rules over one PostgreSQL: each transition and each notification
claim is won by exactly one of them (row-level compare-and-set), so nothing is sent twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from flightlog.alerts.silences import Silence
from flightlog.alerts.stores.base import CLAIMS, AlertEvent
from flightlog.alerts.stores.sqlite import _COLUMNS, _dumps, _row
from flightlog.alerts.types import Alert
from flightlog.store.postgres.connection import PgDatabase
from flightlog.timefmt import iso

__all__ = ["PostgresAlertStore"]


class PostgresAlertStore:
    def __init__(self, db: PgDatabase) -> None:
        self.db = db

    def create(self, alert: Alert) -> bool:
        import psycopg

        a = alert
        try:
            with self.db.write() as conn:
                conn.execute(
                    f"INSERT INTO alerts({_COLUMNS}) VALUES({','.join(['%s'] * 20)})",
                    (a.id, a.fingerprint, a.rule, a.kind, a.severity, _dumps(a.labels), a.run_id, a.project, a.state,
                     a.value, a.summary, _dumps(a.evidence), a.active_since, a.fired_at, a.resolved_at,
                     a.resolved_reason, a.updated or time.time(), a.notified_at, a.resolved_notified_at, a.silenced_by),
                )
        except psycopg.errors.UniqueViolation:
            return False  # the identity already has an open episode (another evaluator's)
        return True

    def update(self, alert: Alert, expected_state: str) -> bool:
        a = alert
        with self.db.write() as conn:
            cur = conn.execute(
                "UPDATE alerts SET state=%s, value=%s, summary=%s, evidence=%s, active_since=%s, fired_at=%s, "
                "resolved_at=%s, resolved_reason=%s, run_id=%s, silenced_by=%s, updated=%s WHERE id=%s AND state=%s",
                (a.state, a.value, a.summary, _dumps(a.evidence), a.active_since, a.fired_at, a.resolved_at,
                 a.resolved_reason, a.run_id, a.silenced_by, a.updated or time.time(), a.id, expected_state),
            )
            return cur.rowcount == 1

    def delete(self, alert_id: str, expected_state: str) -> bool:
        with self.db.write() as conn:
            cur = conn.execute("DELETE FROM alerts WHERE id=%s AND state=%s", (alert_id, expected_state))
            if cur.rowcount:
                conn.execute("DELETE FROM alert_events WHERE alert_id=%s", (alert_id,))
            return cur.rowcount == 1

    def _select(self, where: str, args: Sequence[Any]) -> list[Alert]:
        with self.db.read() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM alerts {where}", list(args)).fetchall()
        return [_row(r) for r in rows]

    def get_open(self, fingerprint: str) -> Alert | None:
        rows = self._select("WHERE fingerprint=%s AND state IN ('pending','firing')", (fingerprint,))
        return rows[0] if rows else None

    def has_episode(self, fingerprint: str) -> bool:
        with self.db.read() as conn:
            return conn.execute("SELECT 1 FROM alerts WHERE fingerprint=%s LIMIT 1", (fingerprint,)).fetchone() is not None

    def open_alerts(self, run_id: str | None = None) -> list[Alert]:
        if run_id is None:
            return self._select("WHERE state IN ('pending','firing')", ())
        return self._select("WHERE state IN ('pending','firing') AND run_id=%s", (run_id,))

    def claim(self, alert_id: str, column: str, expected: float | None, value: float) -> bool:
        if column not in CLAIMS:
            raise ValueError(f"not a notification mark: {column}")
        with self.db.write() as conn:
            cur = conn.execute(
                f"UPDATE alerts SET {column}=%s WHERE id=%s AND {column} IS NOT DISTINCT FROM %s::double precision",
                (value, alert_id, expected))
            return cur.rowcount == 1

    def add_events(self, events: Sequence[AlertEvent]) -> None:
        if not events:
            return
        with self.db.write() as conn:
            conn.cursor().executemany(
                "INSERT INTO alert_events(alert_id, time, event, detail) VALUES(%s, %s, %s, %s)",
                [(e.alert_id, e.time, e.event, _dumps(e.detail) if e.detail else None) for e in events],
            )

    def alerts(self, *, state: str | None = None, run_id: str | None = None, project: str | None = None,
               rule: str | None = None, limit: int | None = None) -> list[Alert]:
        conds: list[str] = ["TRUE"]
        args: list[Any] = []
        for column, value in (("state", state), ("run_id", run_id), ("project", project), ("rule", rule)):
            if value is not None:
                conds.append(f"{column}=%s")
                args.append(value)
        sql = f"WHERE {' AND '.join(conds)} ORDER BY COALESCE(fired_at, active_since, updated) DESC, id"
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        return self._select(sql, args)

    def events(self, *, run_id: str | None = None, alert_id: str | None = None,
               limit: int | None = None) -> list[dict[str, Any]]:
        conds = ["TRUE"]
        args: list[Any] = []
        if run_id is not None:
            conds.append("a.run_id=%s")
            args.append(run_id)
        if alert_id is not None:
            conds.append("e.alert_id=%s")
            args.append(alert_id)
        sql = ("SELECT e.alert_id, e.time, e.event, e.detail, a.rule, a.run_id, a.labels FROM alert_events e "
               f"LEFT JOIN alerts a ON a.id = e.alert_id WHERE {' AND '.join(conds)} ORDER BY e.time DESC, e.id DESC")
        if limit is not None:
            sql += " LIMIT %s"
            args.append(limit)
        with self.db.read() as conn:
            rows = conn.execute(sql, args).fetchall()
        return [
            {"alert_id": r[0], "time": iso(r[1]), "event": r[2], "detail": json.loads(r[3]) if r[3] else {},
             "rule": r[4], "run_id": r[5], "labels": json.loads(r[6]) if r[6] else {}}
            for r in reversed(rows)
        ]

    def add_silence(self, silence: Silence) -> None:
        s = silence
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO alert_silences(id, rule, matchers, starts, ends, created, author, comment) "
                "VALUES(%s, %s, %s, %s, %s, %s, %s, %s)",
                (s.id, s.rule, _dumps(s.matchers), s.starts, s.ends, s.created, s.author, s.comment),
            )

    def silences(self, *, include_expired: bool = False, now: float | None = None) -> list[Silence]:
        now = time.time() if now is None else now
        sql = "SELECT id, rule, matchers, starts, ends, created, author, comment FROM alert_silences"
        args: list[Any] = []
        if not include_expired:
            sql += " WHERE ends > %s"
            args.append(now)
        with self.db.read() as conn:
            rows = conn.execute(sql + " ORDER BY created", args).fetchall()
        return [Silence(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5], r[6], r[7]) for r in rows]

    def expire_silence(self, silence_id: str, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        with self.db.write() as conn:
            cur = conn.execute("UPDATE alert_silences SET ends=LEAST(ends, %s) WHERE id=%s", (now, silence_id))
            return cur.rowcount == 1
