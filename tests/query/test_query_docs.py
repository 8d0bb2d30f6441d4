"""Every example in docs/filters.md parses, and the pasted error is what the code says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flightlog.errors import FilterSyntaxError
from flightlog.query import parse_filter, parse_order

DOC = (Path(__file__).parents[2] / "docs" / "filters.md").read_text()


def block_after(heading: str) -> list[str]:
    section = DOC.split(heading, 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.S)
    assert block is not None
    return [re.split(r"\s{2,}", line)[0] for line in block.group(1).splitlines() if line]


@pytest.mark.parametrize("text", block_after("## Examples"))
def test_filter_examples_parse(text: str) -> None:
    parse_filter(text)


@pytest.mark.parametrize("text", block_after("## Ordering"))
def test_order_examples_parse(text: str) -> None:
    parse_order(text)


def test_pasted_errors_are_real() -> None:
    for text in ("params.lr > 0.01 and stauts = 'failed'", "created > 'yesterday'",
                 "metrics.acc > 0.9 and (status = 'failed' or tags.team = 'vision'",
                 "params.lr is nan"):  # fmt: skip
        with pytest.raises(FilterSyntaxError) as info:
            parse_filter(text)
        assert info.value.message in DOC
