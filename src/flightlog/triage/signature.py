"""A failure's cause signature: what stays the same when the same problem strikes again.

Forty runs that died of one missing shard differ in the shard's path, the run's id and the
time in the message; the signature keeps what they share and masks the rest:

- the diagnosis category (the runner's stored one, else the fast classifier, through
  :func:`flightlog.diagnose.cause.run_cause`),
- the exception type and its message with numbers, hex, paths, uuids and ids, addresses and
  quoted values masked (:func:`normalize_message`),
- the user's own innermost frame, ``file:function`` (not site-packages, the standard library
  or flightlog's own code),
- the failing pipeline step or gate.

It reads only what the runs row holds (the stored failure summary, already redacted when it
was recorded): no log is opened. A signature never holds raw values from the message, so no
secret or user datum can reach a group's key.
"""

from __future__ import annotations

import functools
import hashlib
import re
import signal as signals
from dataclasses import dataclass
from typing import Any

import re2

from flightlog.diagnose.tracebacks import is_library_file, parse_chain
from flightlog.models import RunInfo

__all__ = ["Signature", "normalize_message", "signature_parts", "user_frame", "step_of", "MAX_MESSAGE"]

#: a normalised message is cut here: the start of a message says what went wrong
MAX_MESSAGE = 240

# by priority, each mask on what the earlier ones left; each with the characters a text must hold
# for it to match at all (a digit, for the ones that say "0"), so that most are never tried:
# ten thousand messages cost a third of the time.
#
# Compiled by RE2 (issue 31, item 8): a backtracking engine spent up to 30 ms on one crafted
# 1,000-character message ("_-1_-1…"), so 2,000 such failures held a server's CPU for a minute;
# RE2 matches in one pass, linear in the message whatever it holds. RE2's \w, \d and \b are
# ASCII: a letter outside ASCII separates words here (the same message is masked the same way
# every time, which is what a signature needs).
_D = frozenset("0123456789")
_DTYPE = re2.compile(r"(?:u?int|float|bfloat|complex|fp|bf)\d+")
_WORD_HEAD = re2.compile(r"\w+")
_ID_WORD = r"\b[A-Za-z][\w-]*\d[\w-]*\b"


def _compile(pattern: str, *, fold: bool = False) -> Any:
    options = re2.Options()
    options.case_sensitive = not fold
    options.log_errors = False
    return re2.compile(pattern, options)


def _id_or_dtype(match: Any) -> str:
    """``<id>`` for a word that mixes letters and digits (user_123, run-0f3a, shard17), except
    a dtype such as float64 or int8, which names a kind of value, not one value: it stays, and
    what follows it after a separator (``int8-shard3``) is masked on its own."""
    word = match.group(0)
    head = _WORD_HEAD.match(word)
    if head is not None and _DTYPE.fullmatch(head.group(0)):
        end = head.end()
        return word[:end] + _ID.sub(_id_or_dtype, word[end:])
    return "<id>"


