"""Which *names* hold secrets: mapping keys, ``key=value`` assignments, environment variables.

The rule looks at the *last word* of a name, because that word says what the value is:
``access_token`` and ``client_secret`` hold secrets, while ``token_count``, ``max_tokens``,
``secret_name`` and ``private_key_path`` only talk about them. Keeping this in one place means
the text redactor, the JSON-field redactor and the environment scan agree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import lru_cache

__all__ = ["is_secret_key", "key_words", "secret_env_values", "is_secret_env_name"]

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
        "client",
        "master",
        "account",
        "ssh",
        "subscription",
        "service",
        "auth",
        "app",
        "license",
        "storage",
        "shared",
        "hmac",
        "session",
    }
)
_PLAIN_SECRET_WORDS = frozenset({"auth", "authorization", "credentials", "credential"})
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
def is_secret_key(name: str) -> bool:
    """Whether the value stored under ``name`` should be treated as a secret.

    Cached: structured logs repeat the same few keys millions of times."""
    words = key_words(name)
    if not words:
        return False
    last = words[-1]
    if last in ("key", "keys"):
        return len(words) > 1 and words[-2] in _KEY_QUALIFIERS
    if last in _QUALIFIED_ONLY:
        return len(words) > 1
    if last in _PLAIN_SECRET_WORDS:
        return True
    if last.endswith(_SECRET_ENDINGS):
        return not (last == "token" and len(words) > 1 and words[-2] in _VOCABULARY_QUALIFIERS)
    return False


# --- environment variables -------------------------------------------------------------

_ENV_SECRET_PARTS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE")
# Names whose value describes where or how a secret is, not the secret itself.
_ENV_DESCRIPTIVE_LAST = frozenset(
    {
        "PATH",
        "FILE",
        "FILES",
        "DIR",
        "DIRS",
        "MODE",
        "TYPE",
        "METHOD",
        "ENABLED",
        "DISABLED",
        "HOST",
        "PORT",
        "USER",
        "USERNAME",
        "NAME",
        "REGION",
        "ID",
        "PROVIDER",
        "EXPIRY",
        "EXPIRATION",
        "TTL",
        "LENGTH",
        "VERSION",
        "SOCK",
        "SOCKET",
    }
)
_ENV_NEVER = frozenset({"PWD", "OLDPWD", "TOKENIZERS_PARALLELISM"})
_ENV_URL_LAST = frozenset({"URL", "URI", "DSN", "CONNECTION", "CONN"})
_URL_WITH_PASSWORD = re.compile(r"://[^\s/@:]*:[^\s/@]+@")
_BORING_VALUES = frozenset(
    {"true", "false", "none", "null", "enabled", "disabled", "required", "optional"}
)


def is_secret_env_name(name: str) -> bool:
    """``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``SENTRY_DSN`` yes; ``KEYBOARD_LAYOUT`` no."""
    upper = name.upper()
    if upper in _ENV_NEVER:
        return False
    words = [w for w in re.split(r"[^A-Z0-9]+", upper) if w]
    if not words or words[-1] in _ENV_DESCRIPTIVE_LAST:
        return False
    if words[-1] == "DSN":
        return True
    for word in words:
        if word.startswith("TOKENIZER"):
            continue
        if any(part in word for part in _ENV_SECRET_PARTS):
            return True
        if word.startswith("AUTH") and not word.startswith("AUTHOR"):
            return True
        if word in ("KEY", "KEYS") or (word.endswith("KEY") and len(word) > 3):
            return True
    return False


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
        if value.isdigit() or value.lower() in _BORING_VALUES or _is_existing_path(value):
            continue
        words = [w for w in re.split(r"[^A-Z0-9]+", name.upper()) if w]
        url_like = bool(words) and words[-1] in _ENV_URL_LAST
        if (url_like and _URL_WITH_PASSWORD.search(value)) or is_secret_env_name(name):
            found.setdefault(value, name)
    return sorted(((n, v) for v, n in found.items()), key=lambda item: -len(item[1]))
