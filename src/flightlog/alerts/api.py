"""Alerts' API on a flightlog server: ``/api/v1/alerts``, its history, silences and rule checks
(docs/alerting.md), served through the feature table (`flightlog_api_operations`).

The background evaluation beside it is `flightlog.alerts.service.AlertService`, started by the
``flightlog_server_start`` hook (alerts' ``feature.py``).
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

import anyio
import anyio.to_process

from flightlog.alerts.config import parse_config
from flightlog.alerts.silences import new_silence
from flightlog.alerts.stores import open_alert_store
from flightlog.alerts.yamlsource import MAX_BYTES as MAX_RULES_BYTES
from flightlog.alerts.yamlsource import RulesFileError
from flightlog.errors import InvalidInput, NotFound
from flightlog.server.context import Ctx, forbid_other_project
from flightlog.server.operations import Operation, Param, json_body, ok
from flightlog.server.responses import Response, json_response
from flightlog.timefmt import parse_duration
from flightlog.transport.wire import PayloadTooLarge

__all__ = ["OPERATIONS"]

_MAX_SILENCE = 10 * 365 * 86400.0
_CHECK_LIMITERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)


def _check_limiter() -> anyio.CapacityLimiter:
    """The limiter of rule checks for the running event loop (one worker process at a time)."""
    loop = asyncio.get_running_loop()
    limiter = _CHECK_LIMITERS.get(loop)
    if limiter is None:
        limiter = _CHECK_LIMITERS[loop] = anyio.CapacityLimiter(1)
    return limiter


def _store(ctx: Ctx) -> Any:
    return open_alert_store(ctx.store)


async def list_alerts(ctx: Ctx) -> Response:
    q = ctx.query
    project = forbid_other_project(ctx.principal, q.text("project", max_len=200))
    state = q.choice("state", ("pending", "firing", "resolved"))
    run_ref = q.text("run", max_len=200)
    run_id = (await ctx.run(run_ref)).id if run_ref else None
    alerts = await ctx.call(
        _store(ctx).alerts,
        state=state,
        run_id=run_id,
        project=project,
        rule=q.text("rule", max_len=200),
        limit=q.count("limit", default=100, max=10_000),
    )
    return json_response({"alerts": [a.to_dict() for a in alerts if ctx.principal.allows(a.project)]})


async def alert_history(ctx: Ctx) -> Response:
    q = ctx.query
    run_ref = q.text("run", max_len=200)
    run_id = (await ctx.run(run_ref)).id if run_ref else None
    events = await ctx.call(_store(ctx).events, run_id=run_id, limit=q.count("limit", default=200, max=10_000))
    visible = [e for e in events if ctx.principal.allows((e.get("labels") or {}).get("project"))]
    return json_response({"events": visible})


async def list_silences(ctx: Ctx) -> Response:
    now = time.time()
    silences = await ctx.call(_store(ctx).silences, include_expired=ctx.query.flag("all"), now=now)
    return json_response(
        {
            "silences": [
                s.to_dict(now)
                for s in silences
                if ctx.principal.allows(s.matchers.get("project", ctx.principal.project))
            ]
        }
    )


async def add_silence(ctx: Ctx) -> Response:
    body = await ctx.json()
    rule, duration = body.get("rule"), body.get("for")
    if not isinstance(rule, str) or not rule.strip():
        raise InvalidInput('a silence needs a rule: send {"rule": "gpu-idle", "for": "2h"}')
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
        seconds = float(duration)
    elif isinstance(duration, str):
        seconds = parse_duration(duration, what="for")
    else:
        raise InvalidInput('a silence needs "for": a duration such as "2h" (or seconds)')
    if not 0 < seconds <= _MAX_SILENCE:
        raise InvalidInput(f'"for" must be longer than 0s and at most {_MAX_SILENCE // 86400:.0f} days')
    labels = body.get("labels") or {}
    if not isinstance(labels, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
        raise InvalidInput('"labels" must be an object of text to text, e.g. {"run": "3f2a9c"}')
    for name in ("comment", "author"):
        if body.get(name) is not None and not isinstance(body.get(name), str):
            raise InvalidInput(f'"{name}" must be text')
    if ctx.principal.project is not None:  # a token of one project silences that project only
        labels = {**labels, "project": ctx.principal.project}
    silence = new_silence(rule, seconds, labels, author=body.get("author"), comment=body.get("comment"))
    await ctx.call(_store(ctx).add_silence, silence)
    return json_response(silence.to_dict(), status=201)


async def end_silence(ctx: Ctx) -> Response:
    silence_id = ctx.path("silence")
    store = _store(ctx)
    known = {s.id: s for s in await ctx.call(store.silences, include_expired=True)}
    silence = known.get(silence_id)
    # a silence with no project is global: only a writer of every project may end it
    if silence is None or not ctx.principal.allows(silence.matchers.get("project")):
        raise NotFound(f"no silence {silence_id!r}")
    await ctx.call(store.expire_silence, silence_id)
    return json_response({"id": silence_id, "ended": True})


_CHECK_SECONDS = 30.0  # a document within the size limit parses in well under a second


def _checked(text: str, name: str) -> dict[str, Any]:
    """The answer to a rules check, computed in a worker process (plain data: it is pickled back)."""
    try:
        config = parse_config(text, name)
    except RulesFileError as exc:
        return {"ok": False, "problems": exc.details["problems"], "rules": []}
    return {
        "ok": True,
        "problems": [],
        "rules": [r.to_dict() for r in config.rules],
        "notifiers": [{"name": n.name, "kind": n.kind} for n in config.notifiers],
    }


async def check_rules(ctx: Ctx) -> Response:
    """Parsed in a worker process, one check at a time per server: YAML is parsed in pure Python,
    so a document within the size limit still takes most of a second of CPU. In a thread it held
    the GIL against the event loop, and every other request waited ~0.1 s per probe while a check
    ran; in a process the loop is untouched, and a parse past ``_CHECK_SECONDS`` is killed."""
    body = await ctx.json()
    text = body.get("text")
    if not isinstance(text, str):
        raise InvalidInput('send the rules file as {"text": "..."}')
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_RULES_BYTES:
        raise PayloadTooLarge(
            f"the rules file is {size} bytes; a rules file may hold at most {MAX_RULES_BYTES}",
            details={"limit": MAX_RULES_BYTES},
        )
    name = str(body.get("name") or "rules.yaml")[:200]
    try:
        with anyio.fail_after(_CHECK_SECONDS):
            answer = await anyio.to_process.run_sync(_checked, text, name, cancellable=True, limiter=_check_limiter())
    except TimeoutError:
        raise InvalidInput(
            f"the rules file took over {_CHECK_SECONDS:.0f} s to check and was given up:"
            " split it into smaller files, or check it with `flightlog alerts rules check FILE`"
        ) from None
    return json_response(answer)


_LIST = {"type": "array", "items": {"type": "object"}}
OPERATIONS = [
    Operation(
        "GET",
        "/alerts",
        list_alerts,
        "reader",
        "Alerts, newest first (pending, firing, resolved)",
        "alerts",
        params=(
            Param("state", "query", {"type": "string", "enum": ["pending", "firing", "resolved"]}, "Only this state."),
            Param("run", "query", {"type": "string"}, "Only alerts about this run (id or prefix)."),
            Param("project", "query", {"type": "string"}, "Only this project."),
            Param("rule", "query", {"type": "string"}, "Only this rule."),
            Param("limit", "query", {"type": "integer", "minimum": 0, "maximum": 10000, "default": 100}, "At most."),
        ),
        responses={"200": ok("Alerts", {"type": "object", "properties": {"alerts": _LIST}})},
    ),
    Operation(
        "GET",
        "/alerts/history",
        alert_history,
        "reader",
        "What happened to alerts, oldest first",
        "alerts",
        params=(
            Param("run", "query", {"type": "string"}, "Only alerts about this run."),
            Param("limit", "query", {"type": "integer", "minimum": 0, "maximum": 10000}, "The latest events."),
        ),
        responses={"200": ok("Events", {"type": "object", "properties": {"events": _LIST}})},
    ),
    Operation(
        "GET",
        "/alerts/silences",
        list_silences,
        "reader",
        "Silences in effect (all=true: also ended ones)",
        "alerts",
        params=(Param("all", "query", {"type": "boolean", "default": False}, "Also the silences that ended."),),
        responses={"200": ok("Silences", {"type": "object", "properties": {"silences": _LIST}})},
    ),
    Operation(
        "POST",
        "/alerts/silences",
        add_silence,
        "writer",
        "Hold back the notifications of a rule for a while",
        "alerts",
        body=json_body(
            {
                "type": "object",
                "required": ["rule", "for"],
                "properties": {
                    "rule": {"type": "string", "description": "A rule name or a glob."},
                    "for": {"type": ["string", "number"], "description": "A duration (2h) or seconds."},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "comment": {"type": "string"},
                    "author": {"type": "string"},
                },
            }
        ),
        responses={"201": ok("The silence", {"type": "object"})},
    ),
    Operation(
        "DELETE",
        "/alerts/silences/{silence}",
        end_silence,
        "writer",
        "End a silence now",
        "alerts",
        params=(Param("silence", "path", {"type": "string"}, "The silence's id."),),
        responses={"200": ok("Ended", {"type": "object"})},
    ),
    Operation(
        "POST",
        "/alerts/rules/check",
        check_rules,
        "reader",
        "Check a rules file: every problem with its line",
        "alerts",
        body=json_body(
            {
                "type": "object",
                "required": ["text"],
                "properties": {"text": {"type": "string"}, "name": {"type": "string"}},
            }
        ),
        responses={"200": ok("The check", {"type": "object"})},
    ),
]
