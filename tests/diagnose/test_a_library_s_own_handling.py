"""A library that raises its own exception while handling one of its own (the implicit context:
"During handling of the above exception, another exception occurred") works that way: the
earlier exception is no cause of the run's. zoneinfo opens the key as a tz database file and
raises ``ZoneInfoNotFoundError`` while handling the ``FileNotFoundError`` (read as missing_file
0.89 before a rule-id special case in ``candidates``); ``importlib.metadata`` raises
``PackageNotFoundError`` while handling its search's ``StopIteration`` (dependency_error 0.71
under a ``StopIteration`` innermost); PyYAML's reader raises ``ReaderError`` while handling the
codec's ``UnicodeDecodeError``; ``urllib.request`` raises ``URLError`` while handling the
socket's ``ConnectionRefusedError``. The chain reading (``structure.read_chain``) starts at the
library's exception, for every library alike (issue 29). A workload's callback that raised inside
a library's ``try`` is the workload's error, and stays the innermost cause. Real scripts, their
real tracebacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flightlog.diagnose.candidates import collect
from flightlog.diagnose.classify import read_process
from flightlog.diagnose.ranker import rank
from flightlog.diagnose.structure import read_failure

TIME_ZONE = "from zoneinfo import ZoneInfo\ntz = ZoneInfo('Europe/Pariss')\n"
PACKAGE_METADATA = "import importlib.metadata\nprint(importlib.metadata.version('flightlog-plugin-not-installed'))\n"
YAML_NOT_UTF8 = (
    "import pathlib, yaml\n"
    "path = pathlib.Path('config.yaml')\n"
    "path.write_bytes(b'lr: 0.1\\nname: caf\\xe9\\n')\n"
    "cfg = yaml.safe_load(path.open('rb'))\n"
)
NO_SERVER = "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:9/health', timeout=5)\n"


@pytest.mark.parametrize(
    ("code", "innermost", "category"),
    [
        (TIME_ZONE, "zoneinfo._common.ZoneInfoNotFoundError", "bad_parameter"),
        (PACKAGE_METADATA, "importlib.metadata.PackageNotFoundError", "dependency_error"),
        (YAML_NOT_UTF8, "yaml.reader.ReaderError", "bad_parameter"),
        (NO_SERVER, "urllib.error.URLError", "service_unavailable"),
    ],
    ids=["zoneinfo", "importlib.metadata", "yaml", "urllib"],
)
def test_the_library_s_exception_is_the_innermost_cause(
    tmp_path: Path, code: str, innermost: str, category: str
) -> None:
    text = _printed_traceback(tmp_path, code)
    assert "During handling of the above exception, another exception occurred" in text, text
    links = read_failure([text]).links
    assert [link.type for link in links] == [innermost], [(link.type, link.via) for link in links]
    lead, confidence = _lead(text)
    assert lead == category and confidence >= 0.5, (lead, confidence)


#: a command line whose ``type=`` callback, the workload's own code, raised inside argparse's
#: ``try``: argparse raises ``ArgumentError`` while handling it — the callback's error stays
ARGUMENT_CALLBACK = (
    "import argparse\n"
    "def learning_rate(text):\n"
    "    value = float(text)\n"
    "    if not 0 < value < 1:\n"
    "        raise ValueError(f'learning rate {value} is not in (0, 1)')\n"
    "    return value\n"
    "parser = argparse.ArgumentParser(exit_on_error=False)\n"
    "parser.add_argument('--lr', type=learning_rate)\n"
    "parser.parse_args(['--lr', '3'])\n"
)


def test_a_workload_s_callback_inside_the_library_s_try_stays_the_cause(tmp_path: Path) -> None:
    text = _printed_traceback(tmp_path, ARGUMENT_CALLBACK)
    links = read_failure([text]).links
    assert [(link.type, link.via) for link in links] == [
        ("ValueError", "context"),
        ("argparse.ArgumentError", "raised"),
    ]


def _printed_traceback(tmp_path: Path, code: str) -> str:
    script = tmp_path / "job.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1 and "Traceback" in proc.stderr, proc.stderr
    return proc.stderr


def _lead(text: str) -> tuple[str, float]:
    read = read_process(
        exit_code=1, signal=None, timed_out=False, oom_killed=False, traceback_text=text, last_lines=text.splitlines()
    )
    top = rank(read, collect(read))[0]
    return top.category, top.confidence
