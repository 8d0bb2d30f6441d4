from __future__ import annotations

import pytest

from flightlog.errors import FilterSyntaxError
from flightlog.query import (
    Ago,
    And,
    Compare,
    Field,
    InList,
    IsNull,
    Not,
    NumberTest,
    Or,
    OrderKey,
    parse_filter,
    parse_order,
)

LR = Field("param", "lr")
STATUS = Field("column", "status")


def cmp(text: str) -> Compare:
    expr = parse_filter(text)
    assert isinstance(expr, Compare)
    return expr


def test_the_example_from_the_guide() -> None:
    assert parse_filter("params.lr > 0.01 and status = 'failed' and tags.team = 'vision'") == And(
        (Compare(LR, ">", 0.01), Compare(STATUS, "=", "failed"),
         Compare(Field("tag", "team"), "=", "vision"))
    )  # fmt: skip


@pytest.mark.parametrize(
    ("text", "op"),
    [("=", "="), ("==", "="), ("!=", "!="), ("<>", "!="), ("<", "<"), ("<=", "<="),
     (">", ">"), (">=", ">=")],
)  # fmt: skip
def test_comparison_operators(text: str, op: str) -> None:
    assert parse_filter(f"params.lr {text} 1") == Compare(LR, op, 1)  # type: ignore[arg-type]


def test_precedence_not_over_and_over_or() -> None:
    a, b, c = (Compare(Field("column", n), "=", 1) for n in ("attempt", "exit_code", "signal"))
    assert parse_filter("attempt = 1 or exit_code = 1 and signal = 1") == Or((a, And((b, c))))
    assert parse_filter("not attempt = 1 and exit_code = 1") == And((Not(a), b))
    assert parse_filter("(attempt = 1 or exit_code = 1) and signal = 1") == And((Or((a, b)), c))
    assert parse_filter("not not attempt = 1") == Not(Not(a))
    assert parse_filter("NOT (attempt = 1 OR exit_code = 1)") == Not(Or((a, b)))


def test_keywords_fields_and_prefixes_are_case_insensitive() -> None:
    assert parse_filter("Status = 'failed' AND Params.lr > 1") == And(
        (Compare(STATUS, "=", "failed"), Compare(LR, ">", 1))
    )
    assert cmp("status = 'FAILED'").value == "failed"
    assert cmp("metric.acc > 0.5").field == Field("metric", "acc")  # singular prefixes too
    assert cmp("params.LR > 1").field.name == "LR"  # keys keep their case


def test_lists_patterns_and_nulls() -> None:
    assert parse_filter("status in ('failed', 'crashed',)") == InList(STATUS, ("failed", "crashed"))
    assert parse_filter("params.bs not in (32, 64)") == InList(Field("param", "bs"), (32, 64), negated=True)
    assert cmp("name like 'resnet%'").op == "like"
    assert cmp("name not like 'resnet%'").op == "not like"
    assert cmp("name ~ 'res'") == Compare(Field("column", "name"), "~", "res")
    assert cmp("name !~ 'res'").op == "!~"
    assert parse_filter("params.lr is null") == IsNull(LR)
    assert parse_filter("params.lr is not null") == IsNull(LR, negated=True)
    assert parse_filter("params.lr = null") == IsNull(LR)
    assert parse_filter("params.lr != null") == IsNull(LR, negated=True)


def test_nan_and_finite_tests_on_metrics() -> None:
    loss = Field("metric", "loss")
    assert parse_filter("metrics.loss is nan") == NumberTest(loss, "nan")
    assert parse_filter("metrics.loss IS NOT NaN") == NumberTest(loss, "nan", negated=True)
    assert parse_filter("metrics.loss is finite") == NumberTest(loss, "finite")
    assert parse_filter("metrics.loss is not finite") == NumberTest(loss, "finite", negated=True)
    assert parse_filter("not metrics.loss is nan") == Not(NumberTest(loss, "nan"))


