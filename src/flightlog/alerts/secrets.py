"""Notifier secrets come from the environment, never from the rules file in clear.

A notifier field may reference environment variables as ``${NAME}`` (``$$`` is a literal
``$``); references are resolved when a notification is sent, so a rules file can be checked
(and committed) where the secrets do not exist. Fields that hold secrets — passwords, tokens,
authorization headers, Slack webhook URLs, URLs with a password or a token in them — are
refused unless their secret part is such a reference.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, urlsplit

from flightlog.errors import InvalidInput
from flightlog.redaction.names import is_secret_url_param

__all__ = [
    "references",
    "resolve",
    "SecretMissing",
    "secret_key",
    "check_secret_value",
    "check_url",
]

_REF = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\{[^}]*\}?")
_TOKENISH = re.compile(r"[A-Za-z0-9_+/=-]{20,}")


class SecretMissing(InvalidInput):
    """A ``${NAME}`` reference names an environment variable that is not set."""

    code = "secret_missing"


def references(text: str) -> list[str]:
    """The environment variable names ``text`` refers to; InvalidInput for a malformed ``${...}``."""
    names = []
    for m in _REF.finditer(text):
        if m.group(0) == "$$":
            continue
        if m.group(1) is None:
            raise InvalidInput(f"{m.group(0)!r} is not a valid reference: write ${{NAME}} with letters, digits and _")
        names.append(m.group(1))
    return names


def resolve(text: str, environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        if name is None:
            raise InvalidInput(f"{m.group(0)!r} is not a valid reference")
        if name not in env:
            raise SecretMissing(f"the environment variable {name} is not set (referenced as ${{{name}}})")
        return env[name]

    return _REF.sub(sub, text)


def secret_key(name: str) -> bool:
    """Whether a field, header or URL query parameter name holds a secret: the project's one
    policy (``flightlog.redaction.names``), which also knows that a bare ``?key=`` in a URL is one."""
    return is_secret_url_param(name.strip())


def _literal(text: str) -> str:
    return _REF.sub("", text)


def check_secret_value(what: str, text: str, *, env_name: str | None = None) -> None:
    """A secret field: its secret must come from a ``${NAME}`` reference.

    ``Bearer ${TOKEN}`` is fine; ``Bearer abc123…`` or a bare value is refused."""
    refs = references(text)
    literal = _literal(text).strip()
    if not refs or _TOKENISH.search(literal) or len(literal) > 24:
        raise InvalidInput(
            f"{what} holds a secret and must not be written in clear: put it in an environment variable "
            f'and write ${{NAME}} (e.g. {what}: "${{{env_name or _suggest(what)}}}")'
        )


def check_url(what: str, url: str, *, secret: bool = False, env_name: str | None = None) -> None:
    """A URL field: refused when it carries a password or a token in clear.

    ``secret=True`` (Slack-style webhooks, whose path is the credential): the URL must be a reference."""
    refs = references(url)
    if secret:
        if not refs:
            raise InvalidInput(
                f"{what} is a webhook URL with its credential in the path: keep it in an environment variable "
                f'and write {what}: "${{{env_name or _suggest(what)}}}"'
            )
        return
    literal = _literal(url)
    if refs and not literal.strip():
        return  # the whole URL comes from the environment
    parts = urlsplit(literal if not refs else url)
    if parts.scheme not in ("http", "https"):
        raise InvalidInput(f"{what} {url!r} is not an http(s) URL")
    if parts.password and not references(parts.password):
        raise InvalidInput(f"{what} has a password in clear: write it as ${{NAME}} (an environment variable)")
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if secret_key(key) and value and not references(value):
            raise InvalidInput(f"{what} has {key}= in clear: write {key}=${{NAME}} (an environment variable)")


def _suggest(what: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", what.split(".")[-1]).upper().strip("_") or "SECRET"
