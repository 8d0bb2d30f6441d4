"""``HttpStore``: the store protocol over a flightlog server's REST API.

``Client`` opens it when ``FLIGHTLOG_URL`` is set (the registry maps ``http``/``https`` to it),
so the CLI, diagnosis and scripts read through the API with no other change. Listings page
through the server's cursors; metric histories come as binary columns (msgpack), exact to
the bit; errors are the server's, rebuilt into the same exception classes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import msgspec
import numpy as np

from flightlog.errors import Conflict, InvalidInput, StoreUnavailable
from flightlog.models import (
    Artifact,
    LogEvent,
    LogQuery,
    MetricHistory,
    MetricSummary,
    Note,
    RankInfo,
    RunInfo,
    StageSummary,
)
from flightlog.redaction import REDACTED_HEADER, REDACTION_VERSION
from flightlog.store.base import IngestResult
from flightlog.transport import decode
from flightlog.transport.artifacts import RemoteArtifactStore
from flightlog.transport.connection import Connection, segment
from flightlog.transport.sse import parse_events
from flightlog.transport.wire import MAX_BATCH_BYTES, MEDIA_TYPE, encode_batches

__all__ = ["HttpStore"]

PAGE = 1000  # runs per listing request
LOG_PAGE = 5000  # events per log request
_msgpack = msgspec.msgpack.Decoder()
_STREAM_TIMEOUT = httpx.Timeout(60.0, connect=5.0)  # the server sends a keep-alive comment every 15 s


def _runs_path(run_id: str, *rest: str) -> str:
    return "/runs/" + "/".join([segment(run_id), *rest])


class HttpStore:
    """A :class:`~flightlog.store.base.Store` backed by ``flightlog server`` at ``url``."""

    backend = "http"

    def __init__(
        self, url: str, *, token: str | None = None, home: Path | None = None, close_at_exit: bool = True
    ) -> None:
        if token is None or home is None:
            from flightlog.config import Settings

            settings = Settings.from_env()
            token = settings.token if token is None else token
            home = settings.home if home is None else home
        self.url = url.rstrip("/")
        self.http = Connection(self.url, token, close_at_exit=close_at_exit)
        self.home = home
        self.artifact_store = RemoteArtifactStore(home / "artifacts", self.http)
        self.max_batch_bytes = MAX_BATCH_BYTES

    def __repr__(self) -> str:
        return f"<HttpStore {self.url}>"

    def close(self) -> None:
        self.http.close()

    # ── writes ──────────────────────────────────────────────────────────────
    def ingest(self, records: Sequence[dict[str, Any]]) -> IngestResult:
        """Ship records in order, in bounded gzip batches; artifact blobs go up first."""
        result = IngestResult()
        if not records:
            return result
        result.skipped.extend(self.artifact_store.upload_referenced(records))
        todo = list(records)
        while todo:
            count, body = encode_batches(todo, self.max_batch_bytes)[0]
            response = self.http.request(
                "POST",
                "/ingest",
                content=body,
                retries=0,
                ok=(413,),
                # every record this store ships was redacted where it was formed (flightlog.redaction)
                headers={"Content-Type": MEDIA_TYPE, "Content-Encoding": "gzip", REDACTED_HEADER: REDACTION_VERSION},
            )
            if response.status_code == 413:
                if count == 1 or self.max_batch_bytes <= 64 << 10:
                    raise self.http.error(response)
                self.max_batch_bytes //= 2  # the server takes less than we thought: cut smaller
                continue
            doc = response.json()
            result.applied += int(doc.get("applied", 0))
            result.duplicates += int(doc.get("duplicates", 0))
            result.skipped.extend(doc.get("skipped") or [])
            todo = todo[count:]
        return result

    def update_run(self, run_id: str, **fields: Any) -> None:
        self.http.request("PATCH", _runs_path(run_id), json=fields)

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        deleted = 0
        for run_id in run_ids:
            deleted += int(self.http.json("DELETE", _runs_path(run_id)).get("deleted", 0))
        return deleted

    def claim_attempt(self, run_id: str, seen: int, *, host: str, pid: int, started: float) -> int | None:
        """The server's compare-and-set (``POST /runs/{run}/attempts``): 409 is another process's claim."""
        try:
            doc = self.http.json(
                "POST",
                _runs_path(run_id, "attempts"),
                json={"seen": seen, "host": host, "pid": pid, "started": started},
            )
        except Conflict:
            return None
        return int(doc["attempt"])

    def add_note(self, run_id: str, text: str, author: str | None = None) -> Note:
        return decode.note_from_dict(
            self.http.json("POST", _runs_path(run_id, "notes"), json={"text": text, "author": author})
        )

    # ── runs ────────────────────────────────────────────────────────────────
    def resolve(self, ref: str) -> str:
        """The server resolves ids and prefixes on every run route (and says 404 or 409 there),
        so a reference goes as it is: no round trip, no copy of the run fetched to learn its id."""
        if not ref.strip():
            raise InvalidInput(f"{ref!r} is not a run id: use an id or a unique prefix (hex characters)")
        return ref.strip()

    def get_run(self, ref: str) -> RunInfo:
        return decode.run_from_dict(self.http.json("GET", _runs_path(self.resolve(ref))))

    def search_runs(
        self,
        *,
        project: str | None = None,
        filter: str | None = None,
        order_by: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[RunInfo]:
        runs: list[RunInfo] = []
        params: dict[str, Any] = {"detail": "true"}
        for name, value in (("project", project), ("filter", filter), ("order_by", order_by)):
            if value is not None:
                params[name] = value
        if offset:
            params["offset"] = offset
        while True:
            want = PAGE if limit is None else min(PAGE, limit - len(runs))
            if want <= 0:
                return runs
            page = self.http.json("GET", "/runs", params={**params, "limit": want})
            runs.extend(decode.run_from_dict(r) for r in page["runs"])
            if not page.get("next_cursor"):
                return runs
            params = {"detail": "true", "cursor": page["next_cursor"]}

    def projects(self) -> list[dict[str, Any]]:
        return [decode.project_from_dict(p) for p in self.http.json("GET", "/projects")["projects"]]

    def children(self, run_id: str) -> list[str]:
        return list(self.http.json("GET", _runs_path(run_id, "children"))["children"])

    # ── run details ─────────────────────────────────────────────────────────
    def notes(self, run_id: str) -> list[Note]:
        return [decode.note_from_dict(n) for n in self.http.json("GET", _runs_path(run_id, "notes"))["notes"]]

    def context(self, run_id: str) -> dict[str, Any]:
        return dict(self.http.json("GET", _runs_path(run_id, "context")))

    def artifacts(self, run_id: str) -> list[Artifact]:
        doc = self.http.json("GET", _runs_path(run_id, "artifacts"))
        return [decode.artifact_from_dict(a) for a in doc["artifacts"]]

    def artifacts_by_digest(self, sha256s: Sequence[str]) -> list[Artifact]:
        found: list[Artifact] = []
        digests = list(sha256s)
        for start in range(0, len(digests), 100):
            doc = self.http.json("GET", "/artifacts", params={"sha256": digests[start : start + 100]})
            found.extend(decode.artifact_from_dict(a) for a in doc["artifacts"])
        return found

    def evidence(self, run_id: str, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        params = {k: v for k, v in (("kind", kind), ("name", name)) if v is not None}
        doc = self.http.json("GET", _runs_path(run_id, "evidence"), params=params)
        return [decode.evidence_from_dict(e) for e in doc["evidence"]]

    # ── events ──────────────────────────────────────────────────────────────
    def metric_summaries(self, run_id: str) -> dict[str, MetricSummary]:
        doc = self.http.json("GET", _runs_path(run_id, "metrics"))
        return {s["name"]: decode.summary_from_dict(s) for s in doc["metrics"]}

    def metric_history(self, run_id: str, name: str, rank: int | None = None) -> MetricHistory:
        response = self.http.request(
            "GET",
            _runs_path(run_id, "metrics", segment(name)),
            headers={"Accept": MEDIA_TYPE},
            params={} if rank is None else {"rank": rank},
        )
        doc = _msgpack.decode(response.content)
        return MetricHistory(
            doc["name"],
            np.frombuffer(doc["steps"], dtype="<i8"),
            np.frombuffer(doc["values"], dtype="<f8"),
            np.frombuffer(doc["times"], dtype="<f8"),
        )

    def logs(self, run_id: str, query: LogQuery) -> list[LogEvent]:
        params = _log_params(query)
        path = _runs_path(run_id, "logs")
        if query.tail and query.limit:
            if query.limit <= LOG_PAGE:
                doc = self.http.json("GET", path, params={**params, "tail": "true", "limit": query.limit})
                return [decode.log_event_from_dict(e) for e in doc["events"]]
            return self.logs(run_id, LogQuery(**{**query.__dict__, "limit": None, "tail": False}))[-query.limit :]
        events: list[LogEvent] = []
        cursor = None
        while True:
            want = LOG_PAGE if query.limit is None else min(LOG_PAGE, query.limit - len(events))
            if want <= 0:
                return events
            page = self.http.json(
                "GET", path, params={**params, "limit": want, **({"cursor": cursor} if cursor else {})}
            )
            events.extend(decode.log_event_from_dict(e) for e in page["events"])
            cursor = page.get("next_cursor")
            if not cursor:
                return events

    def stages(self, run_id: str, rank: int | None = None) -> list[StageSummary]:
        params = {"rank": rank} if rank is not None else {}
        doc = self.http.json("GET", _runs_path(run_id, "stages"), params=params)
        return [decode.stage_from_dict(s) for s in doc["stages"]]

    def resource_samples(
        self, run_id: str, since: float | None = None, rank: int | None = None
    ) -> list[dict[str, Any]]:
        params: dict[str, Any] = {} if since is None else {"since": repr(float(since))}
        if rank is not None:
            params["rank"] = rank
        return list(self.http.json("GET", _runs_path(run_id, "resources"), params=params)["samples"])

    def ranks(self, run_id: str, *, all_attempts: bool = False) -> list[RankInfo]:
        params = {"all": "true"} if all_attempts else {}
        doc = self.http.json("GET", _runs_path(run_id, "ranks"), params=params)
        return [decode.rank_from_dict(r) for r in doc["ranks"]]

    # ── live ────────────────────────────────────────────────────────────────
    def follow_logs(
        self,
        run_id: str,
        *,
        since: float | str | None = None,
        level: str | int | None = None,
        grep: str | None = None,
        component: str | None = None,
        stream: Sequence[str] | str | None = None,
        attempt: int | None = None,
        stage: str | None = None,
        rank: int | None = None,
        reconnect_for: float = 60.0,
    ) -> Iterator[list[LogEvent]]:
        """New log events of a run as the server pushes them (SSE), until the run ends.

        A dropped connection (a server restart) is resumed where it stopped, for up to
        ``reconnect_for`` seconds of failing reconnects.
        """
        params: dict[str, Any] = {"events": "logs,status"}
        for name, value in (
            ("level", level),
            ("grep", grep),
            ("component", component),
            ("attempt", attempt),
            ("stage", stage),
            ("rank", rank),
        ):
            if value is not None:
                params[name] = value
        if since is not None:
            params["since"] = repr(float(since)) if isinstance(since, (int, float)) else since
        if stream:
            params["stream"] = [stream] if isinstance(stream, str) else list(stream)
        last_id: str | None = None
        failing_since: float | None = None
        while True:
            headers = {"Accept": "text/event-stream", **({"Last-Event-ID": last_id} if last_id else {})}
            try:
                with self.http.stream(
                    "GET", _runs_path(run_id, "stream"), params=params, headers=headers, timeout=_STREAM_TIMEOUT
                ) as response:
                    failing_since = None
                    for event in parse_events(response.iter_lines()):
                        if event.id:
                            last_id = event.id
                        if event.event == "logs":
                            yield [decode.log_event_from_dict(e) for e in json.loads(event.data)["events"]]
                        elif event.event == "end":
                            return
            except StoreUnavailable:
                now = time.monotonic()
                failing_since = failing_since or now
                if now - failing_since > reconnect_for:
                    raise
                time.sleep(1.0)

    # ── what only the server's own host can do ───────────────────────────────
    def run_sizes(self) -> list[tuple[str, float, int]]:
        raise InvalidInput(_ON_SERVER.format(what="`flightlog gc`"))

    def referenced_digests(self) -> set[str]:
        raise InvalidInput(_ON_SERVER.format(what="`flightlog gc`"))


_ON_SERVER = (
    "{what} works on the store directly: run it on the server's host against its home "
    "(`flightlog --home DIR ...` with FLIGHTLOG_URL unset)"
)


def _log_params(query: LogQuery) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if query.min_level is not None:
        params["level"] = query.min_level
    for name in ("grep", "component", "attempt", "stage", "rank"):
        value = getattr(query, name)
        if value is not None:
            params[name] = value
    if query.since is not None:
        params["since"] = repr(query.since)
    if query.until is not None:
        params["until"] = repr(query.until)
    if query.streams:
        params["stream"] = list(query.streams)
    return params
