"""Personal data recognised by its shape: e-mail addresses, phone numbers, payment card numbers,
national ids of the common formats (a US social security number, a UK national insurance
number), IBANs — the ``personal`` family, ``[REDACTED:email]``, ``[REDACTED:phone]``, …

Off by default: a training run's logs rarely hold a customer's data, and a phone-shaped number
in a training log is more often an id than a phone. On for a serving process
(``flightlog.serving.attach``: ``process.redact_personal_data``), whose own log lines are
written while it handles the requests of people ("scored the request of alice@example.com").
Counted like every other redaction (``Redactor.count``).

Each pattern is anchored on what it cannot do without (``@`` for an e-mail, a digit for the
rest), and the numbers whose shape others share are checked before they are hidden: a card
number by its Luhn digit, an IBAN by its mod-97 check, so an order id of 16 digits or a
build number is left alone. Bounded quantifiers only: linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from flightlog.redaction.families import marker_bytes, splice

__all__ = ["PERSONAL_KINDS", "redact_personal"]


def _luhn(m: re.Match[bytes]) -> bool:
    digits = [d - 48 for d in m.group(0) if 48 <= d <= 57]
    if not 13 <= len(digits) <= 19:
        return False
    total = 0
    for i, d in enumerate(reversed(digits)):
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _iban(m: re.Match[bytes]) -> bool:
    text = m.group(0).decode("ascii").replace(" ", "")
    moved = text[4:] + text[:4]
    try:
        return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1
    except ValueError:
        return False


def _ssn(m: re.Match[bytes]) -> bool:
    area, group, serial = m.group(0).split(b"-")
    return area not in (b"000", b"666") and not area.startswith(b"9") and group != b"00" and serial != b"0000"


_EDGE = rb"(?<![\w@.+-])"  # not the middle of a longer word, number or address
# (name, pattern, check): the marker names the kind
_RULES: tuple[tuple[str, re.Pattern[bytes], Callable[[re.Match[bytes]], bool] | None], ...] = (
    (
        "email",
        re.compile(rb"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}\b"),
        None,
    ),
    ("iban", re.compile(_EDGE + rb"[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"), _iban),
    ("card_number", re.compile(_EDGE + rb"\d(?:[ -]?\d){12,18}\b"), _luhn),
    ("national_id", re.compile(_EDGE + rb"\d{3}-\d{2}-\d{4}\b"), _ssn),  # a US SSN
    ("national_id", re.compile(rb"\b[A-CEGHJ-PR-TW-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"), None),  # a UK NINO
    (
        "phone",
        re.compile(
            _EDGE + rb"(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,4}"
            rb"|\(\d{3}\) ?\d{3}[ .-]\d{4}|\d{3}[.-]\d{3}[.-]\d{4})\b"
        ),
        None,
    ),  # fmt: skip
)

PERSONAL_KINDS = tuple(dict.fromkeys(name for name, _, _ in _RULES))


def redact_personal(data: bytes) -> tuple[bytes, int]:
    """``data`` with every personal datum replaced by its marker, and how many were."""
    total = 0
    for name, pattern, check in _RULES:
        if name == "email" and b"@" not in data:
            continue
        cuts = []
        for m in pattern.finditer(data):  # a marker holds no "@" and no digit: a second pass finds nothing
            if check is None or check(m):
                cuts.append((m.start(), m.end(), marker_bytes(name)))
        if cuts:
            data, n = splice(data, cuts)
            total += n
    return data, total
