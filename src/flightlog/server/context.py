"""What a request handler gets: the request, the server's state, who is asking, and helpers
that validate input into clear 4xx errors (never an assertion, never a 500)."""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio.to_thread
import msgspec
from starlette.requests import Request

from flightlog.client import Client
from flightlog.errors import Forbidden, InvalidInput
from flightlog.models import RunInfo
from flightlog.server.auth import Principal
from flightlog.server.config import ServerConfig
from flightlog.server.ingestqueue import IngestQueue
from flightlog.server.prometheus import Metrics
from flightlog.server.storeapi import ServerStore
from flightlog.timefmt import parse_time
from flightlog.transport.wire import PayloadTooLarge

__all__ = ["AppState", "Ctx", "Query", "Request", "UnsupportedMediaType"]  # Request: for the MLflow routes' own reading

T = TypeVar("T")
_json = msgspec.json.Decoder()


class UnsupportedMediaType(InvalidInput):
    code = "unsupported_media_type"
    http_status = 415


@dataclass
class AppState:
    """Per process, shared by every request: the store (stateless over it) and counters."""

    config: ServerConfig
    store: ServerStore
    blobs: Any  # flightlog.server.blobs.BlobStore
    metrics: Metrics
    draining: threading.Event = field(default_factory=threading.Event)
    ingest_queue: IngestQueue | None = None  # made on the first ingest (server/ingestqueue.py)
    _client: Client | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def client(self) -> Client:
        """`flightlog.Client` over this server's store (``Client.over``): the one read facade of
        every API module. Made on first use and kept: it holds nothing of a request (the store,
        the settings of ``config.home``), neither reconciles journals nor closes the store, so a
        request pays an attribute read for it, never a settings load or a file access."""
        client = self._client
        if client is None or client.store is not self.store:  # two first requests may both make one: either serves
            client = self._client = Client.over(self.store, home=self.config.home)
        return client

    def ingester(self) -> IngestQueue:
        if self.ingest_queue is None:
            self.ingest_queue = IngestQueue(self.store)
        return self.ingest_queue


@dataclass
class Ctx:
    request: Request
    state: AppState
    principal: Principal

    @property
    def store(self) -> ServerStore:
        return self.state.store

    @property
    def client(self) -> Client:
        """`flightlog.Client` over the server's store, the one read facade of every API module
        (the server's one, ``AppState.client``: nothing is opened or read per request)."""
        return self.state.client

    def visible(self) -> Callable[[list[str]], list[str]] | None:
        """Of some run ids, those this principal may name (a token of one project: its project's,
        one indexed lookup of their projects); None when it may name every run. Blocking: call it
        off the event loop (``ctx.call``), as ``Client.lineage(visible=...)`` does."""
        project = self.principal.project
        if project is None:
            return None
        store = self.store

        def visible(run_ids: list[str]) -> list[str]:
            if not run_ids:
                return run_ids
            projects = store.run_projects(run_ids)
            return [r for r in run_ids if projects.get(r) == project]

        return visible

    @property
    def query(self) -> Query:
        return Query(self.request)

    def path(self, name: str) -> str:
        return str(self.request.path_params[name])

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """A blocking store call, off the event loop."""
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))

    async def run(self, ref: str | None = None) -> RunInfo:
        """The run named by the path (id or unique prefix), if this principal may see its project."""
        info = await self.call(self.store.get_run, await self._resolve(ref))
        self.principal.check_project(info.project)
        return info

    async def run_id(self) -> str:
        """The id of the run named by the path, if this principal may see its project, without
        reading the run (its params and every metric summary) when only the id is needed."""
        return await self._resolve(None)

    async def _resolve(self, ref: str | None) -> str:
        """An id or prefix, resolved among the runs this principal may see only: one outside its
        project is answered exactly as one that does not exist (the same 404, naming no other
        project), and a prefix is ambiguous only among its own runs, so probing learns nothing."""
        ref = ref if ref is not None else self.path("run")
        return await self.call(self.store.resolve, ref, project=self.principal.project)

    async def body(self, limit: int | None = None) -> bytes:
        limit = self.state.config.max_body if limit is None else limit
        declared = self.request.headers.get("content-length")
        if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(
                f"the body is {declared} bytes; this server takes at most {limit}", details={"limit": limit}
            )
        chunks, size = [], 0
        async for chunk in self.request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(
                    f"the body is over {limit} bytes, the most this server takes", details={"limit": limit}
                )
            chunks.append(chunk)
        return b"".join(chunks)

    async def json(self) -> dict[str, Any]:
        """A JSON object body (Content-Type: application/json)."""
        media = self.request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json":
            raise UnsupportedMediaType(
                f"send this request as application/json, not {media or 'no Content-Type'}",
                details={"content_type": media},
            )
        raw = await self.body()
        try:
            doc = _json.decode(raw)
        except msgspec.DecodeError as exc:
            raise InvalidInput(f"the body is not valid JSON: {exc}") from None
        except RecursionError:
            raise InvalidInput("the body is nested too deeply") from None
        if not isinstance(doc, dict):
            raise InvalidInput("the body must be a JSON object")
        return doc


