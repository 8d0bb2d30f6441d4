"""API tokens: made here, kept hashed in the store, checked on every request.

Who manages which tokens (docs/server.md, "Tokens"): an admin token with no project (a global
admin, or the ``flightlog token`` commands on the server's host, which hold the store itself)
manages every token. An admin token limited to a project manages that project's tokens only:
it lists and revokes them, and makes tokens of that project, of any role up to its own; a
token with no project, or of another project, is beyond it. A token outside the caller's reach
is answered as if it did not exist, so that a project admin cannot learn other projects' ids.

A token reads ``flt_<id>_<secret>``: the id is public (``token ls`` shows it, ``token revoke``
takes it), the secret is 32 random bytes shown once. The store keeps only the SHA-256 of the
whole token, so a leaked database does not leak working tokens; a lookup by that hash is an
indexed equality (no secret is ever compared character by character).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any, Protocol

from flightlog.errors import Forbidden, InvalidInput, NotFound
from flightlog.names import check_name_text

__all__ = [
    "ROLES",
    "TokenStore",
    "NewToken",
    "Scope",
    "OPERATOR",
    "create_token",
    "hash_token",
    "list_tokens",
    "revoke_token",
    "check_role",
]

ROLES = ("reader", "writer", "admin")
RANK = {role: i for i, role in enumerate(ROLES)}
_PROJECT = re.compile(r".{1,200}", re.DOTALL)  # and flightlog.names' rule (no control characters, no bidi controls)
_TOKEN_ID = re.compile(r"^[0-9a-f]{12}$")


class TokenStore(Protocol):
    def create_token(self, token_id: str, digest: str, role: str, project: str | None, name: str | None) -> None: ...
    def token_by_hash(self, digest: str) -> dict[str, Any] | None: ...
    def tokens(self) -> list[dict[str, Any]]: ...
    def revoke_token(self, token_id: str) -> bool: ...
    def touch_token(self, token_id: str, when: float) -> None: ...


@dataclass(frozen=True)
class Scope:
    """Who manages tokens: an admin of every project (``project`` None) or of one project."""

    project: str | None = None

    def reaches(self, row: dict[str, Any]) -> bool:
        return self.project is None or row.get("project") == self.project

    def check_new(self, project: str | None) -> None:
        if self.project is None or project == self.project:
            return
        what = "a token of every project" if project is None else f"a token of project {project!r}"
        raise Forbidden(
            f"this admin token is limited to project {self.project!r}: it cannot make {what}; "
            f"make tokens of project {self.project!r}, or ask an admin of every project",
            details={"project": self.project},
        )


OPERATOR = Scope()  # the store's own holder: `flightlog token` on the server's host


@dataclass(frozen=True)
class NewToken:
    id: str
    secret: str  # the whole token: shown once, never stored
    role: str
    project: str | None
    name: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "token": self.secret, "role": self.role, "project": self.project, "name": self.name}


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_role(role: Any) -> str:
    if role not in ROLES:
        raise InvalidInput(
            f"role {role!r} is not valid: use one of {', '.join(ROLES)}", details={"choices": list(ROLES)}
        )
    return str(role)


def create_token(
    store: TokenStore, role: str, project: str | None = None, name: str | None = None, *, by: Scope = OPERATOR
) -> NewToken:
    """Make a token; ``by`` is who asks (a project admin makes tokens of its project only)."""
    role = check_role(role)
    if project is not None and not (isinstance(project, str) and _PROJECT.fullmatch(project)):
        raise InvalidInput(f"project {project!r} is not a valid project name (1 to 200 characters)")
    check_name_text(project, "project name")
    if name is not None and (len(name) > 200 or not name.isprintable()):
        raise InvalidInput("a token name is printable text of at most 200 characters")
    by.check_new(project)
    token_id = secrets.token_hex(6)
    secret = f"flt_{token_id}_{secrets.token_urlsafe(32)}"
    store.create_token(token_id, hash_token(secret), role, project, name)
    return NewToken(token_id, secret, role, project, name)


def list_tokens(store: TokenStore, *, by: Scope = OPERATOR) -> list[dict[str, Any]]:
    return [row for row in store.tokens() if by.reaches(row)]


def revoke_token(store: TokenStore, token_id: str, *, by: Scope = OPERATOR) -> None:
    token_id = token_id.strip()
    if not _TOKEN_ID.match(token_id):
        raise InvalidInput(f"{token_id!r} is not a token id: use the 12-character id that `flightlog token ls` shows")
    if by.project is not None and not any(row["id"] == token_id and by.reaches(row) for row in store.tokens()):
        raise NotFound(f"no token with id {token_id!r}: list them with `flightlog token ls`")
    if not store.revoke_token(token_id):
        raise NotFound(f"no token with id {token_id!r}: list them with `flightlog token ls`")
