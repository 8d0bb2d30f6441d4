"""A record is checked by its kind's Struct and ``validate()``: good ones pass, bad ones say what was wrong."""

from __future__ import annotations

from array import array
from typing import Any

import msgspec
import pytest

from flightlog.logevents import LogBatch
from flightlog.schema import Bad, Record, check_record, known_kinds, record, register_kind
from flightlog.schema.kinds import Metrics, Run
from flightlog.schema.values import encode_series, log_chunk_payload

ENV = {"r": "run-1", "w": "w1", "s": 1, "t": 1_700_000_000.0}


def rec(kind: str, /, **fields: Any) -> dict[str, Any]:
    return record(kind, **ENV, **fields)


def test_every_kind_written_today_passes_and_comes_back_as_its_struct() -> None:
    logs = LogBatch()
    logs.append(time=1_700_000_000.0, stream="stdout", level=20, message="hi")
    good = [
        rec("writer", host="h", pid=1, owner=True, attempt=1, pstart=1.0, boot=2.0),
        rec(
            "writer",
            host="h",
            pid=2,
            owner=False,
            attempt=1,
            rank=1,
            local_rank=1,
            world_size=2,
            node_rank=0,
            local_world_size=2,
            restart=0,
            launcher="torchrun",
            job="torchrun:abc",
            peer=True,
        ),
        rec("writer_end"),
        rec("writer_end", status="failed", end_reason="exception", exit_code=1, failure={"message": "boom"}),
        rec("heartbeat"),
        rec("writer_lost", writer="w2", at=1_700_000_000.0, reason="its process is gone"),
        rec(
            "run",
            project="p",
            status="running",
            started=1_700_000_000.0,
            ended=None,
            exit_code=None,
            timeline={"process_start": 1_700_000_000.0},
        ),
        rec("timeline", data={"heartbeat": 1_700_000_000.0}),
        rec("params", data={"lr": 0.1, "cfg": {"a": [1, 2]}}),
        rec("tags", data={"a": "b", "gone": None}),
        rec("note", text="hello", author=None),
        rec("context", data={"pid": 1}),
        rec(
            "metrics", attempt=1, series={"loss": encode_series(array("q", [0]), array("d", [1.0]), array("d", [0.5]))}
        ),
        rec("logs", **log_chunk_payload(logs)),
        rec("spans", spans=[["load", 1.0, 2.0, 1, True, None]]),
        rec(
            "stage_stats",
            stats={
                "load": {
                    "count": 1,
                    "total": 1.0,
                    "min": 1.0,
                    "max": 1.0,
                    "first_start": 1.0,
                    "last_end": 2.0,
                    "hist": [1, 0],
                }
            },
        ),
        rec("resources", samples=[{"time": 1_700_000_000.0, "cpu": 50.0}]),
        rec("artifact", role="output", kind="file", path="model/w.bin", size=3, attempt=1),
        rec("counters", data={"dropped": 2}),
        rec("evidence", kind="manifest", name="train", data={"rows": 3}),
    ]
    assert {r["k"] for r in good} == set(known_kinds())
    for r in good:
        checked = check_record(msgspec.msgpack.decode(msgspec.msgpack.encode(r)))
        assert isinstance(checked, known_kinds()[r["k"]])
        assert checked.r == "run-1" and checked.s == 1


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (rec("note", text=42), "text: expected `str`, got `int`"),
        (rec("spans", spans=[["x", "start", 2.0, 1, False, None]]), "spans[0][1]: expected `float`, got `str`"),
        (rec("run", exit_code=2**63 + 5), "exit_code: expected `int` <= 9223372036854775807"),
        ({**rec("run"), "s": 0}, "s (the sequence number) must be a whole number ≥ 1"),
        ({**rec("run"), "r": "../etc"}, "r (the run id) must be letters"),
        ({"k": "run", "r": "a", "s": 1, "t": 1.0}, "w (the writer id) must be a string of 1 to 128 characters"),
        (rec("run", ended=1e300), "ended 1e+300 is not a time"),
        (rec("run", status="done"), "status 'done' is not one of created"),
        (rec("params", data={"b": b"x"}), "data holds a bytes, which cannot be stored"),
        (rec("counters", data={"c": float("nan")}), "counter 'c' must be finite"),
        (rec("metrics", series={"a\nb": [b"", b"", b""]}), "contains the control character"),
        (
            rec("logs", n=1, t0=1.0, t1=1.0, maxlvl=20, attempts="1", data=msgspec.msgpack.encode({"time": [1.0]})),
            "the log chunk needs the columns time, stream",
        ),
        (rec("stage_stats", stats={"a": {"count": 1}}), "stats[...]: object missing required field `total`"),
        (rec("artifact", role="output", path="../x"), "artifact path '../x' has an empty, '.' or '..' part"),
        (rec("writer", rank=2, world_size=2), "rank 2 is not below the world size 2"),
        (rec("writer", rank=-1), "rank: expected `int` >= 0"),
        (rec("writer_end", status="exploded"), "status 'exploded' is not one of succeeded"),
        (rec("writer_lost", writer=""), "writer: expected `str` of length >= 1"),
        ({"k": "nope", **ENV}, "unknown record kind 'nope'"),
        ("not a map", "a record must be a map"),
    ],
)
def test_a_bad_record_is_refused_with_what_was_wrong_and_where(bad: Any, says: str) -> None:
    with pytest.raises(Bad) as caught:
        check_record(bad)
    assert says in str(caught.value)


def test_a_run_record_keeps_the_fields_it_leaves_out_unset() -> None:
    checked = check_record(rec("run", status="failed"))
    assert isinstance(checked, Run) and checked.status == "failed" and checked.project is msgspec.UNSET
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(checked)) == {**ENV, "k": "run", "status": "failed"}


def test_a_struct_encodes_to_the_map_a_dict_writer_writes() -> None:
    series = {"x": encode_series(array("q", [1]), array("d", [2.0]), array("d", [3.0]))}
    struct = Metrics(**ENV, attempt=2, series=series)  # type: ignore[arg-type]
    assert msgspec.msgpack.decode(msgspec.msgpack.encode(struct)) == msgspec.msgpack.decode(
        msgspec.msgpack.encode(rec("metrics", attempt=2, series=series))
    )


def test_a_feature_kind_joins_the_union_through_register_kind() -> None:
    class Deployment(Record, tag="test_deployment"):
        model: str

    register_kind(Deployment)
    try:
        assert isinstance(check_record(rec("test_deployment", model="m")), Deployment)
        with pytest.raises(Bad, match="model: expected `str`"):
            check_record(rec("test_deployment", model=3))
        with pytest.raises(ValueError, match="already defined"):

            class Other(Record, tag="test_deployment"):
                pass

            register_kind(Other)
    finally:
        from flightlog.schema import kinds as kinds_module  # the module

        kinds_module._KINDS.pop("test_deployment", None)


def test_forming_a_record_of_an_unknown_kind_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown record kind 'metric'"):
        record("metric", t=1.0)
