"""Python tracebacks as data: the chain of exceptions (root cause first) of the last
traceback in a block of text, with their frames.

A chain is the run of tracebacks joined by "The above exception was the direct cause of the
following exception" or "During handling of the above exception, another exception occurred";
a traceback printed earlier and not joined to the last one (a handled error logged with
``logging.exception``) is not part of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import re2

from flightlog.failure import CYTHON_SOURCE, untangle_doubled_type

__all__ = [
    "Frame",
    "ParsedException",
    "parse_chain",
    "parse_exception_lines",
    "expand_wrappers",
    "find_last_traceback",
    "is_library_file",
    "parse_block",
    "CHAINED",
    "CYTHON_SOURCE",
    "normalize_header",
    "block_frames",
    "IPYTHON_HEADER",
    "IPYTHON_LOCATION",
    "unlink_frame_locations",
    "untangle_doubled_type",
    "wrapped_frame_rest",
    "is_exception_line",
    "FRAME_LINE",
]

_HEADER = "Traceback (most recent call last):"


def _linear(pattern: str, *, dot_nl: bool = False) -> Any:
    """``pattern`` compiled by RE2, which matches in time linear in the text: the patterns that
    look for a dotted exception name anywhere in a line (``(?:[A-Za-z_]\\w*\\.)*[A-Z]\\w*…``) cost a
    backtracking engine the square of the line — 0.4 s for one crafted 3,000-character message,
    a minute for a triage of a few hundred (issue 31, item 8). RE2's \\w is ASCII, as exception
    names are."""
    options = re2.Options()
    options.dot_nl = dot_nl
    options.log_errors = False
    return re2.compile(pattern, options)


#: IPython and Jupyter print the exception type first: ``KeyError      Traceback (most recent call last)``
_IPYTHON_HEADER = IPYTHON_HEADER = re.compile(r"^([A-Za-z_][\w.]*)\s{2,}Traceback \(most recent call last\)\s*$", re.M)
#: IPython's frame lines: ``----> 8 sp500 = data[0].loc[...]`` (the line that raised)
_IPYTHON_CODE = re.compile(r"^-+> ?(?P<line>\d+)\s+(?P<code>\S.*)$")
#: IPython's and Jupyter's frame locations, one per frame, each followed by its numbered source
#: lines and a ``---->`` arrow at the line that ran: ``Input In [1], in <cell line: 1>()`` and
#: ``Cell In[5], line 3`` (a cell), ``<ipython-input-13-e13…> in <module>`` (IPython 7's cell),
#: ``File /opt/…/functional.py:3029, in cross_entropy(input, …)`` (IPython 8's file) and
#: ``/usr/…/s3fs/__init__.py in <module>`` (IPython 7's file)
IPYTHON_LOCATION = re.compile(
    r"^(?:(?P<cell>Input In \[\d*\]|Cell In ?\[\d*\])(?:, line (?P<cell_line>\d+))?(?:, in (?P<cell_function>.+))?"
    r"|(?P<input><ipython-input-[\w-]+>) in (?P<input_function>\S.*)"
    r"|File (?P<file>\S.*?):(?P<file_line>\d+)(?:, in (?P<file_function>.+))?"
    r"|(?P<path>(?:[A-Za-z]:)?[\\/]\S*\.pyx?) in (?P<path_function>\S.*))\s*$"
)
#: a notebook's or a chat's rendering of a frame's file as a markdown link at the start of a
#: line, in the interpreter's frame (``File "[C:\\…\\build.py", line 253](file:///C:/…#line=252), in
#: <listcomp>``) or IPython's (``[<ipython-input-19-28e7>](https://localhost:8080/#) in <cell>``)
_LINKED_LOCATION = re.compile(r'(?m)^(?P<lead>[ \t]*(?:File ")?)\[(?P<text>[^\]\n]+)\]\((?:file|https?)://[^)\s]*\)')
CHAINED = _CHAINED = re.compile(
    r"The above exception was the direct cause of the following exception:|"
    r"During handling of the above exception, another exception occurred:"
)
_FRAME = FRAME_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>.+))?$')
#: an exception line: ``Type: message``, a type alone, or a wrapper naming the class it wraps
#: (Ray's ``ray.exceptions.RayTaskError(AssertionError): ray::IMPALA.train() …``)
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:\((?:[A-Za-z_]\w*\.)*[A-Z]\w*\))?)(?::\s?(?P<message>.*))?$")
_MARKERS = re.compile(r"^\s*[~^]+\s*$")
#: Keras's wrapper of an error raised inside a layer's ``call``: its cause is the next paragraph
_KERAS_CALL = re.compile(r"^Exception encountered when calling [\w.]+(?:\(\))?\.?(?: \w+\.call\(\)\.?)?\s*$")
_LIBRARY = re.compile(
    r"[/\\](?:site-packages|dist-packages|lib[/\\]python\d[\d.]*|lib64[/\\]python\d)[/\\]|^<frozen |^<string>$"
)


#: the functions libraries generate from strings: dunder methods (dataclasses, named tuples,
#: attrs' older releases) and six's ``reraise``
_GENERATED_FUNCTION = re.compile(r"^(?:__\w+__|reraise)$")


@dataclass
class Frame:
    file: str
    line: int
    function: str
    code: str = ""

    @property
    def in_library(self) -> bool:
        """Whether the frame is a library's or the standard library's. A ``<string>`` frame is
        code compiled from a string: the workload's own (``python -c``, ``exec``), except the
        methods that libraries generate as strings (a dataclass's ``__init__`` and ``__eq__``, a
        named tuple's ``__new__``, ``six.reraise``)."""
        if self.file == "<string>":
            return _GENERATED_FUNCTION.match(self.function) is not None
        return is_library_file(self.file)

    def where(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


@dataclass
class ParsedException:
    type: str
    message: str
    frames: list[Frame] = field(default_factory=list)
    #: the exception line was cut off (a log window, a reporter's paste): the message is unknown,
    #: not empty; the type is IPython's header's or ``TruncatedTraceback``
    cut_off: bool = False

    @property
    def short_type(self) -> str:
        return self.type.rsplit(".", 1)[-1]

    def headline(self) -> str:
        first = self.message.splitlines()[0] if self.message else ""
        return f"{self.type}: {first}" if first else self.type

    def statement(self) -> str:
        """The headline, with the message's first line of detail when the headline only
        introduces it (torch's ``Error(s) in loading state_dict for Linear:`` before ``size
        mismatch for weight: …``): a finding that quotes an introduction says nothing of the
        cause. The headline itself stays one line; it is the failure's signature."""
        head = self.headline()
        if not head.rstrip().endswith(":"):
            return head
        for line in self.message.splitlines()[1:]:
            if line.strip():
                return f"{head.rstrip()} {line.strip()}"
        return head

    def innermost_own_frame(self) -> Frame | None:
        """The innermost frame in the workload's own code (not the standard library or a package)."""
        for frame in reversed(self.frames):
            if not frame.in_library:
                return frame
        return None


def is_library_file(path: str) -> bool:
    return _LIBRARY.search(path) is not None or CYTHON_SOURCE.match(path) is not None


def unlink_frame_locations(text: str) -> str:
    """``text`` with the markdown links that a notebook or an issue thread drew around frames'
    files (at the start of a line) replaced by their text, so the frame reads as the
    interpreter or IPython printed it."""
    if "](" not in text:
        return text
    return _LINKED_LOCATION.sub(lambda m: m["lead"] + m["text"], text)


def find_last_traceback(texts: list[str]) -> str | None:
    """The last text that holds a Python traceback (a log event is one whole traceback)."""
    for text in reversed(texts):
        if _HEADER in text or _IPYTHON_HEADER.search(text):
            return text
    return None


def normalize_header(text: str) -> str:
    """IPython's header (``KeyError   Traceback (most recent call last)``) as the interpreter's."""
    return _IPYTHON_HEADER.sub(_HEADER, text)


def parse_chain(text: str | None) -> list[ParsedException]:
    """The exceptions of the last traceback chain in ``text``, root cause first, the one that
    ended the program last. Empty when ``text`` holds no Python traceback."""
    if not text:
        return []
    text = normalize_header(unlink_frame_locations(text))
    if _HEADER not in text:
        return []
    starts = [m.start() for m in re.finditer(re.escape(_HEADER), text)]
    blocks = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    chain: list[ParsedException] = []
    preamble = text[: starts[0]]
    markers = list(_CHAINED.finditer(preamble))
    marker = markers[-1] if markers else None
    if marker is not None and not preamble[marker.end() :].strip():
        # the reporter (or the log's window) cut the first traceback's header off: the exception
        # printed just before "The above exception was the direct cause..." is still the cause
        chain = parse_exception_lines(preamble[: marker.start()])[-1:]
    for index, block in enumerate(blocks):
        parsed, trailer = parse_block(block)
        if parsed is None:
            continue
        chain.append(parsed)
        if index < len(blocks) - 1 and not _CHAINED.search(trailer):
            chain = []  # the next traceback is an independent one: only the last chain counts
    return expand_wrappers(chain)


def parse_block(block: str) -> tuple[ParsedException | None, str]:
    """One traceback block → (exception, the text after its exception line)."""
    lines = block.splitlines()
    frames: list[Frame] = []
    i = 1
    while i < len(lines):
        line = lines[i]
        m = _FRAME.match(line)
        if m:
            function = (m["function"] or "").strip()
            if wrapped_frame_rest(lines, i):
                # the terminal wrapped the frame's line: its rest (``ate_key`` of ``_valid`` +
                # ``ate_key``) is not an exception line
                i += 1
                function += lines[i].strip()
            code = ""
            if i + 1 < len(lines) and lines[i + 1].startswith("    ") and not _FRAME.match(lines[i + 1]):
                code = lines[i + 1].strip()
            frames.append(Frame(m["file"], int(m["line"]), function, code))
            i += 1
            continue
        located = _ipython_frame(lines, i)
        if located is not None:
            frames.append(located)
            i += 1
            continue
        if line and not line[0].isspace() and not _MARKERS.match(line):
            em = _EXC.match(line.strip())
            if em and not line.startswith(("Traceback", "During handling", "The above exception")):
                message = [em["message"] or ""]
                j = i + 1
                while j < len(lines) and lines[j].strip() and not _CHAINED.search(lines[j]):
                    message.append(lines[j])
                    j += 1
                if _KERAS_CALL.match(message[0]) and j + 1 < len(lines) and lines[j + 1].strip():
                    # Keras's wrapper says what went wrong in the paragraph after its own line
                    # (``Input 0 of layer "dense" is incompatible with the layer: ...``)
                    j += 1
                    while j < len(lines) and lines[j].strip() and not _CHAINED.search(lines[j]):
                        message.append(lines[j])
                        j += 1
                type_name, text = untangle_doubled_type(em["type"], "\n".join(message).strip())
                return ParsedException(type_name, text, frames), "\n".join(lines[j:])
        i += 1
    return None, ""


def wrapped_frame_rest(lines: list[str], i: int) -> bool:
    """Whether ``lines[i]`` is an interpreter's frame line and the line after it is that line's rest, wrapped by a
    terminal or a reporter's paste: a word at the line's start with no ``: `` (an exception
    line has one, or stands alone at the end), followed by the frame's indented source line."""
    if i < 0 or i + 2 >= len(lines) or not _FRAME.match(lines[i]):
        return False
    rest, after = lines[i + 1], lines[i + 2]
    return (
        bool(rest)
        and not rest[0].isspace()
        and re.fullmatch(r"[\w.<>]+\)?", rest.strip()) is not None
        and after.startswith("    ")
        and not _FRAME.match(after)
    )


def _ipython_frame(lines: list[str], i: int) -> Frame | None:
    """The frame whose IPython location is ``lines[i]``, with the line and the source of the
    ``---->`` arrow under it (before the next location)."""
    m = IPYTHON_LOCATION.match(lines[i].strip())
    if m is None:
        return None
    if m["cell"]:
        file, function, line = "<ipython-input>", m["cell_function"] or "<module>", m["cell_line"]
    elif m["input"]:
        file, function, line = m["input"], m["input_function"], None
    elif m["file"]:
        file, function, line = m["file"], m["file_function"] or "", m["file_line"]
    else:
        file, function, line = m["path"], m["path_function"], None
    code = ""
    for nxt in lines[i + 1 : i + 40]:
        if IPYTHON_LOCATION.match(nxt.strip()) or _FRAME.match(nxt):
            break
        arrow = _IPYTHON_CODE.match(nxt.strip())
        if arrow:
            line, code = line or arrow["line"], arrow["code"].strip()
            break
    function = re.sub(r"\(.*\)$", "", function.strip()) or "<module>"
    return Frame(file, int(line) if line else 0, function, code)


def block_frames(block: str) -> list[Frame]:
    """The frames of a traceback block whose exception line is missing (a reporter or a log
    window cut it): the interpreter's ``File`` frames and IPython's locations with their
    ``---->`` lines (an arrow without a location: a frame of its own)."""
    frames: list[Frame] = []
    lines = block.splitlines()
    located = False  # the arrows that follow belong to an IPython location's frame
    for i, line in enumerate(lines):
        m = _FRAME.match(line)
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) and lines[i + 1].startswith("    ") else ""
            frames.append(Frame(m["file"], int(m["line"]), (m["function"] or "").strip(), code))
            located = False
            continue
        frame = _ipython_frame(lines, i)
        if frame is not None:
            frames.append(frame)
            located = True
            continue
        c = _IPYTHON_CODE.match(line.strip())
        if c and not located:
            frames.append(Frame("<ipython>", int(c["line"]), "<cell>", c["code"].strip()))
        elif c:
            located = False
    return frames


# ── exceptions outside a whole traceback ─────────────────────────────────────
#: the prefixes tools put in front of a traceback's lines (pytest's "E   ", ">", a rank or a
#: worker tag, a log shipper's "pod |"); stripped before reading a line as an exception
_PREFIX = re.compile(
    r"^\s*(?:E\s{2,}|>\s*|\[(?:rank|default)\d+\]:\s*|\((?:\w+ )?pid=\d+(?:, ip=[\d.]+)?\)\s*|[\w.-]+\s+\|\s+)"
)
#: exception classes whose names do not end like one (``ArrowInvalid``, google-api-core's
#: ``ResourceExhausted``, boto's ``NoSuchKey``): named so a line ``ArrowInvalid: ...`` is read as one
UNSUFFIXED_EXCEPTIONS = (
    "ArrowInvalid|ArrowNotImplementedError|ArrowKeyError|NoBrokersAvailable|ResourceExhausted|DeadlineExceeded|NotFound"
    "|Forbidden|Unauthorized|Unauthenticated|ServiceUnavailable|TooManyRequests|InvalidArgument|FailedPrecondition"
    "|PermissionDenied|AlreadyExists|InternalServerError|BadRequest|GatewayTimeout|Conflict|OutOfResources"
    "|AirflowTaskTimeout|SoftTimeLimitExceeded|TimeLimitExceeded|FunctionTimedOut|TimeoutExpired|NoSuchKey"
    "|NoSuchBucket|AccessDenied|ExpiredToken|InvalidAccessKeyId|SignatureDoesNotMatch|RequestLimitExceeded|SlowDown"
    "|StopIteration|GeneratorExit|InvalidGrant|Fail|NoSuchFile|EngineDeadError|MisconfigurationException"
)
_TYPE = (
    r"(?:(?:[A-Za-z_]\w*\.)*(?:_?[A-Z]\w*)?(?:Error|Exception|Exit|Interrupt|Timeout|Forbidden|Unavailable|NotFound|Denied|Failure|Unauthorized)"
    r"|(?:[a-z_]\w*\.)*[a-z_]*(?:exc|error|exception)\w*\._?[A-Z]\w*"
    r"|(?:[A-Za-z_]\w*\.)*(?:" + UNSUFFIXED_EXCEPTIONS + r"))"
)  # no lookahead (RE2 has none): in both patterns below a type is followed by "(", ":" or the end
#: ``Type: message`` (a qualified name ending like an exception class) at the start of a line
_EXC_LINE = _linear(r"^(?P<type>" + _TYPE + r"(?:\([\w.]*\))?)(?::\s*(?P<message>.*))?$")
#: the same after a logger's or a launcher's prefix (``12:00 ERROR worker.py:431 -- ray.exceptions...: ``)
#: (a reporter's markdown puts it in backticks: ``error: `RuntimeError: numel: integer overflow` ``)
_EXC_IN_LINE = _linear(r"(?:^|[\s>\]|`])(?P<type>" + _TYPE + r"(?:\([\w.]*\))?):\s+(?P<message>\S.*)$")
_TYPE_GROUP = _EXC_IN_LINE.groupindex["type"]  # RE2's match takes a group's number, not its name


def _exception_in_line(raw: str) -> Any:
    """``_EXC_IN_LINE``'s match in ``raw``, unless it is code that names the class
    (``except ValueError: ...``, ``raise KeyError: ...`` in a shown source line): RE2 has no
    lookbehind, so the word before the type is looked at here."""
    m = _EXC_IN_LINE.search(raw)
    if m is not None and raw[: m.start(_TYPE_GROUP)].endswith(("except ", "raise ")):
        return None
    return m


#: a line that starts with the wrapped driver exception, as SQLAlchemy and MLflow log it:
#: ``(psycopg2.OperationalError) could not connect to server: Connection refused``
_LEADING_WRAPPED = _linear(r"^\((?P<type>(?:[A-Za-z_]\w*\.)+[A-Z]\w*(?:Error|Exception))\)\s*(?P<message>\S.*)$")
#: a line that is only an exception's name, as Python prints ``KeyboardInterrupt``
_BARE = re.compile(r"^(?P<type>KeyboardInterrupt|SystemExit|MemoryError|StopIteration)\s*$")


def is_exception_line(line: str) -> bool:
    """Whether ``line`` is an exception line as the interpreter prints it under a traceback's
    frames (``Type: message``, a type alone): a qualified name that ends like an exception
    class at the margin, not any word followed by a colon."""
    raw = line.strip()
    return bool(raw) and not line[0].isspace() and bool(_EXC_LINE.match(raw) or _BARE.match(raw))


def parse_exception_lines(text: str, *, expand: bool = True) -> list[ParsedException]:
    """The exceptions a block of text names line by line when it holds no whole traceback (a
    traceback trimmed by its reporter, a launcher or a worker pool that prints ``Type: message``),
    in order, the last one taken as the one that ended the program; the frames printed before
    each are kept. Wrappers are expanded (see :func:`expand_wrappers`)."""
    found: list[ParsedException] = []
    frames: list[Frame] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith(("│", "╭", "╰", "┃")):  # a box's inside: code, not an exception
            i += 1
            continue
        raw = _PREFIX.sub("", lines[i]).strip().strip("`*")
        m = _FRAME.match(lines[i]) or _FRAME.match(_PREFIX.sub("", lines[i]))
        if m:
            frames.append(Frame(m["file"], int(m["line"]), (m["function"] or "").strip()))
            i += 1
            continue
        located = _ipython_frame(lines, i)  # IPython's frames, the header cut off above them
        if located is not None:
            frames.append(located)
            i += 1
            continue
        em = _EXC_LINE.match(raw) or _BARE.match(raw) or _LEADING_WRAPPED.match(raw) or _exception_in_line(raw)
        if em is None and len(raw) < 4000:
            # an exception's repr inside an ordinary line: ``Trial 3 failed because of ValueError('nan')``
            for rm in _wrapped_reprs(raw):
                found.append(ParsedException(rm["inner"], rm["rest"], frames))
                frames = []
        if em and len(raw) < 4000:
            message = [(em.groupdict().get("message") or "").strip()]
            j = i + 1
            # a message continues on the lines that follow until a frame, a blank line or another exception
            while j < len(lines) and j - i <= 12:
                nxt = _PREFIX.sub("", lines[j]).strip()
                if (
                    not nxt
                    or _FRAME.match(lines[j])
                    or _EXC_LINE.match(nxt)
                    or _CHAINED.search(nxt)
                    or nxt.startswith("Traceback")
                ):
                    break
                message.append(nxt)
                j += 1
            found.append(ParsedException(*untangle_doubled_type(em["type"], "\n".join(message).strip()), frames))
            frames = []
            i = j
            continue
        i += 1
    return expand_wrappers(found) if expand else found


#: a wrapper naming the exception it wraps: ``RayTaskError(ValueError)``
_WRAPPED_TYPE = re.compile(r"^(?P<outer>[\w.]+)\((?P<inner>[\w.]+)\)$")
#: SQLAlchemy's ``(psycopg2.OperationalError) could not connect`` at the start of the message
_WRAPPED_PREFIX = _linear(r"^\((?P<inner>(?:[A-Za-z_]\w*\.)*[A-Z]\w*)\)\s*(?P<rest>.*)", dot_nl=True)
#: a wrapped exception's repr inside the message: ``... the following error: ValueError('nan loss')``,
#: ``raised unexpected: ConnectionError('Error 111 connecting to ...')``, ``Caused by ResponseError('too many 503')``;
#: Python 2 printed the args' tuple: ``TypeError("ufunc 'add' did not contain a loop",)``
_WRAPPED_REPR = tuple(
    _linear(
        r"\b(?P<inner>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Timeout))\("
        + q
        + r"(?P<rest>[^\n]+?)"
        + q
        + r",?\)"
    )
    for q in ("'", '"')
)


def _wrapped_reprs(text: str) -> Iterator[Any]:
    """The wrapped reprs in ``text`` in order, in either quote, none overlapping another."""
    found = sorted((m for pattern in _WRAPPED_REPR for m in pattern.finditer(text)), key=lambda m: m.start())
    end = -1
    for m in found:
        if m.start() >= end:
            end = m.end()
            yield m


#: Java's and some libraries' "Caused by: Type: message"
_CAUSED_BY = _linear(
    r"(?:^|\n)\W*Caused by:?\s+(?P<inner>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception)):\s*(?P<rest>[^\n]*)"
)


def expand_wrappers(chain: list[ParsedException]) -> list[ParsedException]:
    """Libraries wrap the real cause in their own exception and name it in the wrapper's type or
    message. Each such inner exception is put in the chain before its wrapper, so the rules read
    it as a cause (``ray.exceptions.RayTaskError(AssertionError)``, ``sqlalchemy.exc.OperationalError:
    (psycopg2.OperationalError) could not connect``, ``Trial 3 failed because of the following
    error: ValueError('nan loss encountered')``)."""
    out: list[ParsedException] = []
    for exc in chain:
        inner: list[ParsedException] = []
        tm = _WRAPPED_TYPE.match(exc.type)
        if tm:
            exc = ParsedException(tm["outer"], exc.message, exc.frames)
            inner.append(ParsedException(tm["inner"], exc.message))
        pm = _WRAPPED_PREFIX.match(exc.message)
        if pm:
            inner.append(ParsedException(pm["inner"], pm["rest"]))
        for rm in _wrapped_reprs(exc.message):
            if rm["inner"] != exc.short_type:
                inner.append(ParsedException(rm["inner"], rm["rest"]))
        for cm in _CAUSED_BY.finditer(exc.message):
            inner.append(ParsedException(cm["inner"], cm["rest"]))
        out += inner[:4]
        out.append(exc)
    return out
