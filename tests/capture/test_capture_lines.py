"""Lines: partial reads, ``\\r`` progress output, truncation, bytes that are not UTF-8."""

from __future__ import annotations

import pytest

from flightlog.capture.lines import LineSplitter, collapse_progress, split_lines, utf8_cut

from .conftest import Capture, run_pipeline


def messages(events: list[dict]) -> list[str]:
    return [e["message"] for e in events]


def test_partial_lines_wait_for_their_newline_per_stream(capture: Capture) -> None:
    assert messages(capture(b"hel", b"lo\nwor", b"ld\n", b"tail without newline")) == [
        "hello",
        "world",
        "tail without newline",
    ]


def test_every_event_has_the_time_of_the_chunk_that_completed_it(capture: Capture) -> None:
    events = capture(b"a\nb", b"\nc\n", step=1.0)
    assert [(e["message"], e["time"]) for e in events] == [
        ("a", 1000.0),
        ("b", 1001.0),
        ("c", 1001.0),
    ]


def test_progress_refreshes_collapse_to_the_last_state(capture: Capture) -> None:
    assert messages(capture(b"10%\r20%\r30%\n")) == ["30%"]


def test_progress_collapses_across_chunk_boundaries(capture: Capture) -> None:
    chunks = [
        b"\r  0%|  | 0/3",
        b"\r 33%|# | 1/3\r",
        b" 66%|##| 2/3\r",
        b"100%|###| 3/3\n",
        b"done\n",
    ]
    assert messages(capture(*chunks)) == ["100%|###| 3/3", "done"]


def test_a_bar_cleared_with_spaces_keeps_its_last_visible_state(capture: Capture) -> None:
    assert messages(capture(b"\r 50%|#####\r          \r", b"\n")) == [" 50%|#####"]
    assert messages(capture(b"\r 50%\r      \rEpoch 1 done\n")) == ["Epoch 1 done"]


def test_a_refreshed_bar_is_not_taken_for_an_indented_continuation(capture: Capture) -> None:
    assert messages(capture(b"Epoch 1\n\r 10%|#\r 100%|##########|\n")) == [
        "Epoch 1",
        " 100%|##########|",
    ]


def test_crlf_is_a_plain_newline(capture: Capture) -> None:
    assert messages(capture(b"one\r\ntwo\r", b"\n  three\r\n")) == ["one", "two\n  three"]


def test_a_bar_that_never_ends_its_line_does_not_grow_the_buffer() -> None:
    counts = {"truncated_lines": 0}
    splitter = LineSplitter(1024, counts)
    for i in range(10_000):
        assert splitter.feed(b"\r%5d/10000 [%s]" % (i, b"#" * (i % 50))) == b""
        assert len(splitter._pending) < 100  # only the last refresh is kept
    last = " 9999/10000 [" + "#" * 49 + "]"
    lines, progress = split_lines(splitter.flush().decode())
    assert lines == [last] and progress == [0]
    assert counts["truncated_lines"] == 0


def test_long_lines_are_truncated_with_a_visible_marker_and_counted() -> None:
    events, pipeline = run_pipeline([b"x" * 100 + b"\nshort\n"], max_line_bytes=64)
    assert messages(events) == ["x" * 64 + " … [truncated 36 bytes]", "short"]
    assert pipeline.stats["truncated_lines"] == 1


def test_a_long_partial_line_is_cut_while_it_arrives() -> None:
    chunks = [b"y" * 50, b"y" * 1000, b"y" * 60 + b"\nok\n"]
    events, pipeline = run_pipeline(chunks, max_line_bytes=64)
    assert messages(events) == ["y" * 64 + " … [truncated 1046 bytes]", "ok"]
    assert pipeline.stats["truncated_lines"] == 1


def test_truncation_never_splits_a_character() -> None:
    events, _ = run_pipeline([("é" * 40 + "\n").encode()], max_line_bytes=65)
    kept, marker = events[0]["message"].split(" … ")
    assert kept == "é" * 32  # 64 bytes; the 65th would be half of an "é"
    assert marker == "[truncated 16 bytes]"


def test_bytes_that_are_not_utf8_are_kept_visibly(capture: Capture) -> None:
    assert messages(capture(b"bad \xff\xfe bytes\n")) == ["bad \\xff\\xfe bytes"]


def test_a_character_split_across_two_reads_is_not_mangled(capture: Capture) -> None:
    data = "café € 日本\n".encode()
    for cut in range(1, len(data)):
        assert messages(capture(data[:cut], data[cut:])) == ["café € 日本"]


def test_empty_lines_are_events_too(capture: Capture) -> None:
    assert messages(capture(b"a\n\n\nb\n")) == ["a", "", "", "b"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("10%\r20%\r30%", "30%"),
        ("abc\r", "abc"),
        ("\r\r", ""),
        ("a\r   \r", "a"),
        ("plain", "plain"),
    ],
)
def test_collapse_progress(line: str, expected: str) -> None:
    assert collapse_progress(line) == expected


def test_utf8_cut_steps_back_over_continuation_bytes() -> None:
    data = "aé".encode()  # 61 c3 a9
    assert utf8_cut(data, 2) == 1
    assert utf8_cut(data, 3) == 3
    assert utf8_cut(b"abc", 10) == 3


def test_output_written_a_byte_at_a_time_is_stored_as_if_written_at_once() -> None:
    data = (
        "héllo wörld\n10%\r20%\r30%\ncrlf\r\n  indented\n"
        'Traceback (most recent call last):\n  File "x"\nValueError: ü\nend'
    ).encode()
    at_once, _ = run_pipeline([data])
    byte_by_byte, _ = run_pipeline([data[i : i + 1] for i in range(len(data))], step=0.0)
    assert [e["message"] for e in byte_by_byte] == [e["message"] for e in at_once]
    assert [e["message"] for e in at_once] == [
        "héllo wörld",
        "30%",
        "crlf\n  indented",
        'Traceback (most recent call last):\n  File "x"\nValueError: ü',
        "end",
    ]
