"""Secrets recognised by their *place* in a logged command: ``docker login -p X``,
``twine upload -p X``, ``curl -u user:password``.

A short option such as ``-p`` or ``-u`` names nothing by itself (``-p 8080`` is a port), so the
value is hidden only after the command that gives the option its meaning. Long options with a
secret name (``--password X``, ``--token=X``) are found by name in ``assignments.py``.

Each pattern starts with the command's name as a literal, so the engine jumps from one
occurrence to the next, as in ``families.py``; the rest of the match stays on one line.
"""

from __future__ import annotations

import re

from flightlog.redaction.families import marker_bytes, splice

__all__ = ["redact_commands"]

_SECRET = marker_bytes("secret")
_WORD_END = rb"(?![A-Za-z0-9_\-])"
# What may come between a command's words: the same line, and a bounded stretch of it, so a
# line made of the command's name repeated costs a linear scan, not a quadratic one.
_GAP = rb"[^\n]{0,256}?"
_OPTION_VALUE = rb"[ \t](?:-p[ \t]*|--password[ \t=]+)(?P<value>[^\s\"'`;|&)]+)"
_COMMANDS: tuple[re.Pattern[bytes], ...] = (
    # docker login [-u user] -p X registry (podman's is the same); one pattern per command
    # name, as each must start with a literal to be cheap
    re.compile(rb"docker" + _WORD_END + _GAP + rb"[ \t]login" + _WORD_END + _GAP + _OPTION_VALUE),
    re.compile(rb"podman" + _WORD_END + _GAP + rb"[ \t]login" + _WORD_END + _GAP + _OPTION_VALUE),
    # twine upload -u __token__ -p pypi-…
    re.compile(rb"twine[ \t]+upload" + _WORD_END + _GAP + _OPTION_VALUE),
    # curl -u user:password, --user user:password, -uuser:password: the part after the colon
    re.compile(
        rb"curl" + _WORD_END + _GAP + rb"[ \t](?:-u[ \t]*|--user[ \t=]+)[\"']?[^\s:\"']*:"
        rb"(?P<value>[^\s\"'`;|&)]+)"
    ),
)


def redact_commands(data: bytes) -> tuple[bytes, int]:
    """Hide the values of the commands' password options; return the data and the count."""
    cuts: list[tuple[int, int, bytes]] = []
    for pattern in _COMMANDS:
        for m in pattern.finditer(data):
            value = m.group("value")
            if value.startswith(b"[REDACTED") or value.startswith(b"$"):
                continue  # already hidden, or a shell variable (``-p $TOKEN``): no secret here
            cuts.append((m.start("value"), m.end("value"), _SECRET))
    return splice(data, cuts)
