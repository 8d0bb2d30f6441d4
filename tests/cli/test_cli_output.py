"""What the CLI's human output does with what a run recorded: text that looks like rich markup
prints as itself, escape sequences are shown rather than obeyed, fields are shown, long values
are cut visibly and nothing is padded."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

import flightlog
from flightlog.cli.output import clip, printable
from tests.helpers import cli, cli_json, run_script

# `[/x]` made rich raise MarkupError; `[bold]` vanished without a trace
MARKUP = "a[/x]b[bold]c"
#: a test of how the CLI renders what the Client returned runs once: the records are the same on
#: every transport (tests/store is the contract every backend passes; the behaviour suites, these
#: commands' filters and follow mode included, run on each transport)
RENDERING = pytest.mark.embedded_only("rendering: the Client returns the same records on every transport")


@RENDERING
def test_text_that_looks_like_markup_prints_as_itself_everywhere(home: Path, tmp_path: Path) -> None:
    run = flightlog.init(
        project="p" + MARKUP,
        name="n" + MARKUP,
        params={"k" + MARKUP: "v" + MARKUP},
        tags={"t" + MARKUP: "v" + MARKUP},
        resources=False,
    )
    run.log({"m" + MARKUP: 1.0}, step=1)
    run.note("note " + MARKUP, author="au" + MARKUP)
    artifact = tmp_path / "f[bold]x.bin"
    artifact.write_text("x")
    run.log_artifact(artifact, kind="k" + MARKUP)
    with run.stage("s" + MARKUP):
        pass
    run.finish()
    rid = run.id
    failed = cli(
        home,
        "run",
        "--project",
        "p" + MARKUP,
        "--name",
        "n" + MARKUP,
        "--",
        sys.executable,
        "-c",
        f"raise ValueError({MARKUP!r})",
        check=False,
    )
    assert failed.returncode == 1, failed.stderr
    crashed = cli_json(home, "runs", "ls", "--filter", "status = 'failed'")[0]["id"]

    rules = tmp_path / "rules.yaml"
    rules.write_text(
        textwrap.dedent(f"""\
        rules:
          - name: loss-high
            kind: threshold
            metric: "m{MARKUP}"
            op: ">"
            value: 0
            summary: "{MARKUP} is {{value}}"
    """)
    )

    cli(home, "alerts", "silence", "loss" + MARKUP, "--for", "1h", "--labels", f"gpu={MARKUP}", "--comment", MARKUP)

    outputs = {
        args: cli(home, *args).stdout
        for args in (
            ("runs", "ls", "-c", f"params.k{MARKUP},tags.t{MARKUP},metrics.m{MARKUP}"),
            ("runs", "show", rid),
            ("runs", "show", crashed),
            ("projects",),
            ("metrics", rid),
            ("metrics", rid, "m" + MARKUP),
            ("artifacts", rid),
            ("artifacts", rid, "lineage"),
            ("rightsize", rid),
            ("diagnose", crashed),
            ("compare", crashed, rid),
            ("alerts", "test", str(rules), "--run", rid, "--interval", "0.05s"),
            ("alerts", "silences"),
        )
    }
    for args, out in outputs.items():  # each command ran (no MarkupError) and shows the text as it is
        shown = "f[bold]x.bin" if "lineage" in args else MARKUP
        assert shown in out or args[0] in ("rightsize", "compare"), (args, out)
    show = outputs[("runs", "show", rid)]
    for text in (
        "p" + MARKUP,
        "n" + MARKUP,
        f"k{MARKUP} = 'v{MARKUP}'",
        f"t{MARKUP}=v{MARKUP}",
        "m" + MARKUP,
        "s" + MARKUP,
        "f[bold]x.bin",
        "k" + MARKUP,
        "note " + MARKUP,
        "au" + MARKUP,
    ):
        assert text in show, (text, show)
    assert f"ValueError: {MARKUP}" in outputs[("runs", "show", crashed)]
    assert MARKUP in outputs[("diagnose", crashed)]
    assert f"{MARKUP} is 1" in outputs[("alerts", "test", str(rules), "--run", rid, "--interval", "0.05s")]


@RENDERING
def test_escape_sequences_in_recorded_text_are_shown_not_obeyed(home: Path) -> None:
    run = flightlog.init(project="esc", name="title\x1b]0;pwned\x07", resources=False)
    run.log_event(
        "red \x1b[31malert\x1b[0m\tand a tab", component="c\x1b[2J", fields={"path": "a\x9bb", "two words": "x y"}
    )
    run.log_event(
        'a traceback follows\nTraceback (most recent call last):\n  File "x.py", line 1\nValueError: \x1b[Hboom',
        level="error",
    )
    run.finish()
    logs = cli(home, "logs", run.id).stdout
    assert "\x1b" not in logs and "\x9b" not in logs and "\x07" not in logs
    assert "red \\x1b[31malert\\x1b[0m\tand a tab" in logs  # the tab stays a tab
    assert "c\\x1b[2J: " in logs and "path=a\\x9bb" in logs
    assert '\nTraceback (most recent call last):\n  File "x.py", line 1\nValueError: \\x1b[Hboom\n' in logs
    show = cli(home, "runs", "show", run.id).stdout
    assert "\x1b" not in show and "title\\x1b]0;pwned\\x07" in show
    # the capture strips colour codes (ESC sequences) from what it stores; what it keeps, a C1
    # control sequence introducer and a bell, still reaches every part of the diagnosis
    failed = cli(
        home,
        "run",
        "--project",
        "esc",
        "--",
        sys.executable,
        "-c",
        "import sys; sys.stderr.write('\\x1b[2JFileNotFoundError: [Errno 2] No such file or directory: '"
        " \"'data/\\x1b[31m\\x9b2J\\x07train.csv'\\n\"); sys.exit(1)",
        check=False,
    )
    assert failed.returncode == 1
    crashed = cli_json(home, "runs", "ls", "--filter", "status = 'failed'")[0]["id"]
    report = cli(home, "diagnose", crashed).stdout
    assert "missing_file" in report and "\x1b" not in report and "\x9b" not in report and "\x07" not in report
    assert report.count("data/\\x9b2J\\x07train.csv") >= 3, report  # summary, evidence, next steps
    # JSON keeps the bytes, escaped the JSON way
    assert cli_json(home, "runs", "show", run.id)["name"] == "title\x1b]0;pwned\x07"


def test_logs_follow_escapes_too(home: Path) -> None:
    run = flightlog.init(project="esc", resources=False)
    run.log_event("bell\x07 and \x1b[2J")
    run.finish()
    out = cli(home, "logs", run.id, "--follow").stdout
    assert out == "INFO     bell\\x07 and \\x1b[2J\n"


def test_logs_text_shows_the_fields_of_a_logging_handler_event(home: Path) -> None:
    script = home.parent / "train.py"
    script.write_text(
        textwrap.dedent("""\
        import logging, flightlog
        logging.basicConfig(level=logging.INFO, handlers=[flightlog.logging_handler()])
        log = logging.getLogger("trainer")
        with flightlog.init(project="fields", resources=False):
            log.info("epoch done", extra={"epoch": 3, "val_acc": 0.91, "note": "two words", "tags": ["a", "b"]})
            try:
                1 / 0
            except ZeroDivisionError:
                log.exception("step failed", extra={"step": 7})
    """)
    )
    cli(
        home, "run", "--project", "fields", "--", sys.executable, str(script)
    )  # the runner records the handler's JSON lines
    run_script(home, script.read_text())  # the handler records the events itself (stream sdk)
    runs = cli_json(home, "runs", "ls", "--project", "fields")
    assert len(runs) == 2
    for run in runs:
        text = cli(home, "logs", run["id"]).stdout
        assert re.search(r"epoch done  epoch=3 val_acc=0\.91 note=\"two words\" tags=\[\"a\", \"b\"\]\n", text), text
        # the handler's envelope (run id, project, attempt, time) repeats the event: not shown
        assert "run_id=" not in text and "project=" not in text and "timestamp=" not in text
        assert re.search(
            r"step failed  step=7\nTraceback \(most recent call last\):\n(.*\n)*ZeroDivisionError: division by zero\n",
            text,
        ), text


def test_logs_text_does_not_repeat_what_a_logfmt_line_says(home: Path) -> None:
    code = (
        "print('level=info msg=\"epoch done\" epoch=3 loss=0.25'); "
        "print('time=2026-01-01T00:00:00Z level=warn component=io disk=90%')"
    )
    cli(home, "run", "--project", "logfmt", "--", sys.executable, "-c", code)
    run = cli_json(home, "runs", "ls", "--project", "logfmt")[0]["id"]
    assert cli(home, "logs", run).stdout.splitlines() == [
        "epoch done  epoch=3 loss=0.25",  # msg= became the message, the rest its fields
        "time=2026-01-01T00:00:00Z level=warn component=io disk=90%",  # kept whole: its fields are in it
    ]


@RENDERING
def test_metrics_of_a_run_without_metrics(home: Path) -> None:
    run = flightlog.init(project="quiet", resources=False)
    run.finish()
    text = cli(home, "metrics", run.id)
    assert text.stdout == f'run {run.id[:8]} has no metrics (record some with run.log({{"loss": value}}, step=i))\n'
    assert json.loads(cli(home, "metrics", run.id, "--format", "json").stdout) == []


@RENDERING
def test_runs_show_neither_pads_nor_cuts_silently(home: Path, tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 150) / ("z" * 100 + ".bin")
    deep.parent.mkdir()
    deep.write_text("x")
    run = flightlog.init(project="wide", params={"path": "/data/" + "x" * 300 + "/train.csv"}, resources=False)
    run.log_artifact(deep.parent)
    run.finish()
    lines = cli(home, "runs", "show", run.id).stdout.splitlines()
    assert all(line == line.rstrip() for line in lines), [line for line in lines if line != line.rstrip()]
    assert max(map(len, lines)) <= 200
    param = next(line for line in lines if "path = " in line)
    assert "…" in param and param.endswith("/train.csv'")
    artifact = next(line for line in lines if line.endswith(".bin  1B"))
    assert "…" in artifact and "zzz.bin" in artifact and artifact.startswith("  output")
    assert next(line for line in lines if line.startswith("project")) == "project     wide"
    for args in (("runs", "ls"), ("metrics", run.id), ("artifacts", run.id), ("projects",)):
        listing = cli(home, *args).stdout.splitlines()
        assert [line for line in listing if line != line.rstrip()] == [], args


def test_clip_and_printable() -> None:
    assert clip("abcdef", 10) == "abcdef"
    assert clip("abcdefghij", 5) == "ab…ij" and len(clip("x" * 300, 200)) == 200
    assert printable("a\x00b\rc\x7f\x85\u00e9\t\n") == "a\\x00b\\rc\\x7f\\x85\u00e9\t\n"


@RENDERING
def test_runs_show_says_how_a_run_without_an_exception_ended(home: Path, tmp_path: Path) -> None:
    """A run stopped at ``--timeout`` printed no exception: ``runs show`` said ``failure :``
    (an empty exception and message around a colon). It says how the run ended, in the
    runner's words. Found on a complete batch-scoring run written for the purpose (issue 29)."""
    script = tmp_path / "score.py"
    script.write_text("import time\nprint('scoring', flush=True)\ntime.sleep(60)\n")
    ended = cli(
        home,
        "run",
        "--name",
        "stopped",
        "--timeout",
        "1s",
        "--kill-grace",
        "1s",
        "--",
        sys.executable,
        str(script),
        check=False,
    )
    assert ended.returncode == 124, ended.stderr
    run_id = cli_json(home, "runs", "ls", "--filter", "name = 'stopped'")[0]["id"]
    lines = cli(home, "runs", "show", run_id).stdout.splitlines()
    failure = next(line for line in lines if line.startswith("failure"))
    assert failure == "failure stopped at its time limit; last line: scoring", failure