class Query:
    """Typed access to query parameters; every refusal names the parameter and what it takes."""

    def __init__(self, request: Request) -> None:
        self.params = request.query_params

    def text(self, name: str, *, default: str | None = None, max_len: int = 2000) -> str | None:
        values = self.params.getlist(name)
        if not values:
            return default
        if len(values) > 1:
            raise InvalidInput(f"query parameter {name} is given {len(values)} times: give it once")
        value = values[0]
        if len(value) > max_len:
            raise InvalidInput(f"query parameter {name} is too long ({len(value)} characters; at most {max_len})")
        if "\x00" in value:
            raise InvalidInput(f"query parameter {name} contains a NUL character")
        return value

    def values(self, name: str, *, max_items: int = 1000) -> list[str] | None:
        """Repeated (``?x=a&x=b``) or comma-separated (``?x=a,b``) values."""
        values = [v.strip() for raw in self.params.getlist(name) for v in raw.split(",") if v.strip()]
        if len(values) > max_items:
            raise InvalidInput(f"query parameter {name} has {len(values)} values; at most {max_items}")
        if any("\x00" in v for v in values):
            raise InvalidInput(f"query parameter {name} contains a NUL character")
        return values or None

    def integer(
        self, name: str, *, default: int | None = None, min: int | None = None, max: int | None = None
    ) -> int | None:
        raw = self.text(name, max_len=40)
        if raw is None or raw == "":
            return default
        if not re.fullmatch(r"[+-]?\d+", raw.strip()):
            raise InvalidInput(f"query parameter {name}={raw!r} is not a whole number")
        value = int(raw)
        if (min is not None and value < min) or (max is not None and value > max):
            bounds = f"from {min}" if max is None else f"up to {max}" if min is None else f"from {min} to {max}"
            raise InvalidInput(
                f"query parameter {name}={value} is out of range: use a number {bounds}",
                details={"parameter": name, "min": min, "max": max},
            )
        return value

    def count(self, name: str, *, default: int, max: int) -> int:
        """A whole number from 0 to ``max`` (``default`` when absent)."""
        value = self.integer(name, min=0, max=max)
        return default if value is None else value

    def flag(self, name: str, *, default: bool = False) -> bool:
        raw = self.text(name, max_len=10)
        if raw is None or raw == "":
            return default
        value = raw.strip().lower()
        if value in ("1", "true", "yes", "on"):
            return True
        if value in ("0", "false", "no", "off"):
            return False
        raise InvalidInput(f"query parameter {name}={raw!r} is not a boolean: use true or false")

    def when(self, name: str) -> float | None:
        """Epoch seconds, an ISO-8601 time, or a duration ago (``10m``)."""
        raw = self.text(name, max_len=64)
        if raw is None or raw.strip() == "":
            return None
        try:
            value = float(raw)
        except ValueError:
            return parse_time(raw, what=f"query parameter {name}")
        if not math.isfinite(value):
            raise InvalidInput(f"query parameter {name}={raw!r} is not a time")
        return value

    def choice(self, name: str, choices: tuple[str, ...], *, default: str | None = None) -> str | None:
        raw = self.text(name, max_len=100)
        if raw is None:
            return default
        if raw not in choices:
            raise InvalidInput(
                f"query parameter {name}={raw!r} is not valid: use one of {', '.join(choices)}",
                details={"parameter": name, "choices": list(choices)},
            )
        return raw


def forbid_other_project(principal: Principal, project: str | None) -> str | None:
    """The project a listing is limited to: the token's own, which a request cannot leave."""
    if principal.project is None:
        return project
    if project is not None and project != principal.project:
        raise Forbidden(
            f"this token is limited to project {principal.project!r} and cannot read project {project!r}",
            details={"project": principal.project},
        )
    return principal.project
