"""The facts of a failure's structure that the ranker weighs (``flightlog.diagnose.facts``):
read from real exceptions raised here — a library's validation refusing a value, a call that
does not fit a signature, an operation failing in the workload's own code, an import of a
package that is not installed — and from texts with codes; and crossed with every candidate
by the ranker's one feature function."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flightlog.diagnose.candidates import collect
from flightlog.diagnose.facts import class_words, message_facts, message_families, name_tokens, structure_facts
from flightlog.diagnose.libroles import library_role
from flightlog.diagnose.ranker import candidate_features
from flightlog.diagnose.structure import read_failure
from tests.diagnose.raising import disk_full_under_a_wrapper, traceback_of


def _facts(*texts: str) -> list[str]:
    return structure_facts(read_failure(list(texts), exit_code=1))


def _negative_c() -> None:
    from sklearn.linear_model import LogisticRegression

    LogisticRegression(C=-1).fit([[0.0], [1.0]], [0, 1])


def test_a_library_s_validation_that_refused_the_user_s_value() -> None:
    """scikit-learn's parameter check: raised by a ``raise`` in a validation function of the
    library the class belongs to, called from the workload's code, quoting the parameter."""
    facts = _facts(traceback_of(_negative_c))
    for fact in (
        "raised:library",
        "stack:own_calls_library",
        "raise:raise",
        "frame:validation",
        "class:library_in_same_library",
        "class_word:config",
        "msg:value_bound",
        "msg:quotes_a_name",
        "inner_lib=sklearn",
    ):
        assert fact in facts, (fact, facts)
    assert "raised:own" not in facts and "raise:operation" not in facts


def test_a_call_that_does_not_fit_the_signature_names_the_workload_s_argument() -> None:
    """``json.dumps(..., nonsense=1)``: raised in the standard library by an operation (the
    call of the encoder), the message says the call does not fit and quotes the keyword the
    workload's own line passed."""
    facts = _facts(traceback_of(lambda: json.dumps({}, nonsense=1)))  # type: ignore[call-arg]
    for fact in (
        "raised:stdlib",
        "stack:own_calls_library",
        "raise:operation",
        "class:builtin_in_stdlib",
        "msg:call_signature",
        "msg:names_the_workload_s_code",
    ):
        assert fact in facts, (fact, facts)


def test_an_operation_that_failed_in_the_workload_s_own_code() -> None:
    facts = _facts(traceback_of(lambda: {"a": 1}["missing_key"]))
    assert {"raised:own", "raise:operation", "class:builtin_in_own", "msg:quotes_a_name"} <= set(facts), facts
    assert not any(f.startswith(("stack:", "depth:", "class_word:")) for f in facts), facts


def test_an_import_of_a_package_that_is_not_installed(tmp_path: Path) -> None:
    """A script imports its module, which imports a package that is not there: the import
    machinery's frames and a second module's top level say it came out of an import."""
    (tmp_path / "helpers.py").write_text("import flightlog_no_such_package_xyz\n")
    (tmp_path / "train.py").write_text("import helpers\n")
    stderr = subprocess.run(
        [sys.executable, str(tmp_path / "train.py")], capture_output=True, text=True, cwd=tmp_path, timeout=120
    ).stderr
    facts = _facts(stderr)
    assert {"frame:import", "inner:ModuleNotFoundError", "msg:namespace", "raised:own"} <= set(facts), facts
    assert "frame:load" not in facts


def test_the_chain_s_wrapper_and_the_codes_of_its_messages() -> None:
    assert "chain:builtin_over_builtin" in _facts(traceback_of(disk_full_under_a_wrapper))
    facts = _facts(
        "botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the PutObject operation "
        "(reached max retries: 4): Please reduce your request rate. (503) Reason: Service Unavailable"
    )
    assert {"http:5xx", "http:503", "class:library"} <= set(facts), facts
    facts = _facts("psycopg2.errors.TooManyConnections: FATAL:  sorry, too many clients already")
    assert "sqlstate:53" in facts, facts
    facts = _facts("grpc._channel._InactiveRpcError: status = StatusCode.UNAVAILABLE details = 'failed to connect'")
    assert "grpc:UNAVAILABLE" in facts, facts


