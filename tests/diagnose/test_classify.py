"""The fast classifier on real exceptions (raised here, from the libraries installed) and on
texts that libraries not installed here really print (PyTorch, boto3, scikit-learn, shells)."""

from __future__ import annotations

import socket
import traceback
from collections.abc import Callable

import pytest

from flightlog.diagnose.classify import classify_failure
from flightlog.diagnose.taxonomy import FAILURE_CATEGORIES


def _tb(func: Callable[[], object]) -> str:
    try:
        func()
    except BaseException:  # noqa: BLE001 - we want the real text of anything
        return traceback.format_exc()
    raise AssertionError("expected an exception")


def classify(tb: str | None = None, lines: list[str] | None = None, *, exit_code: int | None = 1,
             signal: int | None = None, timed_out: bool = False, oom_killed: bool = False) -> tuple[str, float]:
    return classify_failure(exit_code=exit_code, signal=signal, timed_out=timed_out, oom_killed=oom_killed,
                            traceback_text=tb, last_lines=lines or [])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _refused_socket() -> None:
    socket.create_connection(("127.0.0.1", _closed_port()), timeout=1)


def _refused_httpx() -> None:
    import httpx

    httpx.get(f"http://127.0.0.1:{_closed_port()}/health", timeout=1)


def _refused_requests() -> None:
    import requests

    requests.get(f"http://127.0.0.1:{_closed_port()}/v1/features", timeout=1)


def _pandas_column() -> None:
    import pandas as pd

    df = pd.DataFrame({"price_usd": [1.0, 2.0]})
    df["price"].mean()


def _pandas_columns_list() -> None:
    import pandas as pd

    pd.DataFrame({"a": [1]})[["a", "label"]]


def _numpy_parse() -> None:
    import numpy as np

    np.array(["1.5", "n/a"]).astype(float)


def _missing_file() -> None:
    with open("/nonexistent/data/train.csv"):
        pass


def _pandas_missing_file() -> None:
    import pandas as pd

    pd.read_csv("/nonexistent/features.parquet.csv")


def _import() -> None:
    import importlib

    importlib.import_module("torchvision_nonexistent_pkg")


def _wrapped_missing() -> None:
    try:
        with open("/nonexistent/config.yaml"):
            pass
    except OSError as exc:
        raise RuntimeError("could not load the configuration") from exc


@pytest.mark.parametrize(
    ("func", "expected"),
    [
        (_refused_socket, "service_unavailable"),
        (_refused_httpx, "service_unavailable"),
        (_refused_requests, "service_unavailable"),
        (_pandas_column, "data_error"),
        (_pandas_columns_list, "data_error"),
        (_numpy_parse, "data_error"),
        (_missing_file, "missing_file"),
        (_pandas_missing_file, "missing_file"),
        (_wrapped_missing, "missing_file"),
        (_import, "dependency_error"),
        (lambda: 1 / 0, "code_error"),
        (lambda: undefined_name_here, "code_error"),  # type: ignore[name-defined]  # noqa: F821
        (lambda: [].pop(), "code_error"),
    ],
)
def test_real_exceptions(func: Callable[[], object], expected: str) -> None:
    category, confidence = classify(_tb(func))
    assert category == expected
    assert 0.4 <= confidence <= 0.99


RECORDED = {
    "oom_killed": """Traceback (most recent call last):
  File "/work/train.py", line 41, in <module>
    loss = model(batch).sum()
  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1511, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.12 GiB is free.""",
    "credentials_error": """Traceback (most recent call last):
  File "/work/upload.py", line 12, in <module>
    s3.upload_file("model.pt", "models", "v3/model.pt")
  File "/usr/lib/python3.11/site-packages/botocore/auth.py", line 418, in add_auth
    raise NoCredentialsError()
botocore.exceptions.NoCredentialsError: Unable to locate credentials""",
    "bad_parameter": """Traceback (most recent call last):
  File "/work/fit.py", line 9, in <module>
    clf.fit(X, y)
  File "/usr/lib/python3.11/site-packages/sklearn/utils/_param_validation.py", line 95, in validate_parameter_constraints
    raise InvalidParameterError(
sklearn.utils._param_validation.InvalidParameterError: The 'n_estimators' parameter of RandomForestClassifier must be an int in the range [1, inf). Got 0 instead.""",
    "disk_full": """Traceback (most recent call last):
  File "/work/train.py", line 88, in save
    torch.save(state, path)
OSError: [Errno 28] No space left on device""",
}


@pytest.mark.parametrize("expected", sorted(RECORDED))
def test_recorded_library_tracebacks(expected: str) -> None:
    assert classify(RECORDED[expected])[0] == expected


def test_exit_facts() -> None:
    assert classify(exit_code=137, signal=9, oom_killed=True)[0] == "oom_killed"
    assert classify(exit_code=124, signal=15, timed_out=True)[0] == "timeout"
    assert classify(exit_code=143, signal=15)[0] == "killed_by_signal"
    assert classify(exit_code=143)[0] == "killed_by_signal"  # a shell's 128 + 15
    assert classify(exit_code=139, signal=11)[0] == "code_error"
    assert classify(exit_code=127, lines=["bash: line 1: trainz: command not found"]) == ("dependency_error", pytest.approx(0.82, abs=0.02))
    assert classify(exit_code=2, lines=["usage: train.py [-h] [--lr LR]", "train.py: error: argument --lr: invalid float value: 'fast'"])[0] == "bad_parameter"
    assert classify(exit_code=137, lines=["Killed"])[0] == "oom_killed"


def test_success_and_nothing_to_go_on() -> None:
    assert classify(exit_code=0, lines=["ConnectionRefusedError: retrying", "done"]) == ("none", 0.0)
    assert classify(exit_code=None) == ("none", 0.0)
    assert classify(exit_code=3) == ("code_error", 0.25)


def test_more_signals_more_confidence() -> None:
    tb = _tb(_refused_socket)
    alone = classify(tb)[1]
    agreeing = classify(tb, ["ERROR feature store at 127.0.0.1:6379 unreachable: Connection refused",
                             "ERROR giving up after 3 attempts: ECONNREFUSED"])[1]
    assert agreeing > alone


def test_noise_does_not_win() -> None:
    # a handled connection error earlier, a warning, and lines printed after the real traceback
    lines = ["WARNING requests: connection refused, retrying in 1s", "UserWarning: the default of `copy` will change",
             _tb(_pandas_column), "cleaning up temporary files", "bye"]
    assert classify(None, lines)[0] == "data_error"
    # "Killed" and "NaN" inside ordinary lines mean nothing
    category, confidence = classify(None, ["Killed 3 stale workers before starting", "loss=NaN guard enabled"], exit_code=1)
    assert category == "code_error" and confidence < 0.5


def test_only_the_last_traceback_chain_counts() -> None:
    earlier = _tb(_refused_socket)
    last = _tb(_import)
    assert classify(earlier + "\nretrying...\n" + last)[0] == "dependency_error"


def test_progress_lines_do_not_change_what_a_traceback_says() -> None:
    """Ordinary progress lines (what bench/diagnose_classify.py times) add no evidence."""
    tb = _tb(_pandas_column)
    lines = [f"epoch {i} loss=0.{i}" for i in range(50)]
    assert classify(tb, lines) == classify(tb)


def test_every_failure_category_is_reachable() -> None:
    assert {"oom_killed", "timeout", "killed_by_signal"} <= set(FAILURE_CATEGORIES)
