"""Redaction of secrets from text and from structured data, before anything is stored.

``Redactor.redact_bytes`` runs over a whole chunk of output (tens of kilobytes) at a time,
on the raw bytes: every rule is a regex whose first characters are a literal, so output
without candidates costs a few scans at memory speed rather than a regex per line. Order
matters and is fixed:

1. shape families (``families.py``): private keys, cloud and chat tokens, JWTs, URL passwords;
2. name-based assignments (``assignments.py``): ``password=…``, ``Authorization: …``,
   ``--password X``; then options by their place in a command (``commands.py``):
   ``docker login -p X``, ``curl -u user:X``;
3. the values of secret-looking environment variables (``names.py``); then, in a process that
   turned it on (a model server's), personal data by its shape (``personal.py``);
4. the user's own patterns (``patterns.py``) — on decoded text, since they are ``str`` regexes.

Earlier rules leave ``[REDACTED:…]`` markers that later rules skip, so a value is counted once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from flightlog.redaction.assignments import redact_assignments
from flightlog.redaction.commands import redact_commands
from flightlog.redaction.families import FAMILIES, marker
from flightlog.redaction.names import is_secret_name, secret_env_values
from flightlog.redaction.patterns import compile_patterns
from flightlog.redaction.personal import redact_personal

__all__ = ["Redactor"]

_KNOWN_CHARS = 256  # texts up to this long have their answer remembered (`Redactor.redact`)
_KNOWN_MAX = 4096  # answers remembered per redactor before the memory starts again
_CUSTOM_MARKER = marker("custom")
_SECRET_MARKER = marker("secret")
_CONTAINERS = (dict, list, tuple)
#: Values with no string inside, passed through by type alone: a ``Mapping`` check is an ABC's,
#: ~1 µs a value, and a sweep's runs each carry tens of numeric params (issue #32).
_PLAIN = frozenset({float, int, bool, type(None)})
_UTF8 = "utf-8"
_ROUND_TRIP = "surrogatepass"  # any str survives encode → redact → decode unchanged


class Redactor:
    """Replaces secrets with ``[REDACTED:<family>]`` markers and counts them in ``count``.

    ``env`` (default ``os.environ``) is read once, here: values of variables such as
    ``GITHUB_TOKEN`` or ``DATABASE_URL`` (with a password) are hidden wherever they appear.
    ``extra_patterns`` are user regexes; a bad one raises InvalidInput.
    """

    def __init__(
        self, extra_patterns: Sequence[str] = (), env: Mapping[str, str] | None = None, *, personal: bool = False
    ) -> None:
        self.count = 0
        self.personal = personal  # the personal family too (personal.py): a serving process's
        self._custom = compile_patterns(list(extra_patterns))
        self._known: dict[str, tuple[str, int]] = {}  # short text → (redacted, secrets found): see `redact`
        source = os.environ if env is None else env
        self._env = [
            (value.encode(_UTF8, "surrogateescape"), marker(f"env:{name}").encode())
            for name, value in secret_env_values(source)
        ]

    # --- text ---------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        """Return ``text`` with every recognised secret replaced by a marker.

        A short text's answer is remembered (the same rules give the same answer; ``count``
        still counts what it found each time): a process records the same command lines, paths
        and names over and over, and a pipeline's warm runner hands what it redacted to every
        step it forks."""
        if not text:
            return text
        short = len(text) <= _KNOWN_CHARS
        if short:
            known = self._known.get(text)
            if known is not None:
                self.count += known[1]
                return known[0]
        data = text.encode(_UTF8, _ROUND_TRIP)
        redacted, found = self._builtin(data)
        out = text if redacted is data else redacted.decode(_UTF8, _ROUND_TRIP)
        out, custom = self._user(out)
        found += custom
        self.count += found
        if short:
            if len(self._known) >= _KNOWN_MAX:
                self._known.clear()
            self._known[text] = (out, found)
        return out

    def probe(self, text: str) -> bool:
        """Whether ``redact`` would change ``text``, without counting: a cheap test before
        redacting a large structure value by value."""
        count = self.count
        try:
            return self.redact(text) != text
        finally:
            self.count = count

    def redact_bytes(self, data: bytes) -> bytes:
        """The built-in rules and environment values, on raw output (not user patterns:
        apply ``redact_custom`` to the decoded text). Returns ``data`` itself when unchanged."""
        data, found = self._builtin(data)
        self.count += found
        return data

    def redact_custom(self, text: str) -> str:
        """The user's patterns (``--redact``, ``redact.txt``), on decoded text."""
        text, found = self._user(text)
        self.count += found
        return text

    def _builtin(self, data: bytes) -> tuple[bytes, int]:
        total = 0
        for family in FAMILIES:
            data, n = family.apply(data)
            total += n
        data, n = redact_assignments(data)
        total += n
        data, n = redact_commands(data)
        total += n
        for value, replacement in self._env:
            if value in data:
                total += data.count(value)
                data = data.replace(value, replacement)
        if self.personal:
            data, n = redact_personal(data)
            total += n
        return data, total

    def _user(self, text: str) -> tuple[str, int]:
        total = 0
        for pattern in self._custom:
            text, n = pattern.apply(text, _CUSTOM_MARKER)
            total += n
        return text, total

    # --- structured data ----------------------------------------------------------------

    def redact_mapping(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``data`` with secret-keyed values hidden and strings redacted, recursively.

        Everything under a secret-looking key is hidden, whatever its type (``{"credentials":
        {...}}`` hides the whole inner mapping's values); other strings go through ``redact``.
        """
        return self._mapping(data, redact_strings=True)

    def redact_keys(self, data: dict[str, Any]) -> dict[str, Any]:
        """Like ``redact_mapping`` but only by key: for fields parsed from text that was
        already redacted as a whole, so each string need not be scanned twice. Returns
        ``data`` itself when nothing in it needs hiding (the common case: no copy)."""
        for key, value in data.items():
            if type(value) in _CONTAINERS or (isinstance(key, str) and is_secret_name(key)):
                return self._mapping(data, redact_strings=False)
        return data

    def redact_strings(self, value: Any) -> Any:
        """``value`` with every string in it redacted, recursively; keys are not judged (for
        data whose keys are not names of values, such as a traceback's frames)."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {k: self.redact_strings(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_strings(item) for item in value]
        return value

    def redact_argv(self, argv: Sequence[Any]) -> list[Any]:
        """A command line with its secrets hidden: each argument is redacted as text, and the
        value of a secret-named option is hidden whatever it looks like — ``--token abc``,
        ``--api-key=abc``, ``api_key=abc``, ``credentials.user=bob``."""
        out: list[Any] = []
        hide_next: bool | str = False
        by_place = _secret_short_options(argv)
        for arg in argv:
            if not isinstance(arg, str):
                out.append(arg)
                hide_next = False
                continue
            if hide_next and not arg.startswith("-"):
                user, colon, password = arg.partition(":")
                if hide_next == "after_colon":  # curl -u user:password keeps the user
                    out.append(f"{user}:{self._hide(password)}" if colon and password else arg)
                else:
                    out.append(self._hide(arg))
                hide_next = False
                continue
            hide_next = False
            if arg in by_place:  # docker login -p X, twine upload -p X, curl -u user:X
                out.append(arg)
                hide_next = by_place[arg]
                continue
            name, eq, value = arg.partition("=")
            option = name.startswith("-")
            if option or eq:
                name = name.lstrip("-")
                if name and is_secret_name(name):
                    if eq:
                        out.append(f"{arg[: len(arg) - len(value)]}{self._hide(value) if value else ''}")
                        continue
                    hide_next = option
            out.append(self.redact(arg))
        return out

    def _mapping(self, data: Mapping[str, Any], redact_strings: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in data.items():
            if isinstance(key, str) and is_secret_name(key):
                out[key] = self._hide(value)
            elif type(value) in _PLAIN:
                out[key] = value
            else:
                out[key] = self._value(value, redact_strings)
        return out

    def _value(self, value: Any, redact_strings: bool) -> Any:
        if isinstance(value, str):
            return self.redact(value) if redact_strings else value
        if isinstance(value, Mapping):
            return self._mapping(value, redact_strings)
        if isinstance(value, list | tuple):
            return [self._value(item, redact_strings) for item in value]
        return value

    def _hide(self, value: Any) -> Any:
        if value is None or isinstance(value, bool) or value == "":
            return value
        if isinstance(value, Mapping):
            return {k: self._hide(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._hide(item) for item in value]
        if isinstance(value, str) and value.startswith("[REDACTED"):
            return value
        self.count += 1
        return _SECRET_MARKER


_PROGRAM_OPTIONS: dict[tuple[str, str], dict[str, bool | str]] = {
    # (program, subcommand) → short options whose value is a secret (see ``commands.py``)
    ("docker", "login"): {"-p": True},
    ("podman", "login"): {"-p": True},
    ("twine", "upload"): {"-p": True},
    ("curl", ""): {"-u": "after_colon"},
}


def _secret_short_options(argv: Sequence[Any]) -> dict[str, bool | str]:
    """The short options of ``argv`` that give a secret by their place in the command (``-p``
    after ``docker login``), which their name alone does not say (``-p 8080`` is a port)."""
    words = [os.path.basename(a) if i == 0 else a for i, a in enumerate(argv) if isinstance(a, str)]
    found: dict[str, bool | str] = {}
    for (program, sub), options in _PROGRAM_OPTIONS.items():
        if program in words and (not sub or sub in words[words.index(program) + 1 :]):
            found.update(options)
    return found
