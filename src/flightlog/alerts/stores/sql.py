"""Alerts in a SQL store (the tables of its migration 3): one implementation for the embedded
SQLite store and for PostgreSQL; a backend names only its dialect (``sqlite.py``, ``postgres.py``).

Every transition is one ``UPDATE … WHERE id=? AND state=?`` (a compare-and-set) and the partial
unique index ``alerts_open`` keeps one open episode per identity. That is what lets several
evaluators watch one store (a runner and a server on one FLIGHTLOG_HOME, several servers over
one PostgreSQL): each transition and each notification claim is won by exactly one of them, so
nothing is sent twice.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol

from flightlog.alerts.silences import Silence
from flightlog.alerts.stores.base import CLAIMS, AlertEvent
from flightlog.alerts.types import Alert
from flightlog.timefmt import iso

__all__ = ["SqlAlertStore"]

_COLUMNS = (
    "id, fingerprint, rule, kind, severity, labels, run_id, project, state, value, summary, evidence, "
    "active_since, fired_at, resolved_at, resolved_reason, updated, notified_at, resolved_notified_at, silenced_by"
)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str, allow_nan=True)


def _row(r: Any) -> Alert:
    return Alert(
        id=r[0],
        fingerprint=r[1],
        rule=r[2],
        kind=r[3],
        severity=r[4],
        labels=json.loads(r[5]),
        state=r[8],
        run_id=r[6],
        project=r[7],
        value=r[9],
        summary=r[10],
        evidence=json.loads(r[11]) if r[11] else {},
        active_since=r[12],
        fired_at=r[13],
        resolved_at=r[14],
        resolved_reason=r[15],
        updated=r[16],
        notified_at=r[17],
        resolved_notified_at=r[18],
        silenced_by=r[19],
    )


class _Database(Protocol):
    """The run store's database (SQLite's ``Database``, PostgreSQL's ``PgDatabase``)."""

    def write(self) -> AbstractContextManager[Any]: ...  # one transaction: a connection
    def read(self) -> AbstractContextManager[Any]: ...


def _where(conds: Sequence[str]) -> str:
    return f"WHERE {' AND '.join(conds)}" if conds else ""


