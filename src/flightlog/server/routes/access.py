"""Signing in (the web UI's session cookie), who am I, and token administration."""

from __future__ import annotations

import time

from starlette.responses import Response

from flightlog.errors import InvalidInput
from flightlog.server.auth import COOKIE, authenticate, new_session
from flightlog.server.context import Ctx
from flightlog.server.operations import Operation, Param, json_body, ok
from flightlog.server.responses import json_response
from flightlog.server.tokens import (
    ROLES,
    Scope,
    create_token,
    hash_token,
    list_tokens,
    revoke_token,
)
from flightlog.timefmt import iso

__all__ = ["OPERATIONS"]

_PRINCIPAL = {
    "type": "object",
    "properties": {
        "role": {"type": "string", "enum": list(ROLES)},
        "project": {"type": ["string", "null"]},
        "token_id": {"type": ["string", "null"]},
        "via": {"type": "string"},
        "auth": {"type": "boolean"},
    },
}


async def sign_in(ctx: Ctx) -> Response:
    body = await ctx.json()
    token = body.get("token")
    if not isinstance(token, str) or not token.strip() or len(token) > 512:
        raise InvalidInput('send {"token": "flt_..."}: the token made by `flightlog token create`')
    if not ctx.state.config.auth:
        raise InvalidInput("this server runs without --auth: there is nothing to sign in to")
    request = ctx.request
    scope = dict(request.scope)
    scope["headers"] = [(b"authorization", f"Bearer {token.strip()}".encode("latin-1", "replace"))]
    from starlette.requests import HTTPConnection

    principal = await authenticate(HTTPConnection(scope), ctx.store, enabled=True)
    lifetime = ctx.state.config.session_hours * 3600
    session, digest = new_session()
    await ctx.call(ctx.store.create_session, digest, str(principal.token_id), time.time() + lifetime)
    response = json_response({**principal.to_dict(), "via": "cookie", "auth": True})
    # the scheme is https behind a trusted proxy that says so (hosts.ForwardedHeaders), never on a client's word
    response.set_cookie(
        COOKIE,
        session,
        max_age=int(lifetime),
        path=_cookie_path(ctx),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


async def sign_out(ctx: Ctx) -> Response:
    """Ends the session on the server too: a copied cookie is worthless from now on."""
    session = ctx.request.cookies.get(COOKIE)
    if session and len(session) <= 512:
        await ctx.call(ctx.store.delete_session, hash_token(session))
    response = json_response({"signed_out": True})
    response.delete_cookie(COOKIE, path=_cookie_path(ctx), httponly=True, samesite="strict")
    return response


def _cookie_path(ctx: Ctx) -> str:
    """The server's own path: under ``--root-path /flightlog`` the browser sends the cookie to
    /flightlog/... only, never to the other applications of the same host."""
    return str(ctx.request.scope.get("root_path") or "").rstrip("/") or "/"


async def whoami(ctx: Ctx) -> Response:
    return json_response({**ctx.principal.to_dict(), "auth": ctx.state.config.auth})


def _scope(ctx: Ctx) -> Scope:
    """Whose tokens the caller manages: every project's, or its own project's (tokens.py)."""
    return Scope(ctx.principal.project)


async def tokens_list(ctx: Ctx) -> Response:
    rows = await ctx.call(list_tokens, ctx.store, by=_scope(ctx))
    return json_response(
        {
            "tokens": [
                {**r, "created": iso(r["created"]), "last_used": iso(r["last_used"]), "revoked": iso(r["revoked"])}
                for r in rows
            ]
        }
    )


async def tokens_create(ctx: Ctx) -> Response:
    body = await ctx.json()
    unknown = sorted(set(body) - {"role", "project", "name"})
    if unknown:
        raise InvalidInput(f"unknown fields {unknown}: send role, and optionally project and name")
    for field in ("project", "name"):
        if body.get(field) is not None and not isinstance(body[field], str):
            raise InvalidInput(f"{field} must be a string")
    project = body.get("project")
    if ctx.principal.project is not None and "project" not in body:
        project = ctx.principal.project  # a project admin's tokens are of its project unless it says otherwise
    new = await ctx.call(create_token, ctx.store, body.get("role"), project, body.get("name"), by=_scope(ctx))
    return json_response(new.to_dict(), status=201)


async def tokens_revoke(ctx: Ctx) -> Response:
    token_id = ctx.path("token_id")
    if token_id == ctx.principal.token_id:
        raise InvalidInput("a token cannot revoke itself here: use another admin token, or `flightlog token revoke`")
    await ctx.call(revoke_token, ctx.store, token_id, by=_scope(ctx))
    return json_response({"revoked": token_id})


_NEW_TOKEN = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "token": {"type": "string", "description": "The secret: shown once."},
        "role": {"type": "string"},
        "project": {"type": ["string", "null"]},
        "name": {"type": ["string", "null"]},
    },
}

OPERATIONS = [
    Operation(
        "POST",
        "/session",
        sign_in,
        None,
        "Sign in with a token: sets the HttpOnly session cookie",
        "access",
        body=json_body(
            {"type": "object", "required": ["token"], "properties": {"token": {"type": "string", "maxLength": 512}}}
        ),
        responses={"200": ok("Signed in", _PRINCIPAL)},
    ),
    Operation(
        "DELETE",
        "/session",
        sign_out,
        None,
        "Sign out: clears the session cookie",
        "access",
        responses={"200": ok("Signed out", {"type": "object"})},
    ),
    Operation(
        "GET",
        "/whoami",
        whoami,
        "reader",
        "The role and project of the token in use",
        "access",
        responses={"200": ok("Who you are", _PRINCIPAL)},
    ),
    Operation(
        "GET",
        "/tokens",
        tokens_list,
        "admin",
        "API tokens (never their secrets)",
        "access",
        responses={
            "200": ok(
                "Tokens", {"type": "object", "properties": {"tokens": {"type": "array", "items": {"type": "object"}}}}
            )
        },
    ),
    Operation(
        "POST",
        "/tokens",
        tokens_create,
        "admin",
        "Make a token (its secret is in this answer only)",
        "access",
        body=json_body(
            {
                "type": "object",
                "required": ["role"],
                "additionalProperties": False,
                "properties": {
                    "role": {"type": "string", "enum": list(ROLES)},
                    "project": {"type": ["string", "null"], "maxLength": 200},
                    "name": {"type": ["string", "null"], "maxLength": 200},
                },
            }
        ),
        responses={"201": ok("The new token", _NEW_TOKEN)},
    ),
    Operation(
        "DELETE",
        "/tokens/{token_id}",
        tokens_revoke,
        "admin",
        "Revoke a token",
        "access",
        params=(
            Param("token_id", "path", {"type": "string", "pattern": "^[0-9a-f]{12}$"}, "The token's id (`token ls`)."),
        ),
        responses={"200": ok("Revoked", {"type": "object"})},
    ),
]