@RENDERING
def test_runs_show_never_calls_a_compiled_library_s_frame_your_code(home: Path, tmp_path: Path) -> None:
    """pyarrow's Cython frames are recorded with paths relative to the package
    (``pyarrow/error.pxi``), like a script's: ``runs show`` marked each of them "your code"
    above the script's own line. Found on a complete scoring run written for the purpose
    (issue 29)."""
    pytest.importorskip("pyarrow")
    script = tmp_path / "score.py"
    script.write_text("import pyarrow as pa\nstores = pa.array(['S03', 'S04'])\nstores.cast(pa.int64())\n")
    ended = cli(home, "run", "--name", "cast", "--", sys.executable, str(script), check=False)
    assert ended.returncode == 1, ended.stderr
    run_id = cli_json(home, "runs", "ls", "--filter", "name = 'cast'")[0]["id"]
    lines = cli(home, "runs", "show", run_id).stdout.splitlines()
    frames = lines[lines.index(next(line for line in lines if line.startswith("failure"))) + 1 :]
    frames = frames[: frames.index("") if "" in frames else len(frames)]
    assert any(".pxi:" in line or ".pyx:" in line for line in frames), frames
    assert [line for line in frames if line.endswith("your code")] == [
        line for line in frames if "score.py:3 in <module>" in line
    ], frames
    assert frames[0].endswith("your code"), frames
