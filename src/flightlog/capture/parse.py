"""What a single line says about itself: level and component, or structure (JSON, logfmt).

Only lines that *could* carry something are looked at (the grouper decides which, by their
first character); each rule is anchored at the start of the line and tried in a short list
chosen by that first character, so a plain line costs one or two failed matches.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

import msgspec

from flightlog.logevents import level_code

__all__ = ["Parsed", "classify", "parse_json", "parse_logfmt", "INFO", "ERROR", "WARNING", "CRITICAL"]

INFO = 20
WARNING = 30
ERROR = 40
CRITICAL = 50


class Parsed(NamedTuple):
    """A structured line: its level, component, message and remaining fields."""

    level: int
    component: str | None
    message: str
    fields: dict[str, Any] | None


# --- JSON lines ---------------------------------------------------------------------------

_LEVEL_KEYS = ("level", "levelname", "severity", "lvl", "log.level", "loglevel")
_COMPONENT_KEYS = ("logger", "name", "component", "module", "logger_name", "log.logger")
_MESSAGE_KEYS = ("msg", "message", "event", "text")
_decode_json = msgspec.json.Decoder().decode


def _level_of(value: Any) -> int:
    if isinstance(value, bool):
        return INFO
    if isinstance(value, int | float):
        # Python's logging numbers; bunyan/pino's 60 ("fatal") and above clamp to critical.
        return max(5, min(CRITICAL, int(value))) if value > 0 else INFO
    if isinstance(value, str):
        return level_code(value, INFO)
    return INFO


def _text_of(value: Any) -> str:
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()


def parse_json(line: str) -> Parsed | None:
    """Parse a line that starts with ``{``; None when it is not a JSON object."""
    try:
        obj = _decode_json(line)
    except (msgspec.DecodeError, ValueError):
        return None
    if not isinstance(obj, dict):
        return None
    level = INFO
    component: str | None = None
    message: str | None = None
    for key in _LEVEL_KEYS:
        if key in obj:
            level = _level_of(obj.pop(key))
            break
    for key in _COMPONENT_KEYS:
        if key in obj and isinstance(obj[key], str | int):
            component = str(obj.pop(key))
            break
    for key in _MESSAGE_KEYS:
        if key in obj:
            message = _text_of(obj.pop(key))
            break
    return Parsed(level, component, line if message is None else message, obj or None)


# --- logfmt -------------------------------------------------------------------------------

_LOGFMT_LEVEL = re.compile(r"(?:^|\s)(?:level|lvl|severity|log\.level)=\"?([A-Za-z]+)")
_LOGFMT_PAIR = re.compile(r"([A-Za-z_][\w.\-/]*)=(\"(?:[^\"\\]|\\.)*\"|\S*)")


def parse_logfmt(line: str) -> Parsed | None:
    """``time=… level=warn msg="disk slow" disk=sda`` → level, message and fields."""
    if _LOGFMT_LEVEL.search(line) is None:
        return None
    pairs: dict[str, Any] = {}
    for key, raw in _LOGFMT_PAIR.findall(line):
        if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
            raw = raw[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        pairs[key] = raw
    level = INFO
    for key in ("level", "lvl", "severity", "log.level"):
        if key in pairs:
            level = level_code(pairs.pop(key), INFO)
            break
    component = None
    for key in ("logger", "component", "module", "logger_name"):
        if key in pairs:
            component = pairs.pop(key)
            break
    message = line
    for key in ("msg", "message"):
        if key in pairs:
            message = pairs.pop(key)
            break
    return Parsed(level, component, message, pairs or None)


# --- plain lines --------------------------------------------------------------------------

_WORDS = (
    r"TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|ERR|CRITICAL|CRIT|FATAL|SEVERE|PANIC|EMERG|ALERT|EXCEPTION|DBG"
)
_MIXED_WORDS = r"[Ee]rror|[Ww]arning|[Ww]arn|[Ff]atal|[Cc]ritical|[Dd]ebug|[Ii]nfo|[Nn]otice|[Pp]anic"
_SINGLE_LETTER = {"D": 10, "I": 20, "W": 30, "E": 40, "F": 50}

_PY_BASIC = re.compile(rf"(?P<level>{_WORDS}):(?P<comp>[^:\s]+):")
_UPPER = re.compile(rf"\[?(?P<level>{_WORDS})\]?(?=[\s:|\]\-]|$)")
_BRACKET = re.compile(rf"\[(?P<level>{_WORDS})(?:\|(?P<comp>[^\]:|\s]+)[^\]]*)?\]")
_MIXED = re.compile(rf"\[?(?P<level>{_MIXED_WORDS})\]?(?=:|\]|$)")
_GLOG = re.compile(r"(?P<letter>[IWEF])\d{4} \d\d:\d\d:\d\d\.\d+")
_LETTER = re.compile(r"(?P<letter>[DIWEF])[ /]")
_PY_WARNING = re.compile(r"\S+?:\d+: (?P<comp>[A-Z]\w*Warning): ")
_EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Fault)(?=:|$)")
_CRASH = re.compile(
    r"Segmentation fault|Aborted|Bus error|Floating point exception|Illegal instruction"
    r"|terminate called|Killed$|CUDA out of memory|thread '[^']*' panicked at|Caused by: "
)
_FATAL = re.compile(r"panic: |fatal error: |Fatal Python error: ")
_TIMESTAMP = re.compile(
    r"\[?(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d)?(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|\d\d:\d\d:\d\d(?:[.,]\d+)?)\]?"
)
_AFTER_TIMESTAMP = (
    # 2026-11-30 12:00:00,123 - name - INFO - msg
    re.compile(rf"\s*-\s*(?P<comp>[\w.\-<>]+)\s+-\s+(?P<level>{_WORDS})\s+-"),
    # [2026-11-30 12:00:00,123][name][INFO] - msg   (hydra)
    re.compile(rf"\s*\[(?P<comp>[\w.\-<>]+)\]\s*\[(?P<level>{_WORDS})\]"),
    # 2026-11-30 12:00:00.123 | INFO     | module:func:12 - msg   (loguru)
    re.compile(rf"\s*\|\s*(?P<level>{_WORDS})\s*\|\s*(?P<comp>[\w.\-<>]+)"),
    # 2026-11-30 12:00:00,123 INFO name: msg    /    ... INFO  [main] com.x.Y - msg
    re.compile(rf"\s+\[?(?P<level>{_WORDS})\]?\s+(?:\[[^\]]*\]\s+)?(?P<comp>[\w.\-<>]+)(?::\s| - )"),
)
_ANY_WORD = re.compile(rf"\b(?P<level>{_WORDS})\b")

Level = tuple[int, str | None]
_PLAIN: Level = (INFO, None)


_LEVEL_OF_WORD: dict[str, int] = {}


def _word_level(word: str) -> int:
    level = _LEVEL_OF_WORD.get(word)
    if level is None:
        level = _LEVEL_OF_WORD[word] = level_code(word, INFO)
    return level


def _from(m: re.Match[str], component: bool = True) -> Level:
    comp = m.groupdict().get("comp") if component else None
    return _word_level(m.group("level")), comp


def _after_timestamp(line: str, pos: int) -> Level:
    rest = line[pos : pos + 160]
    for rule in _AFTER_TIMESTAMP:
        m = rule.match(rest)
        if m is not None:
            return _from(m)
    m = _ANY_WORD.search(rest)
    return _from(m, component=False) if m is not None else _PLAIN


def _common(line: str) -> Level | None:
    """Rules whose line may start with any character."""
    if "Warning: " in line:
        m = _PY_WARNING.match(line)
        if m is not None:
            return WARNING, m.group("comp")
    return None


def classify(line: str) -> Level:
    """Level code and component of a plain line, from its recognisable prefix; else info."""
    first = line[:1]
    if not first:
        return _PLAIN
    if first == "[" or first.isdigit():
        m = _TIMESTAMP.match(line)
        if m is not None:
            return _after_timestamp(line, m.end())
        if first == "[":
            m = _BRACKET.match(line) or _MIXED.match(line)
            return _from(m) if m is not None else _PLAIN
        return _common(line) or _PLAIN
    if first.isupper():
        m = _PY_BASIC.match(line)
        if m is not None:
            return _from(m)
        m = _UPPER.match(line)
        if m is not None:
            return _from(m, component=False)
        m = _GLOG.match(line) or _LETTER.match(line)
        if m is not None:
            return _SINGLE_LETTER[m.group("letter")], None
        if _CRASH.match(line) or _EXCEPTION.match(line):
            return ERROR, None
        if _FATAL.match(line):
            return CRITICAL, None
        m = _MIXED.match(line)
        if m is not None:
            return _from(m, component=False)
        return _common(line) or _PLAIN
    if first.islower():
        m = _MIXED.match(line)
        if m is not None:
            return _from(m, component=False)
        if _FATAL.match(line):
            return CRITICAL, None
        if _CRASH.match(line) or _EXCEPTION.match(line):
            return ERROR, None
    return _common(line) or _PLAIN
