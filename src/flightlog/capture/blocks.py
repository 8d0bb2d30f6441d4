"""Multi-line blocks: which line starts one, and which following lines belong to it.

A block is the event being built for a stream. ``accept(line)`` answers TAKE (the line is part
of it), HOLD (maybe: a blank line after a Python exception could precede "During handling of
the above exception…", so it is kept aside until the next line decides) or END (the line
starts something new). Each kind of stack trace is a small state machine; the plain kind
takes indented continuation lines and turns into a Java trace when it sees ``at …(…)`` frames.

``bulk_ends`` tells the grouper that any line without a special first character ends the
block, so it may skip over runs of ordinary lines without asking the block about each one.
"""

from __future__ import annotations

import re
from typing import Any

from flightlog.capture.parse import CRITICAL, ERROR

__all__ = ["Block", "PlainBlock", "start_block", "TAKE", "HOLD", "END", "PY_TRACEBACK_HEADER"]

TAKE, HOLD, END = 0, 1, 2

_INDENT = (" ", "\t")
_JAVA_FRAME = re.compile(r"\s+at [\w$.<>/\[\]-]+\(.*\)")
_PY_CHAIN = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
_PY_HEADER = "Traceback (most recent call last):"
#: what the grouper looks for inside a progress row (a bar left without its newline)
PY_TRACEBACK_HEADER = _PY_HEADER
_PY_WORKER_HEADER = "Original Traceback (most recent call last):"
_PY_GROUP_HEADER = "+ Exception Group Traceback (most recent call last):"
_PY_EXCEPTION_LINE = re.compile(r"(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")
_JAVA_HEAD = re.compile(r'Exception in thread "[^"]*" (?P<type>[\w$.]+)(?::\s?(?P<message>.*))?')
_NATIVE_START = re.compile(r"#0\s+\S|\*\*\* .* \*\*\*|={5,} Backtrace: =+|Stack trace \(most recent call last\)")
_NATIVE_MORE = re.compile(r"#\d+\s|={5,}|PC: @|@\s+0x|\S*\[0x[0-9a-fA-F]+\]$|[0-9a-f]+-[0-9a-f]+ [r-][w-][x-][ps-] ")
_GO_MORE = re.compile(r"goroutine \d+ \[|\[(?:recovered|signal)|created by |exit status \d+|[\w./*()\[\]{}\-]+\(.*\)$")
_FATAL_PY_MORE = ("Current thread 0x", "Thread 0x", "Extension modules:", "Python runtime state:")


def _continues(line: str) -> bool:
    """An indented line continues the event before it, unless it opens a traceback itself
    (Python prints exception groups indented: ``  + Exception Group Traceback …``)."""
    return line.startswith(_INDENT) and not line.lstrip().startswith(_PY_GROUP_HEADER)


class Block:
    """The event being assembled for one stream: lines, when it began, level, component."""

    __slots__ = ("lines", "time", "last", "level", "component", "fields", "held", "chars")
    kind = "plain"
    bulk_ends = True

    def __init__(self, line: str, time: float, level: int, component: str | None = None) -> None:
        self.lines = [line]
        self.time = time
        self.last = time
        self.level = level
        self.component = component
        self.fields: dict[str, Any] | None = None
        self.held: list[str] = []
        self.chars = len(line)

    def accept(self, line: str) -> int:
        return TAKE if _continues(line) else END

    @property
    def settled(self) -> bool:
        """Whether the block is whole if nothing more comes (a line and its continuations, a
        traceback past its exception line): another source's line may then end it. A trace
        still in its frames is not."""
        return self.bulk_ends

    def take(self, line: str, now: float) -> None:
        if self.held:
            self.lines.extend(self.held)
            self.chars += sum(map(len, self.held)) + len(self.held)
            self.held = []
        self.lines.append(line)
        self.chars += len(line) + 1
        self.last = now

    def hold(self, line: str, now: float) -> None:
        self.held.append(line)
        self.last = now

    def message(self) -> str:
        return "\n".join(self.lines)

    def describe(self) -> dict[str, Any] | None:
        """Fields stored with the event (the block kind and what it is about)."""
        return self.fields


def _java_fields(head: str) -> dict[str, Any]:
    fields: dict[str, Any] = {"block": "java_stacktrace"}
    m = _JAVA_HEAD.match(head) or _PY_EXCEPTION_LINE.match(head)
    if m is not None:
        fields["exception"] = m.group("type")
        if m.group("message"):
            fields["exception_message"] = m.group("message")
    return fields


class PlainBlock(Block):
    """A line and its indented continuation lines; becomes a Java trace on ``at`` frames
    (a logged exception: ``java.lang.X: msg`` then ``\\tat …`` and ``Caused by: …``)."""

    __slots__ = ("java",)

    def __init__(self, line: str, time: float, level: int, component: str | None = None) -> None:
        super().__init__(line, time, level, component)
        self.java = False

    def accept(self, line: str) -> int:
        if _continues(line):
            if not self.java and _JAVA_FRAME.match(line):
                self.java = True
                self.level = max(self.level, ERROR)
            return TAKE
        if self.java and line.startswith("Caused by: "):
            return TAKE
        return END

    def describe(self) -> dict[str, Any] | None:
        return _java_fields(self.lines[0]) if self.java else None


class JavaBlock(Block):
    """``Exception in thread …``, ``\\tat …`` frames, ``Caused by: …``, ``\\t... 5 more``."""

    __slots__ = ()
    kind = "java_stacktrace"

    def accept(self, line: str) -> int:
        if _continues(line) or line.startswith("Caused by: "):
            return TAKE
        return END

    def describe(self) -> dict[str, Any] | None:
        return _java_fields(self.lines[0])


