"""Parsing tracebacks: chains, the last chain only, frames, multi-line messages."""

from __future__ import annotations

import traceback

from flightlog.diagnose.facts import structure_facts
from flightlog.diagnose.structure import read_failure
from flightlog.diagnose.tracebacks import (
    ParsedException,
    expand_wrappers,
    find_last_traceback,
    is_library_file,
    parse_chain,
    parse_exception_lines,
)
from flightlog.failure import parse_python_traceback
from tests.diagnose.corpus.replay import events


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


# ── tracebacks as reporters pasted them (issue 29): real texts of the failure corpus ─────────
def test_an_exception_line_two_writers_interleaved_reads_once() -> None:
    """Two processes wrote the same exception line to one stream at once (RLHFlow/
    RLHF-Reward-Modeling#6): the type is read once, not as ``KeyErrorKeyError``."""
    text = (
        "Traceback (most recent call last):\n"
        '    "input_ids": feature["input_ids_j"],    "input_ids": feature["input_ids_j"],\n'
        "\n"
        "KeyErrorKeyError: : 'input_ids_j'\n"
    )
    assert [(e.type, e.message) for e in parse_chain(text)] == [("KeyError", "'input_ids_j'")]
    assert [(e.type, e.message) for e in parse_exception_lines(text)] == [("KeyError", "'input_ids_j'")]
    summary = parse_python_traceback(text)
    assert summary is not None and (summary["exception"], summary["message"]) == ("KeyError", "'input_ids_j'")


def test_a_frame_line_the_terminal_wrapped_is_not_the_exception() -> None:
    """pandas' ``_validate_key`` wrapped at the terminal's edge (yutiansut/QUANTAXIS#828): the
    wrapped ``ate_key`` is the frame's function's rest, the exception is the KeyError."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "C:\\Users\\87532\\AppData\\Roaming\\Python\\Python36\\site-packages\\pandas\\core\\indexing.py",'
        " line 1790, in _valid\n"
        "ate_key\n"
        "    error()\n"
        '  File "C:\\Users\\87532\\AppData\\Roaming\\Python\\Python36\\site-packages\\pandas\\core\\indexing.py",'
        " line 1785, in error\n"
        "    axis=self.obj._get_axis_name(axis)))\n"
        "KeyError: 'the label [2018-01-02 00:00:00] is not in the [index]'\n"
    )
    (exc,) = parse_chain(text)
    assert exc.type == "KeyError" and exc.message.startswith("'the label")
    assert [f.function for f in exc.frames] == ["_validate_key", "error"]
    assert exc.frames[0].code == "error()"
    # split into events the way a run's capture splits it, the read joins it again
    read = read_failure(events(text), exit_code=1)
    assert [link.type for link in read.links] == ["KeyError"] and read.links[0].library == "pandas"


_LINKED_FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "[C:\\Users\\AAmbarwari\\anaconda3\\envs\\detectree2\\lib\\site-packages\\detectron2\\data\\build.py",'
    " line 253](file:///C:/Users/AAmbarwari/anaconda3/envs/detectree2/lib/site-packages/detectron2/data/build.py"
    "#line=252), in <listcomp>\n"
    "    dataset_dicts = [DatasetCatalog.get(dataset_name) for dataset_name in names]\n"
    '  File "[C:\\Users\\AAmbarwari\\anaconda3\\envs\\detectree2\\lib\\site-packages\\detectron2\\data\\catalog.py",'
    " line 53](file:///C:/Users/AAmbarwari/anaconda3/envs/detectree2/lib/site-packages/detectron2/data/catalog.py"
    "#line=52), in get\n"
    "    raise KeyError(\n"
    "KeyError: \"Dataset 'D' is not registered! Available datasets are: coco_2014_train, coco_2014_val\"\n"
)


def test_a_frame_drawn_as_a_markdown_link_is_a_frame() -> None:
    """A notebook drew each frame's Windows path as a markdown link (PatBall1/detectree2#161):
    the frames are read, so the KeyError is detectron2's, raised by a ``raise``."""
    (exc,) = parse_chain(_LINKED_FRAMES)
    assert [(f.file.rsplit("\\", 1)[-1], f.line, f.function) for f in exc.frames] == [
        ("build.py", 253, "<listcomp>"),
        ("catalog.py", 53, "get"),
    ]
    assert exc.frames[-1].code == "raise KeyError("
    (link,) = read_failure(events(_LINKED_FRAMES), exit_code=1).links
    assert link.library == "detectron2" and len(link.frames) == 2
    # IPython's locations drawn as links (Colab) are IPython's frames
    colab = (
        "KeyError                                  Traceback (most recent call last)\n"
        "[<ipython-input-19-28e7e9d1e347>](https://localhost:8080/#) in <cell line: 9>()\n"
        "      9 for split in splits:\n"
        "---> 10     dataset[split] = DATASET['BoolQ']('/content/drive/MyDrive', split)\n"
        "\n"
        "[/usr/local/lib/python3.10/dist-packages/model_center/dataset/bertdataset/superglue.py]"
        "(https://localhost:8080/#) in __init__(self, path, split)\n"
        '---> 92             label = 1 if row["label"]==True else 0\n'
        "\n"
        "KeyError: 'label'\n"
    )
    (exc,) = parse_chain(colab)
    assert [(f.file.rsplit("/", 1)[-1], f.line, f.function) for f in exc.frames] == [
        ("<ipython-input-19-28e7e9d1e347>", 10, "<cell line: 9>"),
        ("superglue.py", 92, "__init__"),
    ]


def test_an_ipython_traceback_whose_exception_line_was_cut_off() -> None:
    """IPython names the type in its header; the reporter's paste ends at the cell's arrow
    (google-deepmind/chex#197): the chain is that type, raised by the cell's import, with a
    message that is unknown (cut off), not empty."""
    text = (
        "In [1]: import optax\n"
        "---------------------------------------------------------------------------\n"
        "AttributeError                            Traceback (most recent call last)\n"
        "Input In [1], in <cell line: 1>()\n"
        "----> 1 import optax\n"
    )
    read = read_failure(events(text), exit_code=1)
    (link,) = read.links
    assert link.type == "AttributeError" and link.cut_off and link.message == ""
    assert [(f.file, f.line, f.code) for f in link.frames] == [("<ipython-input>", 1, "import optax")]
    facts = structure_facts(read)
    assert {"inner:AttributeError", "raised:own", "frame:import", "msg:cut_off"} <= set(facts), facts
    assert "msg:empty" not in facts