_ID = _compile(_ID_WORD)
_MASKS: tuple[tuple[Any, Any, frozenset[str]], ...] = tuple(
    (pattern, mask, frozenset(needs))
    for pattern, mask, needs in (
        (_compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", fold=True), "<uuid>", "-"),
        (_compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>()]+", fold=True), "<url>", ":"),
        (_compile(r"\b0x[0-9a-f]+\b", fold=True), "<hex>", "xX"),
        # quoted values (a path, a key, an id in quotes): whatever they hold
        (_compile(r"'(?:[^'\\\n]|\\.)*'"), "<value>", "'"),
        (_compile(r'"(?:[^"\\\n]|\\.)*"'), "<value>", '"'),
        (
            # absolute (two parts or more), ./ ../ ~/, or relative with a file's extension (data/day-1.csv)
            _compile(
                r"(?:\b[A-Za-z]:)?(?:[\\/][\w.@+~-]+){2,}[\\/]?|(?:\.{1,2}|~)(?:[\\/][\w.@+~-]+)+"
                r"|\b[\w@+~-]+(?:[\\/][\w.@+~-]+)*[\\/][\w@+~-]+\.[A-Za-z]\w{0,7}\b"
            ),
            "<path>",
            "/\\",
        ),
        (_compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"), "<addr>", "."),
        (_compile(r"\b[\w-]+(?:\.[\w-]+)*:\d{2,5}\b"), "<addr>", ":"),
        # ids: long hex strings, ULIDs, and words that mix letters and digits (but dtypes: _id_or_dtype)
        (_compile(r"\b[0-9a-f]{12,}\b", fold=True), "<id>", ""),
        (_compile(r"\b[0-9A-HJKMNP-TV-Z]{26}\b"), "<id>", _D),
        (_ID, _id_or_dtype, _D),
        # a number keeps its unit (12ms, 2GiB): the unit is part of what went wrong
        (_compile(r"[-+]?\b\d+(?:[.,]\d+)*(?:e[-+]?\d+)?(?P<unit>[A-Za-z%]*)\b"), r"<n>\g<unit>", _D),
        (_compile(r"\b\d[\w-]*[A-Za-z][\w-]*\b"), "<id>", _D),
    )
)
_SPACE = _compile(r"\s+")
#: the raw text read: masks only shorten it, and the result is cut at MAX_MESSAGE
_READ = 1000


def _encodable(text: str) -> str:
    """The text RE2 can take (UTF-8): a lone surrogate becomes U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text


@functools.lru_cache(maxsize=4096)
def normalize_message(text: str | None) -> str:
    """The message with what varies between occurrences masked, on one line, cut at
    :data:`MAX_MESSAGE` characters: ``No such file or directory: '/data/shard-17.csv'`` →
    ``No such file or directory: <value>``. Remembered: many failures repeat one message."""
    if not text or not text.strip():
        return ""
    out = _encodable(text.strip().splitlines()[0][:_READ])
    present = set(out)  # a mask only takes characters away (what it writes, <n>, needs none of these)
    for pattern, mask, needs in _MASKS:
        if not needs or not needs.isdisjoint(present):
            out = pattern.sub(mask, out)
    return _SPACE.sub(" ", out).strip()[:MAX_MESSAGE]


def _frames(failure: dict[str, Any]) -> list[dict[str, Any]]:
    frames = failure.get("frames")
    if isinstance(frames, list) and frames:
        return [f for f in frames if isinstance(f, dict)]
    text = failure.get("traceback")
    chain = parse_chain(text) if isinstance(text, str) else []
    if not chain:
        return []
    return [{"file": f.file, "line": f.line, "function": f.function} for f in chain[-1].frames]


def user_frame(failure: dict[str, Any]) -> str | None:
    """``file:function`` of the innermost frame in the user's own code, the file by its name
    only (the same script runs from many checkouts and temporary directories)."""
    for frame in reversed(_frames(failure)):
        file = str(frame.get("file") or "")
        if _is_users(file):
            name = re.split(r"[\\/]", file)[-1]
            return f"{name}:{frame.get('function') or '?'}"
    return None


_OWN = re.compile(r"[/\\]flightlog[/\\](?:[a-z_]+[/\\])*[a-z_]+\.py$")


@functools.lru_cache(maxsize=4096)
def _is_users(file: str) -> bool:
    """The user's own file: not a library's or the standard library's (by the path's shape, as
    tracebacks.py reads it: the file was on the workload's machine, not necessarily on this
    one) and not flightlog's own module."""
    return bool(file) and not is_library_file(file) and not _OWN.search(file)


def step_of(info: RunInfo) -> str | None:
    """The pipeline step (or gate) a run was, ``pipeline.step``; or, for a pipeline run whose
    own failure names the step that failed, that step."""
    step = info.tags.get("pipeline_step")
    if step:
        pipeline = info.tags.get("pipeline")
        return f"{pipeline}.{step}" if pipeline else step
    failure = info.failure if isinstance(info.failure, dict) else {}
    if isinstance(failure.get("step"), str):
        pipeline = info.tags.get("pipeline") or info.name
        return f"{pipeline}.{failure['step']}" if pipeline else failure["step"]
    return None


def _exception(info: RunInfo, failure: dict[str, Any]) -> tuple[str, str]:
    """The exception type and its raw (redacted) message; for a run that ended without one,
    how it ended (a signal, lost, an exit code)."""
    exc = failure.get("exception")
    message = failure.get("message")
    if isinstance(exc, str) and exc:
        return exc.rsplit(".", 1)[-1] if exc.startswith("builtins.") else exc, str(message or "")
    chain = parse_chain(failure.get("traceback")) if isinstance(failure.get("traceback"), str) else []
    if chain:
        return chain[-1].type, chain[-1].message
    if isinstance(message, str) and message:  # a pipeline's own summary (step X failed: ...)
        return "", message
    if info.signal:
        try:
            name = signals.Signals(info.signal).name
        except ValueError:
            name = f"signal {info.signal}"
        return "", f"ended by {name}"
    if info.status == "crashed" or info.end_reason == "lost":
        return "", "the process vanished without an end record"
    if info.end_reason and info.end_reason not in ("exit", "exception"):
        return "", info.end_reason.replace("_", " ")
    lines = failure.get("last_lines")
    if isinstance(lines, list) and lines and isinstance(lines[-1], str):
        return "", lines[-1]
    return "", f"exit code {info.exit_code}" if info.exit_code is not None else info.status


@dataclass(frozen=True)
class Signature:
    """The parts of a cause signature, and its short stable id (the group's key in URLs and alerts)."""

    category: str
    exception: str
    message: str
    frame: str | None
    step: str | None

    @property
    def text(self) -> str:
        """One line for a person: ``missing_file · FileNotFoundError: … · at train.py:load · step nightly.prepare``."""
        head = (
            f"{self.exception}: {self.message}" if self.exception and self.message else self.exception or self.message
        )
        parts = [self.category, head or "(no message)"]
        if self.frame:
            parts.append(f"at {self.frame}")
        if self.step:
            parts.append(f"step {self.step}")
        return " · ".join(parts)

    @property
    def id(self) -> str:
        key = "\x1f".join([self.category, self.exception, self.message, self.frame or "", self.step or ""])
        return hashlib.sha256(key.encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "category": self.category,
            "exception": self.exception or None,
            "message": self.message or None,
            "frame": self.frame,
            "step": self.step,
        }


def signature_parts(info: RunInfo) -> tuple[str, str, str | None, str | None, str]:
    """``(exception, normalised message, frame, step, raw message)``: every part of the
    signature but the category, which :mod:`.groups` asks for once per distinct set of these."""
    failure: dict[str, Any] = info.failure if isinstance(info.failure, dict) else {}
    exc, raw = _exception(info, failure)
    return exc, normalize_message(raw), user_frame(failure), step_of(info), raw
