"""Recursive-descent parser: filter text → :data:`Expr`, ordering text → :class:`OrderKey` list.

Grammar (keywords are case-insensitive; precedence ``not`` > ``and`` > ``or``)::

    filter    := or_expr EOF
    or_expr   := and_expr ("or" and_expr)*
    and_expr  := not_expr ("and" not_expr)*
    not_expr  := "not" not_expr | "(" or_expr ")" | predicate
    predicate := field ( op value | ["not"] "in" "(" value ("," value)* ")"
                       | ["not"] "like" string | ("~" | "!~") string
                       | "is" ["not"] ("null" | "nan" | "finite") )
    order     := key ("," key)* EOF ;  key := ["-" | "+"] field ["asc" | "desc"]

Why hand-written: each error can name what was expected at the exact offset, and the grammar
fits on one screen.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import NoReturn

from flightlog.errors import FilterSyntaxError
from flightlog.query.ast import (
    And,
    Compare,
    CompareOp,
    Expr,
    Field,
    InList,
    IsNull,
    Not,
    NumberTest,
    Or,
    OrderKey,
    Value,
)
from flightlog.query.fields import check_number_test, check_operator, convert, resolve_field
from flightlog.query.lexer import Token, tokenize

__all__ = ["parse_filter", "parse_order"]

_OPS: dict[str, CompareOp] = {
    "=": "=", "==": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=",
    "~": "~", "!~": "!~",
}  # fmt: skip
_KEYWORDS = {"and", "or", "not", "in", "like", "is", "null", "true", "false", "asc", "desc"}
_AFTER_FIELD = "an operator: = != < <= > >= in, not in, like, ~, is null, is nan, is finite"
MAX_DEPTH = 24
"""How deeply parentheses and ``not`` may nest: far beyond any filter a person writes, far below
what the recursive parser, the SQL compiler and SQLite's expression depth limit can hold."""
MAX_TERMS = 500
"""How many conditions one filter may join with and/or (SQLite nests each in its parse tree)."""


@lru_cache(maxsize=512)
def parse_filter(text: str) -> Expr:
    """Parse a filter such as ``params.lr > 0.01 and status = 'failed'``.

    Raises :class:`~flightlog.errors.FilterSyntaxError` pointing at the offending token.
    Results are cached: the tree is immutable and free of ``now``.
    """
    parser = _Parser(text)
    if parser.peek().kind == "eof":
        parser.fail(parser.peek(), "empty filter", "a condition such as status = 'failed'")
    expr = parser.or_expr()
    parser.expect_end("and, or, or the end of the filter")
    return expr


