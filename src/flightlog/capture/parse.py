"""What a single line says about itself: level and component, or structure (JSON, logfmt).

Only lines that *could* carry something are looked at (the grouper decides which, by their
first character); each rule is anchored at the start of the line and tried in a short list
chosen by that first character, so a plain line costs one or two failed matches.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from flightlog.logevents import level_code

__all__ = [
    "Parsed",
    "classify",
    "parse_json",
    "parse_logfmt",
    "INFO",
    "ERROR",
    "WARNING",
    "CRITICAL",
]

INFO = 20
WARNING = 30
ERROR = 40
CRITICAL = 50


#: A structured line: its level, component, message and remaining fields. A plain tuple,
#: because a named one costs more to build than the rest of parsing a JSON line.
Parsed = tuple[int, "str | None", str, "dict[str, Any] | None"]


# --- JSON lines ---------------------------------------------------------------------------


class _Roles:
    """Which keys of a structured line hold its level, component and message; earlier names
    win when several are present."""

    __slots__ = ("level", "component", "message")

    def __init__(self, level: tuple[str, ...], component: tuple[str, ...], message: tuple[str, ...]) -> None:
        self.level = level
        self.component = component
        self.message = message

    def pick(self, obj: dict[str, Any]) -> tuple[str | None, str | None, str | None]:
        """``(level key, component key, message key)`` of ``obj`` (None where absent)."""
        chosen: list[str | None] = []
        for names in (self.level, self.component, self.message):
            for name in names:
                if name in obj:
                    chosen.append(name)
                    break
            else:
                chosen.append(None)
        return chosen[0], chosen[1], chosen[2]


_JSON_ROLES = _Roles(
    ("level", "levelname", "severity", "lvl", "log.level", "loglevel"),
    ("logger", "name", "component", "module", "logger_name", "log.logger"),
    ("msg", "message", "event", "text"),
)
_decode_json = msgspec.json.Decoder().decode
_JSON_LEVELS: dict[str, int] = {}  # "info", "INFO", "warning", … seen so far


def _level_of(value: Any) -> int:
    if type(value) is str:
        level = _JSON_LEVELS.get(value)
        if level is None:
            level = _clamped(level_code(value, INFO))
            if len(_JSON_LEVELS) < 256:
                _JSON_LEVELS[value] = level
        return level
    if type(value) in (int, float):
        return _clamped(int(value))
    return INFO


def _clamped(level: int) -> int:
    """Python's logging numbers; bunyan/pino's 60 ("fatal") and above clamp to critical."""
    return max(5, min(CRITICAL, level)) if level > 0 else INFO


def _text_of(value: Any) -> str:
    if type(value) is str:
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
    level_key, component_key, message_key = _JSON_ROLES.pick(obj)
    level = INFO if level_key is None else _level_of(obj.pop(level_key))
    component: str | None = None
    if component_key is not None and type(obj[component_key]) in (str, int):
        component = str(obj.pop(component_key))
    message = line if message_key is None else _text_of(obj.pop(message_key))
    return level, component, message, obj or None


# --- logfmt -------------------------------------------------------------------------------

_LOGFMT_PAIR = re.compile(r"([A-Za-z_][\w.\-/]*)=(\"(?:[^\"\\]|\\.)*\"|\S*)")
_LOGFMT_ROLES = _Roles(
    ("level", "lvl", "severity", "log.level"),
    ("logger", "component", "module", "logger_name"),
    ("msg", "message"),
)


def _logfmt_pairs(line: str) -> dict[str, Any]:
    if '"' not in line:  # no quoted values: splitting on spaces is exact and much cheaper
        pairs: dict[str, Any] = {}
        for token in line.split():
            key, eq, value = token.partition("=")
            if eq and key:
                pairs[key] = value
        return pairs
    pairs = {}
    for key, raw in _LOGFMT_PAIR.findall(line):
        if raw[:1] == '"' and raw[-1:] == '"' and len(raw) >= 2:
            raw = raw[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        pairs[key] = raw
    return pairs


def parse_logfmt(line: str) -> Parsed | None:
    """``time=… level=warn msg="disk slow" disk=sda`` → level, message and fields; None when
    the line has no ``level=`` (or ``lvl=``, ``severity=``) pair."""
    pairs = _logfmt_pairs(line)
    level_key, component_key, message_key = _LOGFMT_ROLES.pick(pairs)
    if level_key is None:
        return None
    level = _level_of(pairs.pop(level_key))
    component = None if component_key is None else pairs.pop(component_key)
    message = line if message_key is None else pairs.pop(message_key)
    return level, component, message, pairs or None


# --- plain lines --------------------------------------------------------------------------
#
# Most lines are classified with string methods and one dictionary lookup; a regex runs only
# when a cheap test says it may match. Level words are upper-case, and upper-case runs are rare
# in a log line, so finding the first run of capitals is both fast and a good anchor.

_LEVEL_WORDS: dict[str, int] = {
    word: level_code(word)
    for word in (
        "TRACE",
        "DEBUG",
        "DBG",
        "INFO",
        "NOTICE",
        "WARNING",
        "WARN",
        "ERROR",
        "ERR",
        "CRITICAL",
        "CRIT",
        "FATAL",
        "SEVERE",
        "PANIC",
        "EMERG",
        "ALERT",
        "EXCEPTION",
    )
}
_MIXED_WORDS: dict[str, int] = {
    word: level_code(word)
    for word in (
        "error",
        "warning",
        "warn",
        "fatal",
        "critical",
        "debug",
        "info",
        "notice",
        "panic",
    )
}
_MIXED_STARTS = tuple(_MIXED_WORDS) + tuple(w.capitalize() for w in _MIXED_WORDS)
_LETTERS = {"D": 10, "I": 20, "W": 30, "E": 40, "F": 50}
_AFTER_WORD = frozenset(" \t:|]-")
_ERROR_STARTS = (
    "Segmentation fault",
    "Aborted",
    "Bus error",
    "Floating point exception",
    "Illegal instruction",
    "terminate called",
    "Killed",
    "CUDA out of memory",
    "Caused by: ",
    "thread '",
)
_CRITICAL_STARTS = ("panic: ", "fatal error: ", "Fatal Python error: ")
_EXCEPTION_HINTS = ("Error", "Exception", "Interrupt", "Fault")

_CAPITALS = re.compile(r"[A-Z]{3,}")
_GLOG = re.compile(r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d")
_TIMESTAMP = re.compile(
    r"\[?(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d)?(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|\d\d:\d\d:\d\d(?:[.,]\d+)?)\]?"
)
# After the level word: "| module:func" (loguru), " name: msg", "  [main] com.x.Y - msg" (log4j)
# A timestamp, then (before any capital letter) the first run of capitals: usually the level.
_TIMESTAMP_LEVEL = re.compile(_TIMESTAMP.pattern + r"(?P<gap>[^A-Z\n]{0,120}?)(?P<word>[A-Z]{3,})(?![A-Za-z0-9])")
_COMPONENT_AFTER = re.compile(r"[\]\s|]*(?:\[[^\]]*\]\s+)?(?P<comp>[\w.\-<>]+)(?=:| - )")
_EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Fault)(?=:|$)")
_PY_WARNING = re.compile(r"\S+?:\d+: (?P<comp>[A-Z]\w*Warning): ")
_BRACKET_WORD = re.compile(r"\[(?P<word>[A-Za-z]+)(?:\|(?P<comp>[^\]:|\s]+)[^\]]*)?\]")

Level = tuple[int, str | None]
_PLAIN: Level = (INFO, None)


def _level_word(line: str, start: int, end: int) -> tuple[int, int, int] | None:
    """The first level word (in capitals, standing alone) in ``line[start:end]``."""
    pos = start
    while True:
        m = _CAPITALS.search(line, pos, end)
        if m is None:
            return None
        level = _LEVEL_WORDS.get(m.group())
        s, e = m.span()
        if level is not None and (s == 0 or not line[s - 1].isalnum()) and (e >= len(line) or not line[e].isalnum()):
            return level, s, e
        pos = e


def _timestamped(line: str, ts_end: int) -> Level:
    """``<timestamp> … LEVEL …``: the level, and the component around it when the format
    names one (``- name - INFO -``, ``[name][INFO]``, ``| INFO | module:``, ``INFO name:``)."""
    found = _level_word(line, ts_end, ts_end + 120)
    if found is None:
        return _PLAIN
    level, s, e = found
    before = line[ts_end:s].strip(" \t-[]|:")
    if before:
        return level, before if " " not in before and "\t" not in before else None
    m = _COMPONENT_AFTER.match(line, e)
    return level, m.group("comp") if m is not None else None


def _capitalised(line: str) -> Level | None:
    """Lines that start with a capital letter: level words, glog, crashes, exceptions."""
    if line[1:2].isdigit():
        return (_LETTERS[line[0]], None) if _GLOG.match(line) else None
    if line[1:2] in (" ", "/"):
        level = _LETTERS.get(line[0])
        return (level, None) if level is not None else None
    m = _CAPITALS.match(line)
    if m is not None:
        level = _LEVEL_WORDS.get(m.group())
        end = m.end()
        if level is not None and (end == len(line) or line[end] in _AFTER_WORD):
            if line[end : end + 1] == ":":  # Python logging's default: WARNING:root:msg
                colon = line.find(":", end + 1)
                name = line[end + 1 : colon] if colon > end + 1 else ""
                if name and " " not in name:
                    return level, name
            return level, None
    return None


def _worded(line: str) -> Level | None:
    """``Error: …``, ``warning: …``, ``panic: …``, ``Segmentation fault``, ``ValueError: x``."""
    if line.startswith(_CRITICAL_STARTS):
        return CRITICAL, None
    if line.startswith(_ERROR_STARTS):
        return ERROR, None
    if line.startswith(_MIXED_STARTS):
        word = line[: len(line) - len(line.lstrip("abcdefghijklmnopqrstuvwxyzEWFCDINP"))]
        level = _MIXED_WORDS.get(word.lower())
        rest = line[len(word) : len(word) + 1]
        if level is not None and rest in (":", "]", ""):
            return level, None
    if any(hint in line for hint in _EXCEPTION_HINTS) and _EXCEPTION.match(line):
        return ERROR, None
    return None


def _python_warning(line: str) -> Level | None:
    """``/path/x.py:12: UserWarning: message`` — what ``warnings.warn`` prints."""
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
    if first.isdigit() or first == "[":
        m = _TIMESTAMP_LEVEL.match(line)  # the common case in one regex call
        if m is not None:
            level = _LEVEL_WORDS.get(m.group("word"))
            gap = m.group("gap")
            if level is not None and not gap[-1:].isalnum():
                before = gap.strip(" \t-[]|:")
                if before:
                    return level, before if " " not in before and "\t" not in before else None
                after = _COMPONENT_AFTER.match(line, m.end())
                return level, after.group("comp") if after is not None else None
        m = _TIMESTAMP.match(line)
        if m is not None:
            return _timestamped(line, m.end())
        if first == "[":
            b = _BRACKET_WORD.match(line)
            if b is not None:
                word = b.group("word")
                level = _LEVEL_WORDS.get(word) or _MIXED_WORDS.get(word.lower())
                if level is not None:
                    return level, b.group("comp")
    elif first.isupper():
        known = _capitalised(line) or _worded(line)
        if known is not None:
            return known
    elif first.islower():
        known = _worded(line)
        if known is not None:
            return known
    return _python_warning(line) or _PLAIN
