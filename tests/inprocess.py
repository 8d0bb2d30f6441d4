"""The `flightlog` command run inside the test process, as the installed script would run it.

A `flightlog` process costs the suite half a second of CPU before it does anything (Python,
click, rich, the store); the CLI tests make well over a thousand calls. :func:`run_cli` calls
``flightlog.cli.main.main`` in this process instead, with what a child process would have had:

- the environment *replaced* by the one given (``os.environ`` is swapped, not merged: a variable
  the child would not see is not there), the working directory, ``sys.argv``, the time zone;
- stdin from ``input`` (empty otherwise, as a pipe with nothing in it), stdout and stderr each
  into a buffer of its own, in the encoding a child's pipes have, decoded with universal newlines
  as ``subprocess.run(text=True)`` decodes them;
- Python's default warning filters (the suite's ``filterwarnings = error`` is the tests'
  policy, not the command's) and no logging handlers of pytest's (a record reaches stderr
  through logging's last resort, as in a plain process);
- the exit status the console script gives: ``sys.exit(main())`` semantics, SystemExit, and an
  uncaught exception's traceback on stderr with status 1.

What only a real process shows stays a real process (``tests/helpers.py`` decides: the runner,
servers, watchers, anything asked for with ``process=True``): exit codes under signals, the
workload's passthrough, a child that outlives a parent.
"""

from __future__ import annotations

import codecs
import io
import logging
import os
import signal
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

__all__ = ["run_cli"]

#: what `python` sets up before any code runs (Python 3.11, release build, no -W/PYTHONWARNINGS)
_DEFAULT_WARNING_FILTERS = (
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, None),
    ("ignore", PendingDeprecationWarning, None),
    ("ignore", ImportWarning, None),
    ("ignore", ResourceWarning, None),
)


def run_cli(
    args: Sequence[str], *, env: Mapping[str, str], cwd: Path, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``flightlog ARGS`` in this process; the result as ``subprocess.run(..., text=True)`` gives it."""
    from flightlog.cli.main import main

    encoding = _child_encoding(env)
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding=encoding, errors="strict", line_buffering=True, write_through=True)
    stderr = io.TextIOWrapper(err, encoding=encoding, errors="backslashreplace", write_through=True)
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode(encoding)), encoding=encoding)
    argv = [str(Path(sys.executable).with_name("flightlog")), *args]
    with _as_a_child(env, cwd, argv, stdin, stdout, stderr):
        try:
            code = _exit_status(main(list(args)), stderr)
        except SystemExit as exc:
            code = _exit_status(exc.code, stderr)
        except KeyboardInterrupt:  # the interpreter re-raises SIGINT on itself: killed by it
            traceback.print_exc(file=stderr)
            code = -signal.SIGINT
        except Exception:  # as the interpreter does with an uncaught exception: traceback, status 1
            traceback.print_exc(file=stderr)
            code = 1
        for stream in (stdout, stderr):
            try:
                stream.flush()
            except ValueError:  # the command closed it
                pass
    return subprocess.CompletedProcess(
        argv, code, _decoded(out.getvalue(), encoding), _decoded(err.getvalue(), encoding)
    )


def _exit_status(value: object, stderr: io.TextIOWrapper) -> int:
    """What ``sys.exit(value)`` makes of ``value``: None is 0, an int itself, anything else is printed and 1."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=stderr)
    return 1


def _decoded(data: bytes, encoding: str) -> str:
    """As ``subprocess.run(text=True)`` reads a pipe: decoded, with universal newlines."""
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


_ENCODINGS: dict[tuple[str | None, ...], str] = {}


def _child_encoding(env: Mapping[str, str]) -> str:
    """The encoding of a child's stdout for this environment (its locale variables decide)."""
    key = tuple(env.get(name) for name in ("PYTHONIOENCODING", "PYTHONUTF8", "LC_ALL", "LC_CTYPE", "LANG"))
    if key not in _ENCODINGS:
        if env.get("PYTHONIOENCODING"):
            _ENCODINGS[key] = env["PYTHONIOENCODING"].split(":")[0] or "utf-8"
        else:  # asked once per worker and locale: the interpreter's own answer, not a guess
            probe = subprocess.run(
                [sys.executable, "-c", "import sys; print(sys.stdout.encoding)"],
                env=dict(env),
                capture_output=True,
                text=True,
                check=True,
            )
            _ENCODINGS[key] = codecs.lookup(probe.stdout.strip() or "utf-8").name
    return _ENCODINGS[key]


@contextmanager
def _as_a_child(
    env: Mapping[str, str],
    cwd: Path,
    argv: list[str],
    stdin: io.TextIOWrapper,
    stdout: io.TextIOWrapper,
    stderr: io.TextIOWrapper,
) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_argv = sys.argv
    root = logging.getLogger()
    saved_handlers = root.handlers[:]
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    os.chdir(cwd)
    sys.argv = argv
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    root.handlers = []  # pytest's capture handlers: a plain process has none (logging's last resort writes to stderr)
    try:
        with warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category, module in reversed(_DEFAULT_WARNING_FILTERS):
                warnings.filterwarnings(action, category=category, module=module or "")
            yield
    finally:
        root.handlers = saved_handlers
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        time.tzset()
