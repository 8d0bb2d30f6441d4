from __future__ import annotations

import pytest

from flightlog.errors import FilterSyntaxError
from flightlog.query.lexer import tokenize


def kinds(text: str) -> list[tuple[str, object]]:
    return [(t.kind, t.value) for t in tokenize(text)[:-1]]


def test_tokens_carry_their_offsets() -> None:
    tokens = tokenize("params.lr >= 0.01")
    assert [(t.kind, t.position) for t in tokens] == [
        ("path", 0), ("op", 10), ("number", 13), ("eof", 17)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("'it\\'s'", "it's"),
        ('"say \\"hi\\""', 'say "hi"'),
        ("'a\\\\b'", "a\\b"),
        ("'tab\\there'", "tab\there"),
        ("'50\\%'", "50\\%"),  # unknown escapes keep the backslash for LIKE
        ("''", ""),
        ("'naïve ü'", "naïve ü"),
    ],
)
def test_strings_decode_escapes(text: str, value: str) -> None:
    assert kinds(text) == [("string", value)]


@pytest.mark.parametrize(
    ("text", "value"),
    [("3", 3), ("-3", -3), ("0.25", 0.25), (".5", 0.5), ("1e-3", 0.001), ("-2.5E2", -250.0)],
)
def test_numbers(text: str, value: float) -> None:
    assert kinds(text) == [("number", value)]
    assert isinstance(tokenize(text)[0].value, type(value))


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90.0), ("30m", 1800.0), ("1h30m", 5400.0), ("1.5h", 5400.0),
                          ("250ms", 0.25), ("7d", 604800.0), ("2W", 1209600.0)],
)  # fmt: skip
def test_durations(text: str, seconds: float) -> None:
    assert kinds(text) == [("duration", seconds)]


@pytest.mark.parametrize(
    ("text", "prefix", "key"),
    [
        ("params.lr", "params", "lr"),
        ("params.optimizer.lr", "params", "optimizer.lr"),
        ("params.`batch size`", "params", "batch size"),
        ("metrics.val/loss", "metrics", "val/loss"),
        ("metrics.`val/loss`", "metrics", "val/loss"),
        ("params.warmup-steps", "params", "warmup-steps"),
        ("params.optimizer.`beta 1`", "params", "optimizer.beta 1"),
        ("tags.`it\\`s`", "tags", "it`s"),
    ],
)
def test_paths(text: str, prefix: str, key: str) -> None:
    assert kinds(text) == [("path", (prefix, key))]


def test_operators_and_punctuation() -> None:
    ops = "= == != <> < <= > >= ~ !~"
    assert [t.value for t in tokenize(ops)[:-1]] == ops.split()
    assert [t.kind for t in tokenize("(a, b)")[:-1]] == ["(", "word", ",", "word", ")"]
    assert [t.kind for t in tokenize("-metrics.acc,+created")[:-1]] == [
        "sign", "path", ",", "sign", "word"
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "position", "fragment"),
    [
        ("name = 'abc", 7, "unterminated string"),
        ('name = "abc', 7, "unterminated string"),
        ("params.`abc", 7, "unterminated key"),
        ("params.`` = 1", 7, "empty key"),
        ("params. = 1", 7, "missing key"),
        ("a && b", 2, "unexpected character '&'"),
        ("x | y", 2, "unexpected character '|'"),
        ("lr ! 3", 3, "unexpected character '!'"),
        ("x = 1e", 4, "invalid number or duration '1e'"),
        ("x = 5parsecs", 4, "invalid number or duration"),
        ("x = -5m", 4, "invalid number or duration '-5m'"),
        ("x = 1.2.3", 4, "invalid number"),
        ("x = @", 4, "unexpected character '@'"),
        ("x = \u00b96", 4, "unexpected character '\u00b9'"),  # a digit to str.isdigit, not to a number
        ("x = 1\u0663", 5, "unexpected character"),  # Arabic-Indic digits are not numbers here either
    ],
)
def test_lexical_errors_point_at_the_token(text: str, position: int, fragment: str) -> None:
    with pytest.raises(FilterSyntaxError) as info:
        tokenize(text)
    assert info.value.position == position
    assert fragment in info.value.message
    assert info.value.details["position"] == position
