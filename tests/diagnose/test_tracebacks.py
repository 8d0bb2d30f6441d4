"""Parsing tracebacks: chains, the last chain only, frames, multi-line messages."""

from __future__ import annotations

import traceback

from flightlog.diagnose.tracebacks import find_last_traceback, is_library_file, parse_chain


def _format(func: object) -> str:
    try:
        func()  # type: ignore[operator]
    except Exception:
        return traceback.format_exc()
    raise AssertionError("no exception")


def test_chain_root_cause_first() -> None:
    def wrapped() -> None:
        try:
            {}["missing"]
        except KeyError as exc:
            raise RuntimeError("could not build features") from exc

    chain = parse_chain(_format(wrapped))
    assert [e.short_type for e in chain] == ["KeyError", "RuntimeError"]
    assert chain[0].message == "'missing'"
    assert chain[-1].headline() == "RuntimeError: could not build features"
    assert chain[-1].frames and chain[-1].frames[-1].function == "wrapped"


def test_only_the_last_independent_traceback() -> None:
    first = _format(lambda: 1 / 0)
    second = _format(lambda: [][1])
    chain = parse_chain(first + "retrying\n" + second)
    assert [e.short_type for e in chain] == ["IndexError"]


def test_multiline_message_and_qualified_names() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/app/train.py", line 3, in <module>\n'
        "    main()\n"
        "pandas.errors.ParserError: Error tokenizing data. C error: Expected 3 fields in line 7, saw 4\n"
        "  extra detail line\n"
    )
    (exc,) = parse_chain(text)
    assert exc.type == "pandas.errors.ParserError" and exc.short_type == "ParserError"
    assert "Expected 3 fields" in exc.message and "extra detail line" in exc.message
    assert exc.innermost_own_frame() is not None


def test_library_frames_are_not_the_workload() -> None:
    assert is_library_file("/usr/lib/python3.11/site-packages/pandas/core/frame.py")
    assert is_library_file("/root/.pyenv/versions/3.11.7/lib/python3.11/socket.py")
    assert not is_library_file("/work/project/train.py")


def test_nothing_to_parse() -> None:
    assert parse_chain(None) == []
    assert parse_chain("ERROR something failed") == []
    assert find_last_traceback(["a", "b"]) is None