def test_an_exception_line_without_frames_comes_from_nowhere_known() -> None:
    """An exception line printed alone (a log's ``IndexError: …``, a launcher's summary) says
    nothing of where it was raised: its library is unknown, not the workload's own code — only
    frames in the workload's files say that (issue 29: the two read alike taught the ranker that
    a builtin raised in the user's code is like any bare exception line)."""
    alone = _facts("step 12 loss=0.41", "IndexError: pop from empty list")
    assert "inner_lib:unknown" in alone and "inner_lib:own" not in alone, alone
    chained = _facts(
        "ValueError: bad row\n\nThe above exception was the direct cause of the following exception:\n\n"
        "RuntimeError: could not load the batch"
    )
    assert {"inner_lib:unknown", "outer_lib:unknown"} <= set(chained), chained
    raised_here = _facts(traceback_of(lambda: [].pop()))
    assert "inner_lib:own" in raised_here and "raised:own" in raised_here, raised_here
    # a library's class named alone still names its library
    assert "inner_lib:third_party" in _facts("psycopg2.errors.TooManyConnections: sorry, too many clients already")


def test_a_class_name_s_words_for_a_library_s_own_classes_only() -> None:
    assert class_words("ConfigAttributeError") == ["config", "attribute"]
    assert class_words("HTTPError") == ["http"]
    assert "class_word:config" in _facts("kubernetes.config.config_exception.ConfigException: Invalid kube-config file")
    # a builtin's kind is its type (``inner:KeyError``), not the words of its name
    assert not any(f.startswith("class_word:") for f in _facts("KeyError: 'labels'"))
    assert "class:truncated" in _facts('Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n')


def test_the_shapes_of_a_message() -> None:
    assert "msg:expected_got" in message_facts("Expected input batch_size (32) to match target batch_size (16), got 16")
    assert "msg:choices" in message_facts("mode must be one of ['min', 'max'], got 'avg'")
    assert "msg:did_you_mean" in message_facts("Unknown model 'resnet5'. Did you mean: resnet50?")
    assert "msg:version" in message_facts("requires torch>=2.1.0 but found 1.13.1")
    assert "msg:shape" in message_facts("size mismatch for fc.weight: copying a param with shape torch.Size([10, 512])")
    assert message_facts("") == ["msg:empty"]
    # a failure with no exception: the last line's shape, under a name of its own
    facts = _facts("step 3 loss=0.5", "ERROR: learning_rate must be positive, got -0.1")
    assert "last_msg:value_bound" in facts and not any(f.startswith("msg:") for f in facts), facts


def test_the_families_of_trouble_an_exception_s_message_is_about() -> None:
    """Issue 29: the words a message uses for a kind of trouble, as a family's name (a fixed
    pattern, never a word): the chain's root read under a wrapper, a service refusing for
    capacity, a framework's configuration check; the last line of a failure without an
    exception keeps its own facts only."""
    facts = _facts(
        "sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) FATAL:  sorry, too many clients already"
    )
    assert "msg:says_capacity" in facts, facts
    assert {"msg:says_config", "msg:says_data"} <= set(
        message_families("ValueError: The batch_size (10) must be divisible by the number of samples per device")
    )
    assert message_families("RuntimeError: CUDA error: an illegal memory access was encountered") == ["msg:says_memory"]
    assert message_families("") == []
    assert not any(f.startswith("msg:says_") for f in _facts("step 3", "ERROR: the connection was refused"))


def test_every_candidate_sees_the_facts_crossed_with_its_category() -> None:
    """The one feature function of training and diagnosis crosses each fact with each candidate."""
    read = read_failure([traceback_of(_negative_c)], exit_code=1)
    features = candidate_features(read, collect(read))
    for category in ("bad_parameter", "data_error", "none"):
        assert f"{category}|frame:validation" in features[category]
        assert f"{category}|raise:raise" in features[category]


