"""What a line says about itself: JSON and logfmt structure, level prefixes."""

from __future__ import annotations

import pytest

from flightlog.capture.parse import classify, parse_json, parse_logfmt

from .conftest import Capture


def test_json_lines_are_parsed_into_level_component_message_and_fields(capture: Capture) -> None:
    lines = (
        b'{"time": "2026-11-30T12:00:00Z", "level": "warning", "logger": "data", "msg": "slow", "batch": 3}\n'
        b'{"levelname": "ERROR", "name": "trainer", "message": "nan loss", "step": 7}\n'
        b'{"severity": "DEBUG", "component": "io", "event": "opened", "path": "/d"}\n'
        b'{"lvl": 40, "module": "m", "text": "numeric level"}\n'
        b'{"log.level": "info", "log.logger": "ecs", "message": "dotted keys"}\n'
        b'{"status": "no message key"}\n'
    )
    events = capture(lines)
    assert [(e["level"], e["component"], e["message"], e["fields"]) for e in events] == [
        (30, "data", "slow", {"time": "2026-11-30T12:00:00Z", "batch": 3}),
        (40, "trainer", "nan loss", {"step": 7}),
        (10, "io", "opened", {"path": "/d"}),
        (40, "m", "numeric level", None),
        (20, "ecs", "dotted keys", None),
        (20, None, '{"status": "no message key"}', {"status": "no message key"}),
    ]


def test_json_fields_with_secret_keys_are_redacted(capture: Capture) -> None:
    line = b'{"msg": "login", "user": "bob", "password": 1234, "auth": {"client_secret": "s", "scopes": ["a"]}}\n'
    (event,) = capture(line)
    assert event["fields"] == {
        "user": "bob",
        "password": "[REDACTED:secret]",
        "auth": {"client_secret": "[REDACTED:secret]", "scopes": ["[REDACTED:secret]"]},
    }


def test_lines_that_look_like_json_but_are_not_objects_stay_plain(capture: Capture) -> None:
    events = capture(b"{not json\n[1, 2]\n{}\n")
    assert [(e["message"], e["fields"]) for e in events] == [
        ("{not json", None),
        ("[1, 2]", None),
        ("{}", None),
    ]


def test_parse_json_rejects_what_is_not_an_object() -> None:
    assert parse_json("{") is None
    assert parse_json('{"a": 1') is None
    assert parse_json('{"msg": {"nested": 1}}') == (20, None, '{"nested":1}', None)


def test_logfmt_lines_give_level_message_and_fields() -> None:
    parsed = parse_logfmt('time=2026-11-30T12:00:00Z level=warn logger=disk msg="slow batch" batch=12')
    assert parsed is not None
    assert parsed == (30, "disk", "slow batch", {"time": "2026-11-30T12:00:00Z", "batch": "12"})
    assert parse_logfmt("loss=0.1 lr=0.01") is None


@pytest.mark.parametrize(
    ("value", "level"),
    [
        ("40", 40),
        ("60", 50),
        ("0", 20),
        ("\u00b96", 20),
        ("-3", 20),
        ("trace", 5),
    ],
)
def test_numeric_levels_written_as_text_read_like_numbers(value: str, level: int) -> None:
    """`level=40` in logfmt or `"level": "40"` in JSON is Python's 40; pino's 60 clamps to critical;
    anything no number reads as (`¹6`) is info, never an error."""
    assert parse_logfmt(f"level={value} msg=hi") == (level, None, "hi", None)
    assert parse_json(f'{{"level": "{value}", "msg": "hi"}}') == (level, None, "hi", None)


@pytest.mark.parametrize(
    ("line", "level", "component"),
    [
        ("ERROR something broke", 40, None),
        ("[ERROR] something broke", 40, None),
        ("[warn] disk", 30, None),
        ("E1130 12:00:00.123456  1234 trainer.cc:42] bad", 40, None),
        ("W1130 12:00:00.123456  1234 trainer.cc:42] careful", 30, None),
        ("I1130 12:00:00.123456  1234 trainer.cc:42] fine", 20, None),
        ("WARNING:root:msg", 30, "root"),
        ("INFO:my.module:hello", 20, "my.module"),
        ("2026-11-30 12:00:00,123 - name - INFO - msg", 20, "name"),
        ("2026-11-30 12:00:00,123 - trainer - ERROR - failed", 40, "trainer"),
        ("[2026-11-30 12:00:00,123][__main__][WARNING] - hydra", 30, "__main__"),
        ("2026-11-30 12:00:00.123 | ERROR    | mod:func:12 - loguru", 40, "mod"),
        ("2026-11-30 12:00:00,123 WARNING name: msg", 30, "name"),
        ("2026-11-30T12:00:00Z INFO  [main] com.x.Y - log4j", 20, "com.x.Y"),
        ("12:00:01 DEBUG started", 10, None),
        ("[INFO|trainer.py:123] >> hf", 20, "trainer.py"),
        ("W something", 30, None),
        ("W/ActivityManager: logcat", 30, None),
        ("E   assert 1 == 2", 40, None),
        ("CRITICAL disk gone", 50, None),
        ("FATAL: cannot start", 50, None),
        ("panic: nil map", 50, None),
        ("SEVERE: java logging", 40, None),
        ("Error: file not found", 40, None),
        ("warning: unused variable", 30, None),
        ("ValueError: bad value", 40, None),
        ("torch.cuda.OutOfMemoryError: CUDA out of memory", 40, None),
        ("Segmentation fault (core dumped)", 40, None),
        ("/usr/lib/python3/site-packages/x.py:12: UserWarning: deprecated", 30, "UserWarning"),
        ("plain text", 20, None),
        ("Epoch 1/10", 20, None),
        ("ERRORS: 0", 20, None),
        ("INFORMATION follows", 20, None),
        ("Information: none", 20, None),
        ("2026-11-30 12:00:00 step 10", 20, None),
        ("", 20, None),
    ],
)
def test_level_prefixes(line: str, level: int, component: str | None) -> None:
    assert classify(line) == (level, component)


def test_levels_in_the_pipeline_including_logfmt(capture: Capture) -> None:
    events = capture(b"ts=1 level=error msg=boom\nWARNING:root:careful\nall good\n")
    assert [(e["level"], e["component"], e["message"]) for e in events] == [
        (40, None, "boom"),
        (30, "root", "WARNING:root:careful"),
        (20, None, "all good"),
    ]
