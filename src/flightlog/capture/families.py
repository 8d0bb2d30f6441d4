"""The catalogue of secrets recognised by their *shape*: tokens, keys, JWTs, URL passwords.

Each family is one regular expression plus, where the expression itself cannot be searched
quickly, a few literal *needles*: ``"AKIA" in text`` costs a fraction of a nanosecond per
byte, so a 64 KiB chunk without any candidate passes every family almost for free. Patterns
that begin with a literal (``glpat-``, ``eyJ``, ``://``) need no needle, because the regex
engine already skips ahead to that literal.

Secrets recognised by their *name* (``password=...``) live in ``assignments.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Family", "FAMILIES", "PRIVATE_KEY", "marker"]


def marker(name: str) -> str:
    """What a redacted value is replaced with: ``[REDACTED:github_token]``."""
    return f"[REDACTED:{name}]"


@dataclass(frozen=True, slots=True)
class Family:
    """One kind of secret. ``group`` is the part replaced (0: the whole match).

    ``accept`` can veto a match that has the right shape but is ordinary text.
    """

    name: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...] = ()
    group: int = 0
    accept: Callable[[str], bool] | None = None

    def apply(self, text: str) -> tuple[str, int]:
        if self.needles and not any(needle in text for needle in self.needles):
            return text, 0
        if self.group == 0 and self.accept is None:
            return self.pattern.subn(marker(self.name), text)
        count = 0
        group = self.group
        accept = self.accept
        replacement = marker(self.name)

        def replace(m: re.Match[str]) -> str:
            nonlocal count
            value = m.group(group)
            if value.startswith("[REDACTED") or (accept is not None and not accept(value)):
                return m.group(0)
            count += 1
            start = m.start()
            return m.string[start : m.start(group)] + replacement + m.string[m.end(group) : m.end()]

        return self.pattern.sub(replace, text), count


# A line break inside a key block: a real newline, or ``\n`` escaped inside a JSON string.
_KEY_SEP = r"(?:\r?\n|\\r?\\n)"
_KEY_BODY_LINE = r"[ \t]*(?:[A-Za-z0-9+/=]+|(?:Proc-Type|DEK-Info|Comment|Version):[^\n\\]*)?[ \t]*"
_KEY_HEADER = r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
_KEY_FOOTER = r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"

#: A private key block: the header, the base64 body lines, and the footer when it is there.
#: Without a footer the block ends at the first line that is not base64, so an unterminated
#: key is still hidden while ordinary text after it is not.
PRIVATE_KEY = re.compile(
    rf"{_KEY_HEADER}(?:{_KEY_SEP}{_KEY_BODY_LINE})*(?:{_KEY_SEP}?[ \t]*{_KEY_FOOTER})?"
)


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


FAMILIES: tuple[Family, ...] = (
    Family("private_key", PRIVATE_KEY, needles=("PRIVATE KEY",)),
    Family(
        "aws_access_key_id",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
        needles=("AKIA", "ASIA"),
    ),
    Family("github_token", re.compile(r"gh(?:[pousr]_[A-Za-z0-9]{20,255}|ithub_pat_[A-Za-z0-9_]{20,255})")),
    Family("gitlab_token", re.compile(r"glpat-[A-Za-z0-9_\-]{20,}")),
    Family("slack_token", re.compile(r"xox[abposr]-[A-Za-z0-9\-]{10,}")),
    Family(
        "slack_webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]+"),
    ),
    Family("jwt", re.compile(r"eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*")),
    Family("huggingface_token", re.compile(r"hf_[A-Za-z0-9]{30,}")),
    Family(
        "api_key",
        re.compile(r"(?<![A-Za-z0-9_\-])sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}"),
        needles=("sk-",),
        accept=_has_digit,
    ),
    Family("google_api_key", re.compile(r"AIza[0-9A-Za-z_\-]{35}")),
    Family(
        "url_password",
        # The password runs to the *last* "@" before the host, so "p@ss" is hidden whole.
        re.compile(r"://[^\s/@:\"'<>]*:([^\s/\"'<>]+)@(?=[A-Za-z0-9\[])"),
        group=1,
    ),
)
