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
#
# One combined, anchored regex per kind of first character: a line costs one ``match`` call,
# and ``lastgroup`` says which alternative matched (each ends with its own named group).

_WORDS = (
    r"TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|ERR|CRITICAL|CRIT|FATAL|SEVERE|PANIC|EMERG|ALERT|EXCEPTION|DBG"
)
_MIXED_WORDS = r"[Ee]rror|[Ww]arning|[Ww]arn|[Ff]atal|[Cc]ritical|[Dd]ebug|[Ii]nfo|[Nn]otice|[Pp]anic"
_LETTERS = {"D": 10, "I": 20, "W": 30, "E": 40, "F": 50}
_CRASHES = (
    r"Segmentation fault|Aborted|Bus error|Floating point exception|Illegal instruction"
    r"|terminate called|Killed$|CUDA out of memory|thread '[^']*' panicked at|Caused by: "
)
_EXCEPTION = r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Fault)(?=:|$)"

# Lines that start with a letter.
_WORDY = re.compile(
    rf"(?P<py_level>{_WORDS}):(?P<py_comp>[^:\s]+):"  # WARNING:root:msg
    rf"|\[?(?P<word>{_WORDS})\]?(?=[\s:|\]\-]|$)"  # ERROR …, [ERROR] …, SEVERE: …
    r"|(?P<glog>[IWEF])\d{4} \d\d:\d\d:\d\d\.\d+"  # E1130 12:00:00.123
    r"|(?P<letter>[DIWEF])[ /]"  # W …, W/Tag (logcat)
    rf"|(?P<crash>{_CRASHES})"
    rf"|(?P<exception>{_EXCEPTION})"  # ValueError: …, torch.cuda.OutOfMemoryError: …
    r"|(?P<fatal>panic: |fatal error: |Fatal Python error: )"
    rf"|\[?(?P<mixed>{_MIXED_WORDS})\]?(?=:|\]|$)"  # Error: …, warning: …
)
# Lines that start with a timestamp (or "[" and a timestamp), and what follows it.
_TIMESTAMPED = re.compile(
    r"\[?(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d)?(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|\d\d:\d\d:\d\d(?:[.,]\d+)?)\]?"
    r"(?:"
    # 2026-11-30 12:00:00,123 - name - INFO - msg
    rf"\s*-\s*(?P<dash_comp>[\w.\-<>]+)\s+-\s+(?P<dash>{_WORDS})\s+-"
    # [2026-11-30 12:00:00,123][name][INFO] - msg   (hydra)
    rf"|\s*\[(?P<hydra_comp>[\w.\-<>]+)\]\s*\[(?P<hydra>{_WORDS})\]"
    # 2026-11-30 12:00:00.123 | INFO     | module:func:12 - msg   (loguru)
    rf"|\s*\|\s*(?P<loguru>{_WORDS})\s*\|\s*(?P<loguru_comp>[\w.\-<>]+)"
    # 2026-11-30 12:00:00,123 INFO name: msg    /    … INFO  [main] com.x.Y - msg
    rf"|\s+\[?(?P<named>{_WORDS})\]?\s+(?:\[[^\]]*\]\s+)?(?P<named_comp>[\w.\-<>]+)(?::\s| - )"
    r")?"
)
_BRACKETED = re.compile(
    rf"\[(?P<word>{_WORDS})(?:\|(?P<comp>[^\]:|\s]+)[^\]]*)?\]"  # [INFO|trainer.py:12]
    rf"|\[?(?P<mixed>{_MIXED_WORDS})\]?(?=:|\]|$)"
)
_ANY_WORD = re.compile(rf"\b(?P<level>{_WORDS})\b")
_PY_WARNING = re.compile(r"\S+?:\d+: (?P<comp>[A-Z]\w*Warning): ")
# Lower-case starts worth a regex at all (most lower-case lines are prose or metrics).
_LOWER_STARTS = (
    "error",
    "warn",
    "fatal",
    "critical",
    "debug",
    "info",
    "notice",
    "panic",
    "terminate called",
    "thread '",
    "[",
)
_EXCEPTION_HINTS = ("Error", "Exception", "Interrupt", "Fault")

Level = tuple[int, str | None]
_PLAIN: Level = (INFO, None)
_LEVEL_OF_WORD: dict[str, int] = {}
_TIMESTAMP_COMPONENT = {"dash": "dash_comp", "hydra": "hydra_comp", "loguru": "loguru_comp", "named": "named_comp"}


def _word_level(word: str) -> int:
    level = _LEVEL_OF_WORD.get(word)
    if level is None:
        level = _LEVEL_OF_WORD[word] = level_code(word, INFO)
    return level


def _wordy(m: re.Match[str]) -> Level:
    kind = m.lastgroup
    if kind == "py_comp":
        return _word_level(m.group("py_level")), m.group("py_comp")
    if kind == "word" or kind == "mixed":
        return _word_level(m.group(kind)), None
    if kind == "glog" or kind == "letter":
        return _LETTERS[m.group(kind)], None
    if kind == "fatal":
        return CRITICAL, None
    return ERROR, None  # crash, exception


def _timestamped(line: str, m: re.Match[str]) -> Level:
    kind = m.lastgroup
    if kind is not None:
        if kind.endswith("_comp"):
            kind = kind[: -len("_comp")]
        return _word_level(m.group(kind)), m.group(_TIMESTAMP_COMPONENT[kind])
    found = _ANY_WORD.search(line, m.end(), m.end() + 160)
    return (_word_level(found.group("level")), None) if found is not None else _PLAIN


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
        m = _TIMESTAMPED.match(line)
        if m is not None:
            return _timestamped(line, m)
        if first == "[":
            m = _BRACKETED.match(line)
            if m is not None:
                return _word_level(m.group(m.group("word") and "word" or "mixed")), m.group("comp")
    elif first.isupper():
        m = _WORDY.match(line)
        if m is not None:
            return _wordy(m)
    elif first.islower():
        if line.startswith(_LOWER_STARTS) or (
            any(hint in line for hint in _EXCEPTION_HINTS) and "." in line
        ):
            m = _WORDY.match(line)
            if m is not None:
                return _wordy(m)
    return _python_warning(line) or _PLAIN