def test_field_names() -> None:
    assert cmp("params.optimizer.lr > 1").field == Field("param", "optimizer.lr")
    assert cmp("params.`batch size` = 32").field == Field("param", "batch size")
    assert cmp("metrics.val/loss < 1").field == Field("metric", "val/loss")
    assert cmp("metrics.`val/loss` < 1").field == Field("metric", "val/loss")
    assert cmp("tags.`owner-team` = 'x'").field == Field("tag", "owner-team")
    assert cmp("parent = 'abc'").field == Field("column", "parent")


def test_literals_are_converted_for_their_field() -> None:
    assert cmp("params.flag = true").value is True
    assert cmp("params.flag != FALSE").value is False
    assert cmp("params.name = 'x'").value == "x"
    assert cmp("params.lr > '0.01'").value == 0.01  # ordering: a numeric string is a number
    assert cmp("params.lr = '0.01'").value == "0.01"  # equality: text as written
    assert cmp("metrics.acc > '0.5'").value == 0.5
    assert cmp("tags.gpus = 4").value == "4"  # tags are text: the literal as written
    assert cmp("tags.debug = true").value == "true"
    assert cmp("duration > 1h").value == 3600.0
    assert cmp("duration > 90").value == 90
    assert cmp("duration > '1h30m'").value == 5400.0
    assert cmp("created > '2026-11-01'").value == 1793491200.0
    assert cmp("ended < '2026-11-30T12:00:00Z'").value == 1796040000.0
    assert cmp("created > 1700000000").value == 1700000000.0
    assert cmp("created > 7d").value == Ago(604800.0)
    assert cmp("started < '2h'").value == Ago(7200.0)
    assert cmp("signal = 'SIGTERM'").value == 15
    assert cmp("signal = 'kill'").value == 9
    assert cmp("exit_code = -9").value == -9
    assert cmp("end_reason = 'OOM_KILLED'").value == "oom_killed"
    assert cmp("params.timeout > 30m").value == 1800.0


def test_parsing_is_cached_and_hashable() -> None:
    assert parse_filter("status = 'failed'") is parse_filter("status = 'failed'")
    assert hash(parse_filter("params.lr in (1, 2)"))


def test_order_keys() -> None:
    acc, lr = Field("metric", "acc"), Field("param", "lr")
    assert parse_order("-metrics.acc,params.lr") == (OrderKey(acc, True), OrderKey(lr, False))
    assert parse_order("+params.lr , created DESC") == (
        OrderKey(lr), OrderKey(Field("column", "created"), True)
    )  # fmt: skip
    assert parse_order("-created asc") == (OrderKey(Field("column", "created"), False),)
    assert parse_order("metrics.`val/loss`") == (OrderKey(Field("metric", "val/loss")),)