class SqlAlertStore(ABC):
    """Statements are written with ``?`` placeholders; a dialect sets the hooks below."""

    #: the driver's placeholder, put where the statements say ``?``
    placeholder: ClassVar[str]
    #: the smaller of two values: ``MIN`` (SQLite) or ``LEAST`` (PostgreSQL)
    least: ClassVar[str]
    #: null-safe equality of ``{column}`` and one parameter
    same: ClassVar[str]

    def __init__(self, db: _Database) -> None:
        self.db = db

    @abstractmethod
    def _unique_violation(self) -> type[Exception]:
        """The driver's error for a row that breaks a unique index (``alerts_open``)."""

    def _sql(self, statement: str) -> str:
        return statement if self.placeholder == "?" else statement.replace("?", self.placeholder)

    def create(self, alert: Alert) -> bool:
        a = alert
        try:
            with self.db.write() as conn:
                conn.execute(
                    self._sql(f"INSERT INTO alerts({_COLUMNS}) VALUES({','.join('?' * 20)})"),
                    (
                        a.id,
                        a.fingerprint,
                        a.rule,
                        a.kind,
                        a.severity,
                        _dumps(a.labels),
                        a.run_id,
                        a.project,
                        a.state,
                        a.value,
                        a.summary,
                        _dumps(a.evidence),
                        a.active_since,
                        a.fired_at,
                        a.resolved_at,
                        a.resolved_reason,
                        a.updated or time.time(),
                        a.notified_at,
                        a.resolved_notified_at,
                        a.silenced_by,
                    ),
                )
        except self._unique_violation():
            return False  # the identity already has an open episode (another evaluator's)
        return True

    def update(self, alert: Alert, expected_state: str) -> bool:
        a = alert
        with self.db.write() as conn:
            cur = conn.execute(
                self._sql(
                    "UPDATE alerts SET state=?, value=?, summary=?, evidence=?, active_since=?, fired_at=?, "
                    "resolved_at=?, resolved_reason=?, run_id=?, silenced_by=?, updated=? WHERE id=? AND state=?"
                ),
                (
                    a.state,
                    a.value,
                    a.summary,
                    _dumps(a.evidence),
                    a.active_since,
                    a.fired_at,
                    a.resolved_at,
                    a.resolved_reason,
                    a.run_id,
                    a.silenced_by,
                    a.updated or time.time(),
                    a.id,
                    expected_state,
                ),
            )
            return cur.rowcount == 1

    def delete(self, alert_id: str, expected_state: str) -> bool:
        with self.db.write() as conn:
            cur = conn.execute(self._sql("DELETE FROM alerts WHERE id=? AND state=?"), (alert_id, expected_state))
            if cur.rowcount:
                conn.execute(self._sql("DELETE FROM alert_events WHERE alert_id=?"), (alert_id,))
            return cur.rowcount == 1

    def _select(self, where: str, args: Sequence[Any]) -> list[Alert]:
        with self.db.read() as conn:
            rows = conn.execute(self._sql(f"SELECT {_COLUMNS} FROM alerts {where}"), list(args)).fetchall()
        return [_row(r) for r in rows]

    def get_open(self, fingerprint: str) -> Alert | None:
        rows = self._select("WHERE fingerprint=? AND state IN ('pending','firing')", (fingerprint,))
        return rows[0] if rows else None

    def has_episode(self, fingerprint: str) -> bool:
        with self.db.read() as conn:
            return (
                conn.execute(self._sql("SELECT 1 FROM alerts WHERE fingerprint=? LIMIT 1"), (fingerprint,)).fetchone()
                is not None
            )

    def open_alerts(self, run_id: str | None = None) -> list[Alert]:
        if run_id is None:
            return self._select("WHERE state IN ('pending','firing')", ())
        return self._select("WHERE state IN ('pending','firing') AND run_id=?", (run_id,))

    def claim(self, alert_id: str, column: str, expected: float | None, value: float) -> bool:
        if column not in CLAIMS:
            raise ValueError(f"not a notification mark: {column}")
        with self.db.write() as conn:
            cur = conn.execute(
                self._sql(f"UPDATE alerts SET {column}=? WHERE id=? AND {self.same.format(column=column)}"),
                (value, alert_id, expected),
            )
            return cur.rowcount == 1

    def add_events(self, events: Sequence[AlertEvent]) -> None:
        if not events:
            return
        with self.db.write() as conn:
            conn.cursor().executemany(
                self._sql("INSERT INTO alert_events(alert_id, time, event, detail) VALUES(?, ?, ?, ?)"),
                [(e.alert_id, e.time, e.event, _dumps(e.detail) if e.detail else None) for e in events],
            )

    def alerts(
        self,
        *,
        state: str | None = None,
        run_id: str | None = None,
        project: str | None = None,
        rule: str | None = None,
        limit: int | None = None,
    ) -> list[Alert]:
        conds: list[str] = []
        args: list[Any] = []
        for column, value in (("state", state), ("run_id", run_id), ("project", project), ("rule", rule)):
            if value is not None:
                conds.append(f"{column}=?")
                args.append(value)
        sql = f"{_where(conds)} ORDER BY COALESCE(fired_at, active_since, updated) DESC, id"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return self._select(sql, args)

    def events(
        self, *, run_id: str | None = None, alert_id: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        conds: list[str] = []
        args: list[Any] = []
        if run_id is not None:
            conds.append("a.run_id=?")
            args.append(run_id)
        if alert_id is not None:
            conds.append("e.alert_id=?")
            args.append(alert_id)
        sql = (
            "SELECT e.alert_id, e.time, e.event, e.detail, a.rule, a.run_id, a.labels FROM alert_events e "
            f"LEFT JOIN alerts a ON a.id = e.alert_id {_where(conds)} ORDER BY e.time DESC, e.id DESC"
        )
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        with self.db.read() as conn:
            rows = conn.execute(self._sql(sql), args).fetchall()
        return [
            {
                "alert_id": r[0],
                "time": iso(r[1]),
                "event": r[2],
                "detail": json.loads(r[3]) if r[3] else {},
                "rule": r[4],
                "run_id": r[5],
                "labels": json.loads(r[6]) if r[6] else {},
            }
            for r in reversed(rows)
        ]

    def add_silence(self, silence: Silence) -> None:
        s = silence
        with self.db.write() as conn:
            conn.execute(
                self._sql(
                    "INSERT INTO alert_silences(id, rule, matchers, starts, ends, created, author, comment) "
                    "VALUES(?, ?, ?, ?, ?, ?, ?, ?)"
                ),
                (s.id, s.rule, _dumps(s.matchers), s.starts, s.ends, s.created, s.author, s.comment),
            )

    def silences(self, *, include_expired: bool = False, now: float | None = None) -> list[Silence]:
        now = time.time() if now is None else now
        sql = "SELECT id, rule, matchers, starts, ends, created, author, comment FROM alert_silences"
        args: list[Any] = []
        if not include_expired:
            sql += " WHERE ends > ?"
            args.append(now)
        with self.db.read() as conn:
            rows = conn.execute(self._sql(sql + " ORDER BY created"), args).fetchall()
        return [Silence(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5], r[6], r[7]) for r in rows]

    def expire_silence(self, silence_id: str, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        with self.db.write() as conn:
            cur = conn.execute(
                self._sql(f"UPDATE alert_silences SET ends={self.least}(ends, ?) WHERE id=?"), (now, silence_id)
            )
            return cur.rowcount == 1
