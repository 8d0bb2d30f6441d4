"""The one policy for which *names* hold secrets: mapping keys, params, ``key=value``
assignments, environment variables, HTTP headers and query parameters.

Every place that asks "is this name a secret?" calls :func:`is_secret_name` — the text
redactor, the JSON-field redactor, the environment scan, params and the run context in the SDK,
and the alert notifiers' checks — so they cannot disagree (``tests/capture/test_capture_names.py``
holds the table they all agree on).

The rule looks at the *last word* of a name, because that word says what the value is:
``access_token``, ``client_secret``, ``GITHUB_TOKEN`` and ``X-Api-Key`` hold secrets, while
``token_count``, ``max_tokens``, ``secret_name``, ``HF_TOKEN_PATH`` and ``private_key_path`` only
talk about them. ``key`` alone is too common (``sort_key``, ``rng_key``) and is a secret only
after words such as ``api``, ``secret``, ``private``. Connection strings
(``AZURE_STORAGE_CONNECTION_STRING``) hold account keys. A trailing number or variant word is
skipped first (``API_KEY_2``, ``DB_PASSWORD_PROD``, ``GITHUB_TOKEN_V2``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import lru_cache

__all__ = ["VARIANT_WORDS", "is_secret_name", "is_secret_url_param", "key_words", "secret_env_values"]

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^a-z0-9]+")

# A last word that *ends with* one of these names a secret (``pgpassword``, ``hftoken``).
_SECRET_ENDINGS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "credential",
    "credentials",
    "apikey",
    "secretkey",
    "accesskey",
    "privatekey",
    "authorization",
)
# A last word equal to one of these, when it is not the whole name's only word ("PWD" is the
# shell's working directory; "db_pwd" is a password).
_QUALIFIED_ONLY = frozenset({"pwd", "pass"})
# "key" alone is too common (sort_key, cache key); it is a secret after these words.
_KEY_QUALIFIERS = frozenset(
    {
        "api",
        "access",
        "secret",
        "private",
        "signing",
        "encryption",
        "decryption",
        "client",
        "master",
        "account",
        "ssh",
        "gpg",
        "pgp",
        "deploy",
        "subscription",
        "service",
        "auth",
        "app",
        "license",
        "storage",
        "shared",
        "hmac",
        "session",
        "webhook",
        "jwt",
        "sas",
        "consumer",
    }
)
# Words that hold a secret on their own, wherever they are the last word.
_PLAIN_SECRET_WORDS = frozenset(
    {"auth", "authorization", "credentials", "credential", "dsn", "cookie", "cookies", "signature"}
)
# Trailing words that name a variant of the same thing, not what it is.
VARIANT_WORDS = frozenset(
    {
        "prod",
        "production",
        "dev",
        "development",
        "staging",
        "stage",
        "test",
        "testing",
        "qa",
        "uat",
        "local",
        "old",
        "new",
        "primary",
        "secondary",
        "backup",
        "readonly",
        "ro",
        "rw",
        "default",
        "main",
        "alt",
    }
)
_NUMBERED = re.compile(r"v?\d+")
# ``connection_string``, ``conn_str``: connection strings carry account keys and passwords.
_CONNECTION_WORDS = frozenset({"connection", "conn"})
# Tokenizer special tokens are vocabulary, not secrets: ``eos_token=</s>``.
_VOCABULARY_QUALIFIERS = frozenset(
    {
        "eos",
        "bos",
        "pad",
        "unk",
        "sep",
        "cls",
        "mask",
        "special",
        "sos",
        "eot",
        "sot",
        "start",
        "end",
        "stop",
    }
)


def key_words(name: str) -> list[str]:
    """``"clientSecret"`` → ``["client", "secret"]``; ``"X-Api-Key"`` → ``["x", "api", "key"]``."""
    lowered = _CAMEL.sub("_", name).lower()
    return [w for w in _SPLIT.split(lowered) if w]


@lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether the value stored under ``name`` (a key, param, variable or header) is a secret.

    A dotted name is a path into nested data (params are flattened: ``credentials.user``):
    everything under a secret-named part is secret. Cached: structured logs repeat the same
    few keys millions of times."""
    if "." in name:
        return any(_is_secret_words(key_words(part)) for part in name.split("."))
    return _is_secret_words(key_words(name))


