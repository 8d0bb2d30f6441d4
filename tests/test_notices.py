"""flightlog's notices go to stderr one way (flightlog.notices), and never break the process.

The behaviour runs in real child processes: one whose stderr is closed, one whose ``sys.stderr``
is None, one whose stderr is a pipe nobody reads any more. The AST walk keeps every module
outside the command line from writing to stderr its own way again.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.helpers import child_env

SRC = Path(__file__).resolve().parents[1] / "src" / "flightlog"
#: the command-line side renders with click/rich (cli/output.py and the commands); a `python -m`
#: entry point's usage line is the same kind of output
CLI_SIDE = ("cli/", "/cli.py", "runner/__main__.py", "server/ui.py", "data/progress.py", "pipeline/stepmain.py")
#: the hang agent runs inside workloads where flightlog may not be importable (the runner's
#: bootstrap loads it by path): its one ``say`` and the bootstrap write the same prefixed line
STANDALONE = ("resources/agent/settings.py", "resources/agent/_boot/sitecustomize.py")


def _child(code: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], env=child_env(home), capture_output=True, text=True, timeout=60)


def test_a_notice_is_one_prefixed_line_on_stderr(tmp_path: Path) -> None:
    out = _child("from flightlog.notices import notice; notice('hello'); print('done')", tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stderr == "flightlog: hello\n"
    assert out.stdout == "done\n"


def test_a_closed_or_missing_stderr_never_raises(tmp_path: Path) -> None:
    closed = _child(
        "import os, sys\nos.close(2)\nfrom flightlog.notices import notice\nnotice('x' * 100000)\nprint('alive')",
        tmp_path,
    )
    assert closed.returncode == 0 and closed.stdout == "alive\n"
    missing = _child(
        "import sys\nsys.stderr = None\nfrom flightlog.notices import notice\nnotice('x')\nprint('alive')", tmp_path
    )
    assert missing.returncode == 0 and missing.stdout == "alive\n"
    shut = _child(
        "import sys\nsys.stderr.close()\nfrom flightlog.notices import notice\nnotice('x')\nprint('alive')", tmp_path
    )
    assert shut.returncode == 0 and shut.stdout == "alive\n"


def test_the_sdk_runner_and_monitor_use_it(tmp_path: Path) -> None:
    from flightlog.alerts import monitor
    from flightlog.runner import runner
    from flightlog.sdk import writer

    for say in (writer.warn, runner.say, monitor._say):
        out = _child(f"from {say.__module__} import {say.__name__}; {say.__name__}('one way')", tmp_path)
        assert out.returncode == 0, out.stderr
        assert out.stderr.endswith("flightlog: one way\n"), (say, out.stderr)


def _writes_to_stderr(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    text = ast.unparse(node.func)
    keywords = {k.arg: ast.unparse(k.value) for k in node.keywords}
    return (
        text in ("sys.stderr.write", "sys.__stderr__.write")
        or (text == "print" and keywords.get("file") in ("sys.stderr", "sys.__stderr__"))
        or (text == "click.echo" and keywords.get("err") == "True")
    )


def test_no_module_outside_the_command_line_writes_to_stderr_its_own_way() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in ("notices.py", *STANDALONE) or any(rel.startswith(s) or rel.endswith(s) for s in CLI_SIDE):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), rel)
        found += [f"{rel}:{n.lineno}" for n in ast.walk(tree) if _writes_to_stderr(n)]
    assert found == [], "say it with flightlog.notices.notice:\n" + "\n".join(found)
