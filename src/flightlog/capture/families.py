"""The catalogue of secrets recognised by their *shape*: tokens, keys, JWTs, URL passwords.

Families run on the raw *bytes* of a chunk, before decoding. Why bytes: searching bytes is
two to four times faster than searching a ``str`` that holds one wide character (a progress
bar's ``█`` makes the whole chunk two bytes per character), and every family is ASCII, so a
match can never start or end inside a multi-byte character.

Each pattern begins with a literal (``glpat-``, ``eyJ``, ``://``, ``AKIA``), so the regex
engine jumps from one occurrence of that literal to the next: a 64 KiB chunk without any
candidate costs a few microseconds per family. Left-boundary checks that would need a
look-behind at the start of the pattern (which defeats that jump) are done in ``accept``.

Secrets recognised by their *name* (``password=...``) live in ``assignments.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Family", "FAMILIES", "PRIVATE_KEY", "marker", "marker_bytes"]


def marker(name: str) -> str:
    """What a redacted value is replaced with: ``[REDACTED:github_token]``."""
    return f"[REDACTED:{name}]"


def marker_bytes(name: str) -> bytes:
    return marker(name).encode()


_REDACTED = b"[REDACTED"


@dataclass(frozen=True, slots=True)
class Family:
    """One pattern, for one kind of secret or for several that share a leading literal.

    Without named groups the whole match is replaced by ``[REDACTED:<name>]``. With named
    groups, each group is a family of its own and names the marker: the group's text is
    replaced (``://`` finds both Slack webhooks and URL passwords in one scan), or, for an
    empty group placed at the end of an alternative as a tag, the whole match. Sharing a scan
    matters: each costs about as much as all the other work on a plain line. Every
    alternative must start with the same literal, or the engine can no longer skip ahead.
    ``accept`` can veto a match that has the right shape but is ordinary text.
    """

    name: str
    pattern: re.Pattern[bytes]
    accept: Callable[[re.Match[bytes]], bool] | None = None

    def apply(self, data: bytes) -> tuple[bytes, int]:
        if not self.pattern.groupindex and self.accept is None:
            return self.pattern.subn(marker_bytes(self.name), data)
        count = 0
        accept = self.accept
        whole = marker_bytes(self.name)

        def replace(m: re.Match[bytes]) -> bytes:
            nonlocal count
            group = m.lastgroup
            value = m.group(group or 0)
            if value.startswith(_REDACTED) or (accept is not None and not accept(m)):
                return m.group(0)
            count += 1
            if group is None:
                return whole
            if m.start(group) == m.end(group):  # a tag: the whole match is the secret
                return _MARKERS[group]
            string = m.string
            return (
                string[m.start() : m.start(group)]
                + _MARKERS[group]
                + string[m.end(group) : m.end()]
            )

        return self.pattern.sub(replace, data), count

    def names(self) -> list[str]:
        """The families this pattern covers (its named groups, or its name).

        A group named ``family__variant`` is another shape of ``family`` (group names must be
        unique in a pattern, marker names need not be)."""
        return list(self.pattern.groupindex) or [self.name]


# A line break inside a key block: a real newline, or ``\n`` escaped inside a JSON string.
_KEY_SEP = r"(?:\r?\n|\\(?:r\\)?n)"
# A body line is whole: base64 or a header, then the end of the line (or of a JSON string).
_KEY_BODY_LINE = (
    r"[ \t]*(?:(?:Proc-Type|DEK-Info|Comment|Version):[^\n\\\"]*|[A-Za-z0-9+/=]+)?[ \t]*"
    r"(?=\r?\n|\\(?:r\\)?n|\"|\Z)"
)
_KEY_HEADER = r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_KEY_FOOTER = r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"

#: A private key block: the header, the base64 body lines, and the footer when it is there.
#: Without a footer the block ends at the first line that is not base64, so an unterminated
#: key is still hidden while ordinary text after it is not.
PRIVATE_KEY = re.compile(
    rf"{_KEY_HEADER}(?:{_KEY_SEP}{_KEY_BODY_LINE})*(?:{_KEY_SEP}?[ \t]*{_KEY_FOOTER})?".encode()
)


_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _starts_a_word(m: re.Match[bytes]) -> bool:
    """The match is not the tail of a longer word (``task-…`` is not an ``sk-…`` key)."""
    start = m.start()
    return start == 0 or m.string[start - 1] not in _WORD_BYTES


def _key_like(m: re.Match[bytes]) -> bool:
    return _starts_a_word(m) and any(48 <= c <= 57 for c in m.group(0))


FAMILIES: tuple[Family, ...] = (
    Family("private_key", PRIVATE_KEY),
    Family(
        "aws_access_key_id",
        re.compile(
            rb"A(?:(?:KIA|SIA)[A-Z0-9]{16}(?![A-Z0-9])(?P<aws_access_key_id>)"
            rb"|Iza[0-9A-Za-z_\-]{35}(?P<google_api_key>))"
        ),
        accept=_starts_a_word,
    ),
    Family(
        "github_token",
        re.compile(
            rb"g(?:h[pousr]_[A-Za-z0-9]{20,255}(?P<github_token>)"
            rb"|ithub_pat_[A-Za-z0-9_]{20,255}(?P<github_token__pat>)"
            rb"|lpat-[A-Za-z0-9_\-]{20,}(?P<gitlab_token>))"
        ),
    ),
    Family("slack_token", re.compile(rb"xox[abposr]-[A-Za-z0-9\-]{10,}")),
    Family("jwt", re.compile(rb"eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*")),
    Family("huggingface_token", re.compile(rb"hf_[A-Za-z0-9]{30,}")),
    Family(
        "api_key",
        re.compile(rb"sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}"),
        accept=_key_like,
    ),
    Family(
        "url_password",
        re.compile(
            # The Slack webhook's path is its secret; the host stays readable.
            rb"://hooks\.slack\.com/(?P<slack_webhook>(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+)"
            # The password runs to the *last* "@" before the host, so "p@ss" is hidden whole.
            rb"|://[^\s/@:\"'<>]*:(?P<url_password>[^\s/\"'<>]+)@(?=[A-Za-z0-9\[])"
        ),
    ),
)
_MARKERS = {
    name: marker_bytes(name.partition("__")[0]) for family in FAMILIES for name in family.names()
}