#: an exception line at the margin (``KeyError: 'ts'``, ``FileNotFoundError: [Errno 2] …``): a
#: qualified name ending like an exception class, then ": " or the line's end
_PY_STRICT_EXCEPTION_LINE = re.compile(
    r"(?:[A-Za-z_]\w*\.)*_?[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Timeout|Failure)(?:\([\w.]+\))?(?::\s|$)"
)


class PythonBlock(Block):
    """A Python traceback, with chained exceptions and exception groups."""

    __slots__ = ("phase", "nested")
    kind = "python_traceback"
    bulk_ends = False

    FRAMES, AFTER_EXCEPTION, CHAIN, GROUP = range(4)

    def __init__(self, line: str, time: float, level: int, component: str | None = None) -> None:
        super().__init__(line, time, level, component)
        self.phase = self.GROUP if line.lstrip().startswith("+") else self.FRAMES
        #: frames printed after the exception line, in its message: a worker's traceback that
        #: the wrapper carries (Ray's ``RayTaskError(KeyError): ray::f() (pid=…)`` and
        #: ``ActorDiedError``), whose own exception line comes next at the margin
        self.nested = False

    def accept(self, line: str) -> int:
        phase = self.phase
        indented = line.startswith(_INDENT)
        if phase == self.AFTER_EXCEPTION:
            if indented and line.lstrip().startswith('File "'):
                self.nested = True
                return TAKE
            if self.nested and not indented and line and _PY_STRICT_EXCEPTION_LINE.match(line):
                self.nested = False  # the worker's exception line ends its traceback
                return TAKE
        else:
            self.nested = False
        if phase == self.FRAMES:
            if indented:
                return TAKE
            if not line or line.startswith(("{", _PY_HEADER)):
                return END
            self.phase = self.AFTER_EXCEPTION  # the "SomeError: message" line
            return TAKE
        if phase == self.CHAIN:
            if line.startswith(_PY_HEADER):
                self.phase = self.FRAMES
            elif line.lstrip().startswith(_PY_GROUP_HEADER):
                self.phase = self.GROUP
            elif line and not indented:
                self.phase = self.AFTER_EXCEPTION  # a chained exception without a traceback
            return TAKE
        # AFTER_EXCEPTION or GROUP
        if indented:
            return TAKE
        if not line:
            return HOLD
        if line in _PY_CHAIN:
            self.phase = self.CHAIN
            return TAKE
        if line.startswith(_PY_WORKER_HEADER):
            # a data-loader worker's traceback, re-raised by its parent inside the exception's
            # message ("Caught X in DataLoader worker process 0.\nOriginal Traceback ..."): one event
            self.phase = self.FRAMES
            return TAKE
        return END

    @property
    def settled(self) -> bool:
        return self.phase == self.AFTER_EXCEPTION and not self.held

    def describe(self) -> dict[str, Any] | None:
        fields: dict[str, Any] = {"block": self.kind}
        for line in reversed(self.lines):
            if line and not line.startswith(_INDENT) and line not in _PY_CHAIN and line != _PY_HEADER:
                m = _PY_EXCEPTION_LINE.match(line)
                if m is not None:
                    fields["exception"] = m.group("type")
                    if m.group("message"):
                        fields["exception_message"] = m.group("message")
                break
        return fields


class NativeBlock(Block):
    """C/C++ crashes: gdb ``#0 …`` frames, glibc ``*** Error in …`` with its backtrace and
    memory map, abseil/glog ``*** SIGSEGV received …`` with ``PC: @`` and ``@ 0x…`` frames."""

    __slots__ = ()
    kind = "native_backtrace"
    bulk_ends = False  # frames like "./a.out[0x400b3d]" have no special first character

    def accept(self, line: str) -> int:
        if line.startswith(_INDENT) or _NATIVE_MORE.match(line):
            return TAKE
        return END

    def describe(self) -> dict[str, Any] | None:
        return {"block": self.kind}


class GoBlock(Block):
    """``panic: …`` followed by goroutine dumps."""

    __slots__ = ()
    kind = "go_panic"
    bulk_ends = False

    def accept(self, line: str) -> int:
        if not line:
            return HOLD
        if line.startswith(_INDENT) or _GO_MORE.match(line):
            return TAKE
        return END

    def describe(self) -> dict[str, Any] | None:
        return {"block": self.kind}


class FatalPythonBlock(Block):
    """``Fatal Python error: Segmentation fault`` and the faulthandler dump that follows."""

    __slots__ = ()
    kind = "python_fatal_error"
    bulk_ends = False

    def accept(self, line: str) -> int:
        if not line:
            return HOLD
        if line.startswith(_INDENT) or line.startswith(_FATAL_PY_MORE):
            return TAKE
        return END

    def describe(self) -> dict[str, Any] | None:
        return {"block": self.kind}


def start_block(line: str, time: float) -> Block | None:
    """The block a line starts, for lines that open a stack trace; None for other lines."""
    first = line[:1]
    if first == "T" and line.startswith(_PY_HEADER):
        return PythonBlock(line, time, ERROR)
    if first == " " and line.lstrip().startswith(_PY_GROUP_HEADER):
        return PythonBlock(line, time, ERROR)
    if first == "E" and line.startswith('Exception in thread "'):
        return JavaBlock(line, time, ERROR)
    if first and first in "#*=S" and _NATIVE_START.match(line):
        return NativeBlock(line, time, ERROR)
    if first == "p" and line.startswith("panic: ") or first == "f" and line.startswith("fatal error: "):
        return GoBlock(line, time, CRITICAL)
    if first == "F" and line.startswith("Fatal Python error: "):
        return FatalPythonBlock(line, time, CRITICAL)
    return None
