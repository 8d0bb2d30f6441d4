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

from flightlog.redaction.keyblocks import HEADER, PRIVATE_KEY, KeyBlock, key_block

__all__ = ["Family", "FAMILIES", "PRIVATE_KEY", "marker", "marker_bytes", "splice"]


def marker(name: str) -> str:
    """What a redacted value is replaced with: ``[REDACTED:github_token]``."""
    return f"[REDACTED:{name}]"


def marker_bytes(name: str) -> bytes:
    return marker(name).encode()


def splice(data: bytes, cuts: list[tuple[int, int, bytes]]) -> tuple[bytes, int]:
    """``data`` with each span ``(start, end, replacement)`` replaced (``b""`` removes it), and
    the number of non-empty replacements. A span that starts inside one already replaced (the
    same line claimed by two key blocks, a bearer token inside a header's value) adds nothing
    but hides whatever of it lies past that one. ``cuts`` is sorted in place. Returns ``data``
    itself when there is nothing to cut."""
    if not cuts:
        return data, 0
    cuts.sort()
    parts: list[bytes] = []
    pos = 0
    count = 0
    for start, end, replacement in cuts:
        if start < pos:
            pos = max(pos, end)
            continue
        parts.append(data[pos:start])
        parts.append(replacement)
        count += bool(replacement)
        pos = end
    parts.append(data[pos:])
    return b"".join(parts), count


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
    block: Callable[[bytes, int], KeyBlock] | None = None
    """For secrets over several lines whose extent a regex cannot say (a private key whose
    every line has a prefix): ``pattern`` finds the start, this says which spans to hide."""

    def apply(self, data: bytes) -> tuple[bytes, int]:
        if self.pattern.search(data) is None:  # nearly always: one scan in C, nothing built in Python
            return data, 0
        if self.block is not None:
            return self._apply_blocks(data, self.block)
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
            return string[m.start() : m.start(group)] + _MARKERS[group] + string[m.end(group) : m.end()]

        return self.pattern.sub(replace, data), count

    def _apply_blocks(self, data: bytes, find: Callable[[bytes, int], KeyBlock]) -> tuple[bytes, int]:
        """The first span of each block becomes the marker; its other spans are removed."""
        cuts: list[tuple[int, int, bytes]] = []
        hidden_to = 0
        for m in self.pattern.finditer(data):
            start = m.start()
            if start < hidden_to or any(s <= start < e for s, e, _ in cuts):
                continue  # inside a block already hidden
            spans = find(data, start).spans
            first_start, first_end = spans[0]
            cuts.append((first_start, max(first_end, m.end()), marker_bytes(self.name)))
            cuts.extend((s, e, b"") for s, e in spans[1:])
            hidden_to = max(first_end, m.end())
        return splice(data, cuts)

    def names(self) -> list[str]:
        """The families this pattern covers (its named groups, or its name).

        A group named ``family__variant`` is another shape of ``family`` (group names must be
        unique in a pattern, marker names need not be)."""
        return list(self.pattern.groupindex) or [self.name]


_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _starts_a_word(m: re.Match[bytes]) -> bool:
    """The match is not the tail of a longer word (``task-…`` is not an ``sk-…`` key)."""
    start = m.start()
    return start == 0 or m.string[start - 1] not in _WORD_BYTES


def _key_like(m: re.Match[bytes]) -> bool:
    return _starts_a_word(m) and any(48 <= c <= 57 for c in m.group(0))


FAMILIES: tuple[Family, ...] = (
    Family("private_key", HEADER, block=key_block),
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
    # Stripe's secret and restricted keys, live or test (a test key still opens the account's
    # test data); its publishable ``pk_`` keys are public by design. The vendors' tokens below
    # each have a prefix no ordinary word has and a body of a fixed shape (``npm_config_cache``
    # and "SG. Smith" lack it). One family per prefix: a pattern that starts with a choice of
    # characters rather than a literal costs ten times as much on every chunk.
    Family("stripe_key", re.compile(rb"sk_(?:live|test)_[A-Za-z0-9]{24,}"), accept=_key_like),
    Family("stripe_key", re.compile(rb"rk_(?:live|test)_[A-Za-z0-9]{24,}"), accept=_key_like),
    Family("stripe_webhook_secret", re.compile(rb"whsec_[A-Za-z0-9+/]{24,}"), accept=_key_like),
    Family("npm_token", re.compile(rb"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])"), accept=_key_like),
    Family("pypi_token", re.compile(rb"pypi-[A-Za-z0-9_\-]{50,}"), accept=_key_like),
    Family(
        "sendgrid_key",
        re.compile(rb"SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,64}"),
        accept=_starts_a_word,
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
_MARKERS = {name: marker_bytes(name.partition("__")[0]) for family in FAMILIES for name in family.names()}