@lru_cache(maxsize=512)
def parse_order(text: str) -> tuple[OrderKey, ...]:
    """Parse ``-metrics.acc,params.lr`` (``-`` descending, ``+`` or nothing ascending;
    ``asc``/``desc`` after a key work too)."""
    parser = _Parser(text)
    keys: list[OrderKey] = []
    while True:
        descending = False
        token = parser.peek()
        if token.kind == "sign":
            parser.next()
            descending = token.value == "-"
        field = parser.field()
        if parser.keyword("desc"):
            descending = True
        elif parser.keyword("asc"):
            descending = False
        keys.append(OrderKey(field, descending))
        if parser.peek().kind != ",":
            break
        parser.next()
    parser.expect_end("a comma and another key, or the end of the ordering")
    return tuple(keys)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0
        self.terms = 0

    def peek(self) -> Token:
        return self.tokens[self.i]

    def next(self) -> Token:
        token = self.tokens[self.i]
        self.i += min(1, len(self.tokens) - 1 - self.i)
        return token

    def keyword(self, word: str) -> bool:
        token = self.peek()
        if token.kind == "word" and token.text.lower() == word:
            self.next()
            return True
        return False

    def fail(self, token: Token, message: str, expected: str) -> NoReturn:
        raise FilterSyntaxError(message, expression=self.text, position=token.position, expected=expected)

    def found(self, token: Token) -> str:
        return "the end" if token.kind == "eof" else repr(token.text)

    def expect_end(self, expected: str) -> None:
        token = self.peek()
        if token.kind == ")":
            self.fail(token, "unbalanced ')' without a matching '('", expected)
        if token.kind != "eof":
            self.fail(token, f"unexpected {self.found(token)}", expected)

    def or_expr(self) -> Expr:
        items = [self.and_expr()]
        while self.keyword("or"):
            items.append(self.and_expr())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def and_expr(self) -> Expr:
        items = [self.not_expr()]
        while self.keyword("and"):
            items.append(self.not_expr())
        return items[0] if len(items) == 1 else And(tuple(items))

    def not_expr(self) -> Expr:
        token = self.peek()
        if self.keyword("not"):
            with self.nested(token):
                return Not(self.not_expr())
        if token.kind == "(":
            self.next()
            with self.nested(token):
                expr = self.or_expr()
            close = self.peek()
            if close.kind != ")":
                opened = f"the '(' at offset {token.position} is not closed"
                self.fail(close, f"unbalanced parentheses ({opened})", "')', and, or")
            self.next()
            return expr
        self.terms += 1
        if self.terms > MAX_TERMS:
            self.fail(token, f"too many conditions (at most {MAX_TERMS} in one filter)",
                      "fewer conditions: `field in (a, b, ...)` matches a list in one")  # fmt: skip
        return self.predicate()

    @contextmanager
    def nested(self, token: Token) -> Iterator[None]:
        """One more level of parentheses or ``not``, refused past :data:`MAX_DEPTH`."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(token, f"the filter nests parentheses and 'not' too deeply (at most {MAX_DEPTH} levels)",
                      "fewer nested parentheses")  # fmt: skip
        try:
            yield
        finally:
            self.depth -= 1

    def field(self) -> Field:
        token = self.next()
        if token.kind == "word" and token.text.lower() in _KEYWORDS - {"asc", "desc"}:
            self.fail(token, f"found keyword {token.text!r} where a field belongs", "a field")
        return resolve_field(token, self.text)

    def predicate(self) -> Expr:
        field = self.field()
        token = self.next()
        word = token.text.lower() if token.kind == "word" else None
        if word == "is":
            negated = self.keyword("not")
            test = self.peek()
            for name in ("nan", "finite"):
                if self.keyword(name):
                    check_number_test(field, test, self.text)
                    return NumberTest(field, "nan" if name == "nan" else "finite", negated)
            if not self.keyword("null"):
                self.fail(test, f"found {self.found(test)} after 'is'",
                          "null, nan or finite (each may follow not)")  # fmt: skip
            return IsNull(field, negated)
        if word == "not":
            nxt = self.next()
            if nxt.kind == "word" and nxt.text.lower() in ("in", "like"):
                return self.rest(field, nxt, "not " + nxt.text.lower(), negated=True)
            self.fail(nxt, f"found {self.found(nxt)} after 'not'", "in or like")
        if word in ("in", "like"):
            return self.rest(field, token, word, negated=False)
        if token.kind == "op" and token.text in _OPS:
            op = _OPS[token.text]
            check_operator(field, op, token, self.text)
            if self.keyword("null"):
                if op in ("=", "!="):
                    return IsNull(field, negated=op == "!=")
                self.fail(self.tokens[self.i - 1], f"{op} null never matches", "is null, or a value")
            return Compare(field, op, self.value(field, op))
        self.fail(token, f"found {self.found(token)} after {field}", _AFTER_FIELD)

    def rest(self, field: Field, token: Token, op: str, *, negated: bool) -> Expr:
        check_operator(field, op, token, self.text)
        if op.endswith("like"):
            return Compare(field, "not like" if negated else "like", self.value(field, op))
        opening = self.next()
        if opening.kind != "(":
            self.fail(opening, f"found {self.found(opening)} after {op}", "'(' and a list of values")
        values: list[Value] = []
        while True:
            if self.keyword("null"):
                self.fail(self.tokens[self.i - 1], "null cannot be in a list",
                          f"values; write ({field} is null or {field} {op} (...))")  # fmt: skip
            if self.peek().kind == ")":
                self.fail(self.peek(), f"missing value in the list after {op}", "a value")
            values.append(self.value(field, op))
            sep = self.next()
            if sep.kind == "," and self.peek().kind == ")" and values:
                sep = self.next()  # a trailing comma is fine
            if sep.kind == ")":
                return InList(field, tuple(values), negated)
            if sep.kind != ",":
                self.fail(sep, f"found {self.found(sep)} in the list after {op}", "',' or ')'")

    def value(self, field: Field, op: str) -> Value:
        return convert(field, op, self.next(), self.text)