def _is_secret_words(words: list[str]) -> bool:
    while len(words) > 1 and (words[-1] in VARIANT_WORDS or _NUMBERED.fullmatch(words[-1])):
        words = words[:-1]  # API_KEY_2, DB_PASSWORD_PROD: the word before the variant decides
    if not words:
        return False
    last = words[-1]
    if last in ("string", "str"):
        return len(words) > 1 and words[-2] in _CONNECTION_WORDS
    if last in ("key", "keys"):
        return len(words) > 1 and words[-2] in _KEY_QUALIFIERS
    if last in _QUALIFIED_ONLY:
        return len(words) > 1
    if last in _PLAIN_SECRET_WORDS:
        return True
    if last.endswith(_SECRET_ENDINGS):
        return not (last == "token" and len(words) > 1 and words[-2] in _VOCABULARY_QUALIFIERS)
    return False


_URL_ONLY = frozenset({"key", "sig"})


def is_secret_url_param(name: str) -> bool:
    """A URL query parameter or header: the same policy, and a bare ``key`` or ``sig``
    (``?key=AIza…``, an Azure SAS ``&sig=…``), which in a URL are credentials though as a
    param or in a log line they usually are not (``sort key``, gdb's ``sig=6``)."""
    return is_secret_name(name) or name.lower() in _URL_ONLY


# --- environment variables -------------------------------------------------------------

_ENV_URL_LAST = frozenset({"URL", "URI", "DSN", "CONNECTION", "CONN"})
_URL_WITH_PASSWORD = re.compile(r"://[^\s/@:]*:[^\s/@]+@")
_BORING_VALUES = frozenset({"true", "false", "none", "null", "enabled", "disabled", "required", "optional"})


def _is_existing_path(value: str) -> bool:
    """``GOOGLE_APPLICATION_CREDENTIALS=/secrets/key.json`` names a file; the path is no secret."""
    if not value.startswith(("/", "~/", "./")) or "\n" in value:
        return False
    try:
        return os.path.exists(os.path.expanduser(value))
    except (OSError, ValueError):
        return False


def secret_env_values(env: Mapping[str, str], min_length: int = 8) -> list[tuple[str, str]]:
    """(name, value) pairs whose values must never be stored, longest value first.

    Longest first, so a value that contains another is replaced whole. Values shorter than
    ``min_length``, plain numbers and words like ``true`` are skipped: replacing them would
    blank ordinary text all over the log.
    """
    found: dict[str, str] = {}
    for name, value in env.items():
        if not isinstance(value, str) or len(value) < min_length:
            continue
        if value.isdigit() or value.lower() in _BORING_VALUES:
            continue
        url_like, secret_name = _env_name(name)
        if not ((url_like and _URL_WITH_PASSWORD.search(value)) or secret_name):
            continue
        if not _is_existing_path(value):  # last: a file system look, for the few secret-named ones
            found.setdefault(value, name)
    return sorted(((n, v) for v, n in found.items()), key=lambda item: -len(item[1]))


@lru_cache(maxsize=4096)
def _env_name(name: str) -> tuple[bool, bool]:
    """(ends with a URL-like word, is a secret's name) for an environment variable's name: the
    same few dozen names are judged for every redactor a process builds (one per ``flightlog
    run`` attempt, and a pipeline's warm runner judges its own once for every step)."""
    words = [w for w in re.split(r"[^A-Z0-9]+", name.upper()) if w]
    return bool(words) and words[-1] in _ENV_URL_LAST, is_secret_name(name)
