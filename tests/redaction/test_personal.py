"""The personal family: e-mail addresses, phone numbers, card numbers (Luhn), national ids (a US
SSN, a UK NINO) and IBANs (mod 97) hidden by their shape, counted like secrets; off unless a
process turns it on (a serving process does), and numbers of the same shape left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from flightlog.redaction import personal_data_redacted, redact_personal_data, redactor
from flightlog.redaction.engine import Redactor


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("scored alice.smith+fraud@example.co.uk", "scored [REDACTED:email]"),
        ("ssn 123-45-6789, nino AB 12 34 56 C", "ssn [REDACTED:national_id], nino [REDACTED:national_id]"),
        ("card 4111 1111 1111 1111 paid", "card [REDACTED:card_number] paid"),
        ("call +44 20 7946 0958 or (415) 555-2671", "call [REDACTED:phone] or [REDACTED:phone]"),
        ("to DE89 3704 0044 0532 0130 00", "to [REDACTED:iban]"),
    ],
)
def test_personal_data_is_hidden_by_its_shape(text: str, expected: str) -> None:
    red = Redactor(env={}, personal=True)
    assert red.redact(text) == expected
    assert red.count == expected.count("[REDACTED")
    assert red.redact(expected) == expected, "a second pass changes nothing"


@pytest.mark.parametrize(
    "text",
    [
        "order 1234567890123456 (no Luhn digit), build 4111111111111112",
        "at 2026-12-05 12:00:01 step 17-3f2a6b1c2d version 1.2.3 from 10.0.0.1 took 415.5 ms",
        "ssn-shaped but never issued: 000-12-3456, 666-12-3456, 912-34-5678",
        "GB00NOTANIBAN1234567",
    ],
)
def test_numbers_of_the_same_shape_are_left_alone(text: str) -> None:
    assert Redactor(env={}, personal=True).redact(text) == text


def test_off_unless_the_process_turns_it_on(tmp_path: Path) -> None:
    line = "scored bob@example.com"
    assert Redactor(env={}).redact(line) == line
    assert not personal_data_redacted()
    try:
        redact_personal_data()
        assert redactor(tmp_path).redact(line) == "scored [REDACTED:email]"
    finally:
        redact_personal_data(False)
    assert redactor(tmp_path).redact(line) == line
