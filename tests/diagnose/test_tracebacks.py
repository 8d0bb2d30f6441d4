"""Parsing tracebacks: chains, the last chain only, frames, multi-line messages."""

from __future__ import annotations

import traceback

from flightlog.diagnose.tracebacks import (
    ParsedException,
    expand_wrappers,
    find_last_traceback,
    is_library_file,
    parse_chain,
    parse_exception_lines,
)


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


def test_a_chain_whose_first_header_was_cut_keeps_its_cause() -> None:
    text = (
        "ValueError: Couldn't cast\nid: string\nbecause column names don't match\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.10/site-packages/datasets/builder.py", line 1958, in _prepare_split_single\n'
        '    raise DatasetGenerationError("An error occurred while generating the dataset") from e\n'
        "datasets.builder.DatasetGenerationError: An error occurred while generating the dataset\n"
    )
    chain = parse_chain(text)
    assert [e.short_type for e in chain] == ["ValueError", "DatasetGenerationError"]
    assert "column names don't match" in chain[0].message


def test_ipython_header_is_a_header() -> None:
    text = (
        "KeyError                                  Traceback (most recent call last)\n"
        "<ipython-input-35> in <module>()\n"
        "KeyError: 'user_id'\n"
    )
    assert [e.short_type for e in parse_chain(text)] == ["KeyError"]


def test_exceptions_named_line_by_line() -> None:
    text = (
        "RuntimeError: module compiled against API version 0x10 but this version of numpy is 0xf\n"
        "Traceback (most recent call last):\n"
        '  File "filter.py", line 7, in <module>\n'
        "    import bsif\n"
        "E       ImportError: numpy.core.multiarray failed to import\n"
    )
    chain = parse_exception_lines(text)
    assert [e.type for e in chain] == ["RuntimeError", "ImportError"]
    assert chain[-1].frames and chain[-1].frames[-1].file == "filter.py"
    assert parse_exception_lines("epoch 3 loss=0.41\nINFO saved checkpoint") == []


def test_wrappers_name_their_cause() -> None:
    (inner, outer) = parse_exception_lines("ray.exceptions.RayTaskError(ValueError): ray::f() (pid=1)")
    assert (inner.type, outer.type) == ("ValueError", "ray.exceptions.RayTaskError")
    (inner, outer) = expand_wrappers(
        [ParsedException("sqlalchemy.exc.OperationalError", "(psycopg2.OperationalError) could not connect to server")]
    )
    assert inner.type == "psycopg2.OperationalError" and inner.message == "could not connect to server"
    chain = parse_exception_lines("Trial 7 failed because of the following error: ValueError('nan loss encountered')")
    assert [(e.type, e.message) for e in chain] == [("ValueError", "nan loss encountered")]
