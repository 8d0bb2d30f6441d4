"""The server's JSON documents: NaN and infinities as strings wherever they sit, whichever path
the encoder takes (the fast one skips the Python walk when msgpack's bytes show no such float)."""

import json
import math

import pytest

from flightlog.server.responses import json_bytes


@pytest.mark.parametrize(
    ("value", "text"),
    [(math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity")],
)
def test_a_non_finite_float_deep_in_a_document_is_a_string(value: float, text: str) -> None:
    doc = {"runs": [{"data": {"metrics": [{"key": "loss", "value": 0.25}, {"key": "acc", "value": value}]}}] * 3}
    back = json.loads(json_bytes(doc))
    assert [m["value"] for m in back["runs"][2]["data"]["metrics"]] == [0.25, text]


def test_finite_extremes_and_text_that_looks_like_bytes_come_back_as_they_were() -> None:
    doc = {
        "big": 1.7976931348623157e308,
        "small": -1.7976931348623157e308,
        "tiny": 5e-324,
        "text": "\u02ff\u02c0 ˿ naïve 日本",  # UTF-8 lead bytes 0xcb and 0xca
        "none": None,
        "ints": [0, -1, 2**63 - 1],
        "keys": {1: "one"},
    }
    back = json.loads(json_bytes(doc))
    assert back == {**doc, "keys": {"1": "one"}}


def test_a_value_msgpack_cannot_carry_still_encodes() -> None:
    assert json.loads(json_bytes({"huge": 2**70, "nan": math.nan})) == {"huge": 2**70, "nan": "NaN"}