def error(text: str, *, order: bool = False) -> FilterSyntaxError:
    with pytest.raises(FilterSyntaxError) as info:
        (parse_order if order else parse_filter)(text)
    return info.value


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("", 0, "empty filter"),
        ("lr > 0.1", 0, "unknown field 'lr' (did you mean params.lr?)"),
        ("stauts = 'failed'", 0, "did you mean 'status'?"),
        ("foo.bar = 1", 0, "unknown field 'foo.bar'"),
        ("`batch size` = 1", 0, "without a prefix"),
        ("params > 1", 0, "'params' needs a key"),
        ("and = 1", 0, "keyword 'and'"),
        ("1h > 2", 0, "where a field belongs"),
        ("params.lr", 9, "found the end after params.lr"),
        ("params.lr 3", 10, "found '3' after params.lr"),
        ("params.lr >", 11, "missing value after >"),
        ("params.lr > and", 12, "missing value"),
        ("params.lr > )", 12, "missing value"),
        ("(status = 'failed'", 18, "unbalanced parentheses"),
        ("((status = 'failed')", 20, "the '(' at offset 0 is not closed"),
        ("status = 'failed')", 17, "unbalanced ')'"),
        ("status = 'failed' params.lr > 1", 18, "unexpected 'params.lr'"),
        ("status = 'failed' or", 20, "found the end where a field belongs"),
        ("status > 3", 7, "status is text and cannot be compared with >"),
        ("status = 'faild'", 9, "unknown status 'faild'"),
        ("status in ('failed', 'bogus')", 21, "unknown status"),
        ("tags.team < 'x'", 10, "tags.team is text"),
        ("metrics.acc ~ 'x'", 12, "metrics.acc is a number"),
        ("exit_code like '1%'", 10, "is a number"),
        ("metrics.acc > 'high'", 14, "compared as a number"),
        ("metrics.acc > true", 14, "cannot be compared with true"),
        ("params.lr > 'fast'", 12, "compared as a number"),
        ("params.flag > true", 14, "cannot be compared with true"),
        ("created > 'yesterday'", 10, "invalid time 'yesterday'"),
        ("created > true", 10, "cannot be compared with true"),
        ("duration > 'long'", 11, "invalid duration 'long'"),
        ("exit_code = 'one'", 12, "compared as a number"),
        ("signal = 'SIGNOPE'", 9, "unknown signal"),
        ("name like 5", 10, "like needs a quoted pattern"),
        ("name like 'a\\\\'", 10, "lone backslash"),
        ("params.lr in 1", 13, "found '1' after in"),
        ("params.lr in (1 2)", 16, "in the list"),
        ("params.lr in (1,", 16, "missing value"),
        ("params.lr in (null)", 14, "null cannot be in a list"),
        ("params.lr in ()", 14, "missing value in the list after in"),
        ("params.lr not in (1, , 2)", 21, "missing value"),
        ("params.lr not 1", 14, "after 'not'"),
        ("params.lr is 1", 13, "after 'is'"),
        ("metrics.loss is", 15, "found the end after 'is'"),
        ("metrics.loss is not infinite", 20, "found 'infinite' after 'is'"),
        ("params.lr is nan", 13, "is nan tests metrics only, not params.lr"),
        ("tags.team is not finite", 17, "tags.team is a tag (text) and never NaN"),
        ("exit_code is nan", 13, "exit_code is a column of the run and never NaN"),
        ("metrics.loss = nan", 15, "nan is not a value to compare with"),
        ("params.lr != NaN", 13, "NaN is not a value to compare with"),
        ("params.lr < null", 12, "< null never matches"),
        ("status = 'failed' && params.lr > 1", 18, "unexpected character '&'"),
    ],
)
def test_errors_point_at_the_offending_token(text: str, position: int, message: str) -> None:
    err = error(text)
    assert err.position == position, err.message
    assert message in err.message
    assert err.details == {"expression": text, "position": position, "expected": err.expected}
    assert err.code == "invalid_filter"
    assert err.message.endswith(f"\n  {text}\n  {' ' * position}^")


def test_unknown_field_lists_every_valid_field() -> None:
    err = error("stauts = 'failed'")
    for name in ("status", "duration", "exit_code", "params.<key>", "tags.<key>", "metrics.<name>"):
        assert name in err.expected


@pytest.mark.parametrize(
    ("text", "position", "message"),
    [
        ("", 0, "found the end"),
        ("-", 1, "found the end"),
        ("-accuracy", 1, "unknown field 'accuracy'"),
        ("metrics.acc,", 12, "found the end"),
        ("metrics.acc params.lr", 12, "unexpected 'params.lr'"),
        ("metrics.acc desc desc", 17, "unexpected 'desc'"),
    ],
)
def test_order_errors(text: str, position: int, message: str) -> None:
    err = error(text, order=True)
    assert err.position == position
    assert message in err.message


@pytest.mark.parametrize("key", ["lr", "optimizer.lr", "batch size", "val/loss", "a`b\\c", "x.y z"])
def test_fields_print_as_they_parse(key: str) -> None:
    field = Field("param", key)
    assert cmp(f"{field} = 1").field == field