def _stderr_of(*args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        [sys.executable, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    ).stderr


def test_code_run_from_a_string_or_stdin_is_the_workload_s_own() -> None:
    """``python -c`` and ``exec`` print the workload's code as ``<string>``, a script piped to
    the interpreter as ``<stdin>``: an operation that failed there failed in the workload's own
    code, not in the standard library."""
    for stderr in (
        _stderr_of("-c", "rows = {}\nrows['label']"),
        _stderr_of("-c", "exec(\"rows = {}\\nrows['label']\")"),
        _stderr_of("-", stdin="rows = {}\nrows['label']\n"),
    ):
        facts = _facts(stderr)
        assert {"raised:own", "class:builtin_in_own"} <= set(facts), (stderr, facts)
        assert not any(f.startswith("stack:") for f in facts), (stderr, facts)


def test_code_a_library_generated_from_a_string_is_not_the_workload_s(tmp_path: Path) -> None:
    """A dataclass's generated ``__init__`` is a ``<string>`` frame too: not the workload's
    own; the ``__post_init__`` that refused, in the workload's file, is where it was raised."""
    script = tmp_path / "train.py"
    script.write_text(
        "import dataclasses\n"
        "@dataclasses.dataclass\n"
        "class Args:\n"
        "    lr: float\n"
        "    def __post_init__(self):\n"
        "        raise ValueError(f'lr must be positive, got {self.lr}')\n"
        "Args(lr=-1.0)\n"
    )
    stderr = _stderr_of(str(script))
    (link,) = read_failure([stderr], exit_code=1).links
    assert [(Path(f.file).name, f.function, f.in_library) for f in link.frames] == [
        ("train.py", "<module>", False),
        ("<string>", "__init__", True),
        ("train.py", "__post_init__", False),
    ]
    assert "raised:own" in _facts(stderr)


def _script_facts(tmp_path: Path, code: str) -> list[str]:
    """The facts of what ``train.py`` (``code``) printed when it failed."""
    (tmp_path / "train.py").write_text(code)
    stderr = subprocess.run(
        [sys.executable, "train.py"], capture_output=True, text=True, cwd=tmp_path, timeout=120
    ).stderr
    assert "Traceback" in stderr, stderr
    return _facts(stderr)


def test_the_words_of_a_name() -> None:
    assert name_tokens("load_state_dict") == ["load", "state", "dict"]
    assert name_tokens("__getitem__") == ["getitem"]
    assert name_tokens("readCSV") == ["read", "csv"]
    assert name_tokens("_prepare_deepspeed2") == ["prepare", "deepspeed"]
    assert name_tokens("<module>") == [] and name_tokens("main") == []


def test_where_a_missing_key_was_read_names_what_it_was(tmp_path: Path) -> None:
    """The same ``KeyError`` raised by the workload's own line: in a dataset's ``__getitem__``
    reading a record, or in a function building the optimizer from the configuration — the
    function's name and the names in the line tell them apart (issue 29); the script's own file
    name (``train.py``) is no fact."""
    record = _script_facts(
        tmp_path,
        "class Records:\n    def __init__(self):\n        self.rows = [{'text': 'a'}]\n"
        "    def __getitem__(self, index):\n        row = self.rows[index]\n        return row['label']\n"
        "Records()[0]\n",
    )
    assert {"fn_raise:getitem", "fn_own:getitem", "code_own:data", "code_raise:data"} <= set(record), record
    assert not any(f.startswith(("code_own:config", "file_raise:", "role_")) for f in record), record
    config = _script_facts(
        tmp_path,
        "def build_optimizer(cfg):\n    return cfg['optimizer']['lr']\nbuild_optimizer({'optimizer': {}})\n",
    )
    assert {"fn_own:build", "fn_own:optimizer", "code_own:config"} <= set(config), config
    assert "code_own:data" not in config and "fn_raise:getitem" not in config, config


def test_the_role_of_the_library_that_raised() -> None:
    """A decoder of the standard library (``json``) is a data library; its function's and its
    file's words are facts where a library raised (``role_near`` is for third-party frames)."""
    facts = _facts(traceback_of(lambda: json.loads("{'not': json}")))
    assert {"role_inner:data", "raised:stdlib", "file_raise:decoder", "fn_raise:decode"} <= set(facts), facts
    assert library_role("omegaconf") == "config" and library_role("torch.distributed") == "model"
    assert library_role("pandas") == "data" and library_role("requests") is None and library_role(None) is None


def test_a_missing_column_is_raised_in_the_data_library(tmp_path: Path) -> None:
    """pandas raises a missing column's ``KeyError`` in its compiled code: a data library's
    frames, not the workload's (before, its Cython frames read as the script's own code)."""
    pytest.importorskip("pandas")
    facts = _script_facts(tmp_path, "import pandas as pd\nframe = pd.DataFrame({'a': [1]})\nframe['label']\n")
    assert {"raised:library", "inner_lib=pandas", "role_inner:data", "role_near:data"} <= set(facts), facts
    assert "raised:own" not in facts and not any(f.startswith("fn_own:") for f in facts), facts
