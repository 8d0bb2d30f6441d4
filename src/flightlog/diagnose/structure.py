"""The whole failure read as a structure (contract C4): every exception of the chain with the
library it comes from and the codes its message carries, innermost cause first; the process's
exit and signal with the memory share at the end; the line printed last.

Why a structure and not the last message: the words of the exception that ended a program are
often a wrapper's (``sqlalchemy.exc.OperationalError``, ``RuntimeError: Caught ValueError in
DataLoader worker process 0``, ``ChildFailedError``), while the cause is the innermost link, a
code inside a message (``[Errno 28]``, ``429``, SQLSTATE ``53300``) or the way the process
ended. The rules (:mod:`.candidates`) read each link for what it is and where it sits; the
ranker (:mod:`.ranker`) weighs them. The fast classifier and the full diagnosis both start here.

Tracebacks are found anywhere in the texts: plain, ``[rank0]: ``-prefixed, drawn by ``rich``,
escaped inside JSON log lines (:mod:`.textforms`), split over several log events, re-raised by
a parent from a worker (data-loader workers, process pools, joblib, Ray), or followed by a
launcher's own traceback (torchrun's ``ChildFailedError``) that wraps the rank's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from flightlog.capture.launchers import is_launcher_log
from flightlog.diagnose.codes import Codes, read_codes
from flightlog.diagnose.textforms import native_library, plain_text
from flightlog.diagnose.tracebacks import (
    CHAINED,
    CYTHON_SOURCE,
    FRAME_LINE,
    IPYTHON_HEADER,
    IPYTHON_LOCATION,
    Frame,
    ParsedException,
    block_frames,
    expand_wrappers,
    is_exception_line,
    normalize_header,
    parse_block,
    parse_exception_lines,
    unlink_frame_locations,
    wrapped_frame_rest,
)

__all__ = [
    "Codes",
    "Link",
    "FailureRead",
    "read_failure",
    "library_of",
    "package_of_path",
    "strip_repeated_prefix",
    "restore_cut_header",
    "VIA",
    "TRUNCATED",
]

#: the type of a link whose traceback lost its exception line
TRUNCATED = "TruncatedTraceback"
#: how a link entered the chain, relative to the link after it (the last one: "raised")
VIA = ("raised", "cause", "context", "wrapped", "worker")
_HEADER = "Traceback (most recent call last)"  # the interpreter's (with ":") and IPython's
#: how many of the last lines are read for exceptions when no whole traceback was printed
EXCEPTION_LINES = 20
#: how many lines a read keeps for the line rules (the last ones)
KEEP_LINES = 400
#: the most characters of one text that are read (a traceback is at most a few thousand)
MAX_TEXT = 100_000


@dataclass
class Link(ParsedException):
    """One exception of the chain."""

    library: str | None = None
    codes: Codes = field(default_factory=Codes)
    via: str = "raised"


@dataclass
class FailureRead:
    """A failed (or ended) process, read as a whole. ``links`` innermost cause first; the last
    link is the exception that ended the program."""

    links: list[Link]
    exit_code: int | None = None
    signal: int | None = None
    end_reason: str | None = None
    timed_out: bool = False
    oom_killed: bool = False
    memory_share_at_end: float | None = None
    last_line: str | None = None
    rank: int | None = None
    #: the plain lines outside the chain (launcher prefixes stripped, JSON unfolded), the last
    #: ``KEEP_LINES`` of them, in order: what the line rules read
    lines: list[str] = field(default_factory=list)
    #: how many lines were printed after the chain (many: it was probably handled)
    lines_after_chain: int = 0
    #: the exception lines of earlier tracebacks not joined to the chain (errors handled before)
    handled: list[str] = field(default_factory=list)
    #: the chain came from a whole traceback (not from exception lines named in the log)
    from_traceback: bool = False
    #: the type of the launcher's wrapper the log ended in (torchrun's ``ChildFailedError``), in
    #: ``links`` or, when the child printed no exception under it, left out of them
    launcher: str | None = None
    #: the chain ends in a client's HTTP 500 that a server of this run answered, and starts with
    #: the traceback that server logged for the request's handler (``_served_traceback``)
    served: bool = False

    @property
    def innermost(self) -> Link | None:
        return self.links[0] if self.links else None

    @property
    def outermost(self) -> Link | None:
        return self.links[-1] if self.links else None


def read_failure(
    texts: Sequence[str],
    *,
    exit_code: int | None = None,
    signal: int | None = None,
    end_reason: str | None = None,
    timed_out: bool = False,
    oom_killed: bool = False,
    memory_share_at_end: float | None = None,
    rank: int | None = None,
) -> FailureRead:
    """Read a process's log texts (its events in order; a multi-line traceback may be one text
    or many) and its exit facts as one :class:`FailureRead`."""
    plain = [
        p for p in (unlink_frame_locations(plain_text(t[:MAX_TEXT])) for t in _join_boxes(texts) if t) if p.strip()
    ]
    docs = _documents(restore_cut_header(strip_repeated_prefix(plain)))
    index = next((i for i in range(len(docs) - 1, -1, -1) if _HEADER in docs[i]), None)
    links: list[Link] = []
    after: list[str] = []
    launcher: str | None = None  # the launcher's wrapper of its child's failure the chain ends in
    child_doc = None  # the document of the child's traceback under it
    served = False  # the chain starts with the handler's traceback of a server of this run
    if index is not None:
        links = read_chain(docs[index])
        after = docs[index + 1 :]
        if links and _is_launcher_wrapper(links[-1]):
            launcher = links[-1].type
            earlier = next((i for i in range(index - 1, -1, -1) if _HEADER in docs[i]), None)
            inner = read_chain(docs[earlier]) if earlier is not None else []
            child_doc = earlier if inner else None
            if not inner:  # the child printed its exception line alone (or its frames were cut)
                child_lines = [ln for ln in _lines_of(docs[:index]) if not is_launcher_log(ln)]
                found = parse_exception_lines("\n".join(child_lines[-EXCEPTION_LINES:]), expand=False)
                inner = _links_from([e for e in found if not _WARNING_TYPE.search(e.type)])[-1:]
            if inner:
                inner[-1].via = "worker"
                links = inner + links
            elif _LAUNCHER_REPORT.search(links[-1].type):
                # no exception of the child's: its last lines are the failure, and the launcher's
                # report of it (torchrun's ChildFailedError, whose text is its summary) is no
                # exception of the workload's
                links = []
        elif links and links[-1].codes.http_status == _INTERNAL_SERVER_ERROR:
            served_doc = _served_traceback(docs, index)
            if served_doc is not None:
                # the 500 the client raised on was answered by a server this run started, whose
                # handler's traceback the run printed before it: the handler's exception is the
                # cause, the client's error only how it came back (as a worker's under its parent)
                inner = read_chain(docs[served_doc])
                if inner:
                    inner[-1].via = "worker"
                    links = inner + links
                    child_doc, served = served_doc, True
        native = [ln for ln in _lines_of(after) if ln.startswith(_NATIVE_PREFIXES)]
        if native:  # a native library's last words after the traceback: what ended the process
            extra = _links_from(parse_exception_lines("\n".join(native), expand=False))
            if extra:
                links[-1].via = "context"
                links += extra
    from_traceback = bool(links)
    tail_lines = _lines_of(docs)[-KEEP_LINES:]
    if not links and not launcher:
        found = parse_exception_lines("\n".join(tail_lines[-EXCEPTION_LINES:]), expand=False)
        links = _links_from([e for e in found if not _WARNING_TYPE.search(e.type)])
    if index is not None:
        before = docs[:index]
        # an earlier traceback (a handled error logged with its traceback) is not the failure:
        # its exception line is kept as a handled error, its frames are dropped
        handled = [_last_exception_line(d) for i, d in enumerate(before) if _HEADER in d and i != child_doc]
        outside = _lines_of([d for d in before if _HEADER not in d] + [_preface(docs[index])] + after)
    else:
        handled, outside = [], tail_lines
    ended = tail_lines
    if launcher:
        # the launcher reports its child's end after it (its log lines, its traceback, its
        # summary): the child's own lines stay the last ones read, after the launcher's report
        ended = [ln for ln in _lines_of(docs[:index]) if not is_launcher_log(ln)]
        own = {*_lines_of(after), *(ln for ln in outside if is_launcher_log(ln))}
        outside = [ln for ln in outside if ln in own] + [ln for ln in outside if ln not in own]
        after = []
    last = next((ln.strip() for ln in reversed(ended) if ln.strip()), None)
    return FailureRead(
        links=links,
        exit_code=exit_code,
        signal=signal,
        end_reason=end_reason,
        timed_out=timed_out,
        oom_killed=oom_killed,
        memory_share_at_end=memory_share_at_end,
        last_line=last[:2000] if last else None,
        rank=rank,
        lines=outside[-KEEP_LINES:],
        handled=[h for h in handled if h][-20:],
        lines_after_chain=sum(1 for ln in _lines_of(after) if ln.strip()) if index is not None else 0,
        from_traceback=from_traceback,
        launcher=launcher,
        served=served,
    )


# ── a prefix before every line of a traceback ───────────────────────────────
#: a traceback's header or frame after other text on its line: a logger's, a launcher's or a
#: container runtime's prefix (``ERROR 11-18 18:07:28 engine.py:366] ``, ``(EngineCore_0
#: pid=268) ERROR … [core.py:702] ``, ``openalex_topic_ai  | ``, ``(raylet) ``)
_PREFIXED_HEADER = re.compile(r"^(?P<prefix>.*\S.*?)Traceback \(most recent call last\):\s*$")
_PREFIXED_FRAME = re.compile(r'^(?P<prefix>.*\S.*?)(?P<indent> *)File "[^"]+", line \d+')
#: how many lines must start with the same prefix before it is taken for one (a frame and its code)
_PREFIXED_LINES = 2


def strip_repeated_prefix(texts: list[str]) -> list[str]:
    """``texts`` with the prefix that a logger, a launcher or a container runtime wrote before
    every line of a traceback taken off those lines, so the traceback reads as the interpreter
    printed it. The prefix is the text before a ``Traceback (most recent call last):`` (else
    before a frame's two-space indent), where at least two lines start with it exactly; IPython's
    header (``KeyError   Traceback …``) and a worker's ``Original Traceback`` are not prefixes."""
    if not any("Traceback (most recent call last)" in t or 'File "' in t for t in texts):
        return texts
    lines = [line for text in texts for line in text.split("\n")]
    candidates = {prefix for line in lines if (prefix := _line_prefix(line))}
    if not candidates:
        return texts
    prefixes = [p for p in candidates if sum(1 for line in lines if line.startswith(p)) >= _PREFIXED_LINES]
    if prefixes:
        prefixes.sort(key=len, reverse=True)
        texts = ["\n".join(_unprefixed(line, prefixes) for line in text.split("\n")) for text in texts]
    return _unprefixed_headers(texts)


def _unprefixed_headers(texts: list[str]) -> list[str]:
    """``texts`` with a prefix written before a traceback's header alone taken off it: a log
    record whose message is the traceback (``logger.error(traceback.format_exc())`` under a
    ``"[%(asctime)s] %(message)s"`` format) prefixes its first line only —
    ``[14:42:02] Traceback (most recent call last):`` — and the frames follow at the margin's
    indent. The header must be followed by a frame (in its text or the next), so a header
    quoted inside a sentence is left alone."""
    out = list(texts)
    for t, text in enumerate(texts):
        if "Traceback (most recent call last)" not in text:
            continue
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if (
                "Traceback (most recent call last)" not in line
                or line.startswith("Traceback")
                or not _line_prefix(line)
            ):
                continue
            following = (
                lines[i + 1] if i + 1 < len(lines) else (texts[t + 1].split("\n", 1)[0] if t + 1 < len(texts) else "")
            )
            if FRAME_LINE.match(following):
                lines[i] = "Traceback (most recent call last):"
        out[t] = "\n".join(lines)
    return out


def _line_prefix(line: str) -> str | None:
    if "Traceback (most recent call last)" in line:
        m = _PREFIXED_HEADER.match(line)
        if m is None or IPYTHON_HEADER.match(line) or m["prefix"].rstrip().endswith(("Original", ">")):
            return None
        return None if m["prefix"][-1].isalnum() else m["prefix"]
    if 'File "' not in line:
        return None
    m = _PREFIXED_FRAME.match(line)
    if m is None or not m["prefix"].strip():
        return None
    # the frame's own two-space indent is the traceback's; what is left of it is the prefix's
    prefix = m["prefix"] + m["indent"][: max(0, len(m["indent"]) - 2)]
    # a prefix ends at a separator (``] ``, ``| ``, ``) ``): one that ends in a word is the
    # text before a frame that lost its line break (``KeyError  File "…"``), not a prefix
    return None if prefix[-1].isalnum() or prefix[-1] == "_" else prefix


def _unprefixed(line: str, prefixes: list[str]) -> str:
    for prefix in prefixes:
        if line.startswith(prefix):
            return line[len(prefix) :]
    return line


# ── a traceback whose header was cut off ────────────────────────────────────
_CARETS = re.compile(r"^\s*[~^]+\s*$")


def restore_cut_header(texts: list[str]) -> list[str]:
    """``texts`` with ``Traceback (most recent call last):`` put back above frames printed
    without it — a log window or a reporter's paste that starts inside the traceback, a logger
    that printed ``format_tb`` — when the frames run up to an exception line, so they are read
    as the traceback they are (the exception with its frames, the frames' library) and not as
    loose lines of which only the last twenty are looked at. Frames printed at the margin (a
    log formatter or a paste that stripped the indent, header or not) get the interpreter's
    indent back (two spaces for a frame, four for its source line). A run of
    frames that ends in anything but an exception line (torch's anomaly-mode trace of the
    forward call, a faulthandler dump, a stack a warning printed), or that follows an exception
    line (Ray's task frames in its wrapper's message), is left as it is."""
    if not any('File "' in t for t in texts):
        return texts
    flat = [(t, i, line) for t, text in enumerate(texts) for i, line in enumerate(text.split("\n"))]
    header_before: set[tuple[int, int]] = set()  # (text, line) a header is put above
    indent: dict[tuple[int, int], str] = {}  # (text, line) of a frame at the margin -> its indent
    in_traceback = False  # a header was printed above: its frames are the interpreter's
    k = 0
    while k < len(flat):
        line = flat[k][2]
        if _HEADER in line:
            in_traceback = True
        if not FRAME_LINE.match(line):
            if line.strip() and not line[0].isspace() and _HEADER not in line:
                in_traceback = False  # an exception line, or other output: the traceback ended
            k += 1
            continue
        end, margin = _frame_run(flat, k)
        if in_traceback:
            indent.update(margin)  # a traceback printed with its indent stripped, header and all
        elif end < len(flat) and is_exception_line(flat[end][2]) and not _after_an_exception_line(flat, k):
            header_before.add(flat[k][:2])
            indent.update(margin)
        in_traceback = False
        k = end
    if not header_before and not indent:
        return texts
    out = []
    for t, text in enumerate(texts):
        lines = []
        for i, line in enumerate(text.split("\n")):
            if (t, i) in header_before:
                lines.append(_HEADER + ":")
            lines.append(indent.get((t, i), "") + line)
        out.append("\n".join(lines))
    return out


def _after_an_exception_line(flat: list[tuple[int, int, str]], k: int) -> bool:
    """Whether the last line printed before ``flat[k]`` is an exception line: the frames are then
    that exception's message (Ray's ``RayTaskError(ValueError): ray::f()`` followed by the
    task's frames and its ``ValueError: …``), read as the wrapper's and the worker's lines."""
    previous = next((flat[j][2] for j in range(k - 1, -1, -1) if flat[j][2].strip()), "")
    return is_exception_line(previous)


def _frame_run(flat: list[tuple[int, int, str]], k: int) -> tuple[int, dict[tuple[int, int], str]]:
    """Where the run of frames starting at ``flat[k]`` ends (the index of its first line that
    is neither a frame, a frame's source, a caret line nor blank) and the indent each of its
    lines printed at the margin needs: a frame's source line is the one line after it, indented
    or (pasted at the margin) not an exception line."""
    margin: dict[tuple[int, int], str] = {}
    previous = ""
    j = k
    while j < len(flat):
        line = flat[j][2]
        if FRAME_LINE.match(line):
            previous = "frame"
            if not line[0].isspace():
                margin[flat[j][:2]] = "  "
        elif not line.strip() or _CARETS.match(line) or line[0].isspace():
            previous = "source" if line.strip() else "blank"
        elif previous == "frame" and not is_exception_line(line):
            previous = "source"
            margin[flat[j][:2]] = "    "
        else:
            break
        j += 1
    return j, margin


# ── documents: log events that belong to one traceback ───────────────────────
_BOX_TOP = re.compile(r"^(?:\[\w+\]:\s?)?\s*[╭+][─-]+ Traceback \(most recent call last\)")
_BOX_BOTTOM = re.compile(r"^(?:\[\w+\]:\s?)?\s*[╰+][─-]+[╯+]\s*$", re.M)


def _join_boxes(texts: Sequence[str]) -> list[str]:
    """A ``rich`` box printed one log event per line, joined into one text from its top line to
    the exception line under its bottom (the box is only read whole)."""
    if not any("Traceback (most recent call last) ─" in t or "Traceback (most recent call last) -" in t for t in texts):
        return list(texts)
    out: list[str] = []
    box: list[str] | None = None
    for text in texts:
        if box is None:
            if _BOX_TOP.match(text) and not _BOX_BOTTOM.search(text):
                box = [text]
            else:
                out.append(text)
            continue
        box.append(text)
        if _BOX_BOTTOM.search(text):
            out.append("\n".join(box))
            box = None
    if box:
        out.append("\n".join(box))
    return out


_FRAME_START = re.compile(r'^\s+File "|^\s{4}\S')
#: the exception line of Keras's wrapper of an error raised in a layer's ``call`` (its cause is
#: the paragraph after it: ``tracebacks.parse_block`` reads it as the message)
_KERAS_WRAPPER_LINE = re.compile(
    r"(?:^|\n)[\w.]+: Exception encountered when calling [\w.]+(?:\(\))?\.?(?: \w+\.call\(\)\.?)?\s*$"
)


#: how much of a document's end the joins look at (a traceback's header within it)
_TAIL = 20_000


#: a notebook runner's exception whose message is the failing cell's source and its own
#: (IPython) traceback, printed with blank lines between: nbclient's ``CellExecutionError: An
#: error occurred while executing the following cell:``, papermill's ``PapermillExecutionError``
_CELL_ERROR = re.compile(r"(?m)^[\w.]*(?:CellExecutionError|PapermillExecutionError)\b")


def _documents(texts: list[str]) -> list[str]:
    """Consecutive texts that continue one another (a traceback split over several events: one
    event per line of a launcher or a JSON logger) joined into one document. Each text is
    looked at once: a document is kept as its parts, its last characters and whether it holds
    a header, so a traceback of thousands of one-line events costs as much as one of a few."""
    docs: list[list[str]] = []
    tail = ""  # the current document's last characters
    header = False  # the current document holds a traceback's header
    awaiting = False  # the document's last traceback has no exception line yet
    cell = _NO_CELL  # where the document stands in a notebook cell's error (its message)
    for text in texts:
        first = text.split("\n", 1)[0]
        if cell == _CELL_FRAMES and is_exception_line(first):
            cell = _CELL_DONE  # the cell's exception line: the end of the runner's message
        elif cell == _CELL_SOURCE and IPYTHON_HEADER.search(text):
            cell = _CELL_FRAMES
        back = _message_rest(docs) if not header and CHAINED.search(first) else 0
        if back:
            # the lines an exception's message printed at the margin after its own (SQLAlchemy's
            # "[SQL: …]", "[parameters: …]", "(Background on this error at: …)") were documents
            # of their own, and the chain the marker continues was cut there: they belong to
            # the traceback before them
            rest = ["\n" + "".join(d) for d in docs[-back:]]
            del docs[-back:]
            docs[-1].extend(rest)
            tail, header = "".join(docs[-1])[-_TAIL:], True
        joins = bool(docs) and (
            cell != _NO_CELL
            or awaiting
            or bool(CHAINED.search(first))
            or bool(CHAINED.search(tail[-120:]))
            or (bool(_FRAME_START.match(first)) and _HEADER in tail)
            or first.startswith(("Original Traceback", '"""'))  # a worker's traceback inside its parent's
            or (first.startswith("Traceback") and tail.rstrip().endswith(('"""', "RemoteTraceback:")))
        )
        if not joins and docs and _KERAS_WRAPPER_LINE.search(tail[-300:]) and header:
            # Keras's wrapper line, then (after a blank line, one event per line) what went wrong
            separator: str | None = "\n\n"
        else:
            separator = "\n" if joins else None
        if cell == _CELL_DONE:
            cell = _NO_CELL
        if separator is None:
            docs.append([text])
            tail, header = text[-_TAIL:], _HEADER in text
            awaiting = _awaiting_exception(text)
            if header and _CELL_ERROR.search(text):
                cell = _CELL_FRAMES if IPYTHON_HEADER.search(text) else _CELL_SOURCE
            continue
        last_line = tail[tail.rfind("\n") + 1 :]
        docs[-1].append(separator + text)
        tail, header = (tail + separator + text)[-_TAIL:], header or _HEADER in text
        if _HEADER in text:  # the document's last traceback starts in this text
            awaiting = _awaiting_exception(text)
            if cell == _NO_CELL and _CELL_ERROR.search(text):
                cell = _CELL_FRAMES if IPYTHON_HEADER.search(text) else _CELL_SOURCE
        elif awaiting:  # only the lines this text adds can end the wait
            awaiting = _lines_continue((last_line + separator + text).splitlines())
        else:
            awaiting = _awaiting_exception("".join(docs[-1]))
    return ["".join(parts) for parts in docs]


#: the most documents, and lines in each, that an exception's message may go on with
_MESSAGE_REST_DOCS, _MESSAGE_REST_LINES = 4, 3


def _message_rest(docs: list[list[str]]) -> int:
    """How many of the last documents are lines that go on with the exception line ending the
    traceback before them (a few lines each, no traceback of their own): 0 when they are not."""
    for back in range(1, min(_MESSAGE_REST_DOCS, len(docs) - 1) + 1):
        text = "".join(docs[-back])
        if text.count("\n") >= _MESSAGE_REST_LINES or _HEADER in text:
            return 0
        prior = "".join(docs[-back - 1])[-_TAIL:]
        if _HEADER in prior:
            return back if not _awaiting_exception(prior) else 0
    return 0


#: a notebook cell's error, text by text: none, the cell's source (up to the IPython header of
#: its traceback), the traceback's frames (up to its exception line), the exception line
_NO_CELL, _CELL_SOURCE, _CELL_FRAMES, _CELL_DONE = range(4)


def _awaiting_exception(doc: str) -> bool:
    """Whether the document's last traceback has not printed its exception line yet: every
    line after its header is indented (a frame, its source) or is a frame of IPython's (a
    location, a ``---->`` arrow), whose lines start at the margin."""
    at = doc.rfind(_HEADER)
    if at < 0:
        return False
    return _lines_continue(doc[at + len(_HEADER) :].splitlines())


def _lines_continue(lines: list[str]) -> bool:
    """Whether every line after the first (the rest of the header's line, or a line already
    read) continues a traceback: blank, indented, a header or a chain's marker, a frame of
    IPython's, or the rest of a frame line a terminal wrapped."""
    for i, line in enumerate(lines[1:], start=1):
        if (
            line
            and not line[0].isspace()
            and not line.startswith(("Traceback", "During handling", "The above"))
            and not _IPYTHON_FRAME_LINE.match(line)
            and not wrapped_frame_rest(lines, i - 1)
        ):
            return False
    return True


#: a line of an IPython frame that starts at the margin: its location or its ``---->`` arrow
_IPYTHON_FRAME_LINE = re.compile(r"^-+>\s*\d+\s|" + IPYTHON_LOCATION.pattern[1:])


def _preface(doc: str) -> str:
    """The lines a document printed before its first traceback: the message a logger wrote with
    it (``log.exception("…")``, a JSON log line's message above its escaped ``exc_info``) — lines
    the rules read, not part of the chain."""
    at = doc.find(_HEADER)
    return doc[: doc.rfind("\n", 0, at) + 1] if at > 0 else ""


def _last_exception_line(doc: str) -> str:
    """The exception line of a document's last traceback."""
    tail = doc[doc.rfind(_HEADER) :].splitlines()[1:]
    return next((ln for ln in tail if ln and not ln[0].isspace()), "")


#: a line of the stack dump Python's faulthandler prints after a fatal signal (a thread's header,
#: a frame — ``File "x.py", line 8 in f``, no comma, unlike a traceback's — or its module list):
#: a stack, not the program's last words, so the fatal error line before it stays the last line
_FAULTHANDLER_DUMP = re.compile(
    r'^(?:(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):|\s+File ".*", line \d+ in \S+'
    r"|\s+<no Python frame>|Extension modules: .*)\s*$"
)


def _lines_of(docs: list[str]) -> list[str]:
    return [line for doc in docs for line in doc.splitlines() if not _FAULTHANDLER_DUMP.match(line)]


# ── one chain ────────────────────────────────────────────────────────────────
#: the text before a block that says the traceback is a worker's, printed by its parent
_WORKER_PREAMBLE = re.compile(r'(?:RemoteTraceback:\s*"""|Sub-process traceback:\s*-*|"""\s*)\s*$')
#: a traceback embedded in an exception's message: the data loader's "Original Traceback",
#: a pool's quoted remote traceback, Spark's Python worker
_EMBEDDED = re.compile(r"(?:Original )?Traceback \(most recent call last\):")
_WARNING_TYPE = re.compile(r"Warning\b")
_NATIVE_PREFIXES = ("NativeCheckFailure:", "c10.", "std.", "tensorflow.", "xgboost.", "dmlc.")
#: exceptions a launcher raises about a child that failed: the child's own traceback, printed
#: before, is the cause
_LAUNCHER_WRAPPERS = re.compile(
    r"(?:^|\.)(?:ChildFailedError|CalledProcessError|ProcessExitedException|ProcessRaisedException|BrokenProcessPool"
    r"|WorkerCrashedError|TerminatedWorkerError|JobFailedError|RayActorError)$"
)


#: a launcher's report of its children's ends, whose text is its summary (not an error of its own)
_LAUNCHER_REPORT = re.compile(r"(?:^|\.)ChildFailedError$")
#: the status a server answers when its handler raised
_INTERNAL_SERVER_ERROR = 500
#: a server's words when a request's handler raised, logged with its traceback: uvicorn's and
#: hypercorn's "Exception in ASGI application", Flask's "Exception on /predict [POST]",
#: gunicorn's and aiohttp's "Error handling request", Django's "Internal Server Error: /predict",
#: Tornado's "Uncaught exception POST /predict", http.server's "Exception occurred during
#: processing of request from"
_HANDLER_RAISED = re.compile(
    r"\bException in ASGI application\b|\bException on /\S* \[[A-Z]+\]|\bError handling request\b"
    r"|\bInternal Server Error: /|\bUncaught exception [A-Z]+ /|\bException occurred during processing of request\b"
)
#: how many lines before a traceback may hold the server's words about it
_HANDLER_WORDS_LINES = 3


def _served_traceback(docs: list[str], index: int) -> int | None:
    """The document of the traceback a server of this run logged for a request's handler, the
    last one before the chain at ``index`` — or None when the traceback before it was no
    server's (a handled error of the workload's, a retry's)."""
    earlier = next((i for i in range(index - 1, -1, -1) if _HEADER in docs[i]), None)
    if earlier is None:
        return None
    before = _lines_of(docs[earlier - 1 : earlier])[-_HANDLER_WORDS_LINES:] if earlier else []
    words = "\n".join([*before, _preface(docs[earlier])])
    return earlier if _HANDLER_RAISED.search(words) else None


def _is_launcher_wrapper(link: Link) -> bool:
    return bool(_LAUNCHER_WRAPPERS.search(link.type))


def read_chain(text: str, depth: int = 0) -> list[Link]:
    """The links of the last chain in ``text``, innermost first; tracebacks of workers that a
    parent printed inside its own (as a quoted remote traceback or in the message) come before
    the exception that re-raised them, with ``via="worker"``. A last traceback whose exception
    line was cut off is a link of type ``TruncatedTraceback`` (IPython's header names the
    type: then that type) with the frames it kept."""
    ipython = [m[1] for m in IPYTHON_HEADER.finditer(text)]
    text = normalize_header(text)
    starts = [m.start() for m in re.finditer(r"(?m)^[ \t]*Traceback \(most recent call last\):", text)]
    if not starts and not depth and re.search(r"(?m)^[ \t]*Original Traceback \(most recent call last\):", text):
        # a worker's traceback that its parent printed, without the parent's own (the log, or a
        # reporter, kept only "Caught X in DataLoader worker process 0." and what follows): the
        # worker's chain is the failure, when its exception line is there (else the parent's
        # exception line, printed above it, is read as a line)
        inner = read_chain(re.sub(r"(?m)^([ \t]*)Original Traceback", r"\1Traceback", text))
        return inner if inner and not inner[-1].cut_off else []
    if not starts:
        if depth and re.search(r'^\s+File "', text, re.M):  # a header-less traceback (Ray's message)
            return _links_from(parse_exception_lines(text, expand=False), depth)
        return []
    chain: list[tuple[ParsedException, str]] = []
    preamble = text[: starts[0]]
    markers = list(CHAINED.finditer(preamble))
    if markers and not preamble[markers[-1].end() :].strip():
        # the first traceback's header was cut off: the exception printed before the marker is its cause
        relation = "cause" if "direct cause" in markers[-1][0] else "context"
        chain = [(e, relation) for e in parse_exception_lines(preamble[: markers[-1].start()], expand=False)[-1:]]
    bounds = [*starts[1:], len(text)]
    cell_error: tuple[int, ParsedException] | None = None  # a notebook runner's error and its block
    chain_start = 0  # the block the last chain starts at
    for index, (a, b) in enumerate(zip(starts, bounds, strict=True)):
        block = _dedented(text[a:b])
        parsed, trailer = parse_block(block)
        if parsed is None:
            frames = block_frames(block) if index == len(starts) - 1 else []
            if not frames:
                continue
            parsed = ParsedException(ipython[-1] if ipython else TRUNCATED, "", frames, cut_off=True)
        worker = bool(_WORKER_PREAMBLE.search(text[max(0, a - 200) : a]))
        parsed.message = parsed.message.rstrip('"').rstrip()
        relation = "cause" if "direct cause" in trailer else "context" if "During handling" in trailer else ""
        if worker and chain == [] and relation:
            relation = "worker"
        if index < len(starts) - 1 and not relation and _CELL_ERROR.match(parsed.type):
            # nbclient's or papermill's error: the next traceback, IPython's, is the cell's own,
            # printed in its message; the cell's exception is the cause, the runner's its wrapper
            cell_error, chain, chain_start = (index, parsed), [], index + 1
            continue
        chain.append((parsed, relation))
        if index < len(starts) - 1 and not relation:
            chain, chain_start = [], index + 1  # the next traceback is an independent one: only the last chain counts
    if cell_error is not None and chain and cell_error[0] == chain_start - 1:
        chain = [*chain[:-1], (chain[-1][0], "worker"), (cell_error[1], "")]
    links: list[Link] = []
    for n, (exc, relation) in enumerate(chain):
        links += _expanded(exc, "raised" if n == len(chain) - 1 else relation or "context", depth)
    return _from_the_library_s_own_handling(_without_the_timeout_s_cancellation(links))


def _from_the_library_s_own_handling(links: list[Link]) -> list[Link]:
    """``links`` from the last exception a library raised while handling one of its own: the
    links before it dropped. A library that tries one way and raises its own exception while
    handling the failure ("During handling of the above exception, another exception occurred":
    the implicit context, not ``raise … from``) works that way — zoneinfo opens the key as a
    file of the tz database and raises ``ZoneInfoNotFoundError`` while handling the
    ``FileNotFoundError``; ``importlib.metadata`` raises ``PackageNotFoundError`` while handling
    its search's ``StopIteration``; PyYAML's reader raises ``ReaderError`` while handling the
    codec's ``UnicodeDecodeError``; ``urllib.request`` raises ``URLError`` while handling the
    socket's ``OSError``. The earlier exception is the library's own way of working, never a
    file the run misses or a bug of its code: the library's exception, whose words say what
    failed, is the cause to read.

    It holds where the earlier exception was caught and raised inside the library: every frame
    of its traceback a library's (no frame of the workload's between: a callback of the
    workload's that raised inside the library's ``try`` is the workload's error), its first
    frame — where it was caught — the same library's as the frame the next exception was raised
    from, and the next exception a class of that library's own (its module printed before its
    name). A built-in exception raised while handling (scikit-learn's ``TypeError: argument must
    be a string or number`` over ``'<' not supported between instances of 'str' and 'float'``,
    h5py's second ``OSError`` from the read-only retry) restates the failure or tries again: the
    first one's words are as much the cause, and are kept."""
    start = 0
    for n in range(len(links) - 1):
        handled, raised = links[n], links[n + 1]
        if handled.via != "context" or not handled.frames or not raised.frames:
            continue
        catcher = package_of_path(handled.frames[0].file)
        if (
            catcher is not None
            and "." in raised.type
            and library_of(raised.type, []) == catcher == package_of_path(raised.frames[-1].file)
            and all(f.in_library for f in handled.frames)
        ):
            start = n + 1
    return links[start:] if start else links


def _without_the_timeout_s_cancellation(links: list[Link]) -> list[Link]:
    """``links`` less the ``CancelledError`` that asyncio's ``wait_for``/``timeout`` raise their
    ``TimeoutError`` from: the cancellation is how the deadline stopped the task, not a cause of
    its own — kept, it was the chain's root and hid the timeout (issue 29)."""
    return [
        link
        for n, link in enumerate(links)
        if not (
            link.short_type == "CancelledError"
            and n + 1 < len(links)
            and links[n + 1].short_type == "TimeoutError"
            and links[n + 1].library == "asyncio"
        )
    ]


def _dedented(block: str) -> str:
    """A traceback printed indented as a whole — a subprocess's output nested in its parent's
    (pip's ``╰─> [6 lines of output]``, a tool that indents what it captured) — with its
    header's indent taken off every line, up to the first line indented less (the parent's
    output again, not the traceback's); a traceback at the margin as it is."""
    first, _, rest = block.partition("\n")
    indent = first[: len(first) - len(first.lstrip())]
    if not indent:
        return block
    lines = [first[len(indent) :]]
    for line in rest.split("\n"):
        if line.strip() and not line.startswith(indent):
            break
        lines.append(line[len(indent) :])
    return "\n".join(lines)


def _expanded(exc: ParsedException, via: str, depth: int) -> list[Link]:
    """``exc`` as links: a worker's traceback inside its message first (``via="worker"``), else
    the exceptions a wrapper names in its type or message (``via="wrapped"``), then itself."""
    inner = _embedded(exc, depth)
    if inner:
        exc.type = _WRAPPER_SUFFIX.sub("", exc.type)
        return [*inner, _link(exc, via)]
    expanded = expand_wrappers([exc])
    return [*(_link(e, "wrapped") for e in expanded[:-1]), _link(expanded[-1], via)]


#: ``RayTaskError(ValueError)``: the wrapped type, once the wrapped exception is a link of its own
_WRAPPER_SUFFIX = re.compile(r"\([\w.]+\)$")
_FIRST_FRAME = re.compile(r'^\s+File "', re.M)


def _embedded(exc: ParsedException, depth: int) -> list[Link]:
    """A worker's traceback inside ``exc``'s message (``Original Traceback (most recent call
    last):`` of a data-loader worker, a ``RayTaskError``'s frames), as links; the wrapper keeps
    only its own words."""
    if depth >= 3 or ("Traceback" not in exc.message and 'File "' not in exc.message):
        return []
    m = _EMBEDDED.search(exc.message)
    body = exc.message[m.start() :].replace("Original Traceback", "Traceback", 1) if m else exc.message
    inner = read_chain(body, depth + 1)
    if not inner:
        return []
    inner[-1].via = "worker"
    cut = m.start() if m else (f.start() if (f := _FIRST_FRAME.search(exc.message)) else len(exc.message))
    exc.message = exc.message[:cut].rstrip()
    return inner


def _links_from(found: list[ParsedException], depth: int = 0) -> list[Link]:
    """Exceptions named line by line (unexpanded), in order, as links: the last one raised. A
    wrapper that names its inner type and is followed by that type's own line (Ray prints
    ``RayTaskError(ValueError): ray::f()``, the task's frames, then ``ValueError: ...``) comes
    after it: the line that follows is the worker's exception."""
    found = list(found)
    workers: set[int] = set()  # ids of the exceptions that are a worker's
    i = 0
    while i < len(found) - 1:
        m = _WRAPPER_SUFFIX.search(found[i].type)
        nxt = found[i + 1]
        if m and nxt.short_type == m[0][1:-1].rsplit(".", 1)[-1]:
            wrapper = found[i]
            wrapper.type = _WRAPPER_SUFFIX.sub("", wrapper.type)
            found[i], found[i + 1] = nxt, wrapper
            workers.add(id(nxt))
            i += 2
            continue
        i += 1
    links: list[Link] = []
    for n, exc in enumerate(found):
        via = "raised" if n == len(found) - 1 else "worker" if id(exc) in workers else "context"
        links += _expanded(exc, via, depth)
    return links


def _link(exc: ParsedException, via: str) -> Link:
    if isinstance(exc, Link):
        exc.via = via
        return exc
    return Link(
        exc.type,
        exc.message,
        exc.frames,
        cut_off=exc.cut_off,
        library=library_of(exc.type, exc.frames, exc.message),
        codes=read_codes(exc.message, exc.type),
        via=via,
    )


# ── libraries ────────────────────────────────────────────────────────────────
_SITE = re.compile(r"[/\\](?:site|dist)-packages[/\\](?P<pkg>[A-Za-z_][\w]*)")
_STDLIB = re.compile(r"[/\\]lib(?:64)?[/\\]python\d[\d.]*[/\\](?P<mod>[A-Za-z_]\w*)|^<frozen (?P<frozen>[\w.]+)>")
#: a module name whose top level is not the package's import name
_ALIASES = {
    "_pytest": "pytest",
    "sklearn": "sklearn",
    "google": "google",
    "tensorflow_core": "tensorflow",
    "keras_core": "keras",
    "safetensors_rust": "safetensors",
    "torch_xla": "torch_xla",
    "botocore": "botocore",
    "_pickle": "pickle",
    "_socket": "socket",
    "_ssl": "ssl",
    "_io": "io",
    "pydantic_core": "pydantic",
}
_NOT_A_LIBRARY = {"builtins", "__main__", "exceptions"}
#: namespace packages: the library is their second level (``google.api_core``, ``azure.storage``)
_NAMESPACES = {"google", "azure", "jaxlib", "nvidia"}


def package_of_path(path: str) -> str | None:
    """The top-level package a frame's file belongs to (``…/site-packages/torch/nn/x.py`` →
    ``torch``; the standard library's ``…/lib/python3.11/socket.py`` → ``socket``; a compiled
    library's Cython source ``pandas/_libs/index.pyx`` → ``pandas``); None for the workload's
    own files."""
    m = _SITE.search(path)
    if m:
        pkg = m["pkg"]
        if pkg in _NAMESPACES:
            second = re.match(r"[/\\](\w+)", path[m.end() :])
            return f"{pkg}.{second[1]}" if second else pkg
        return _ALIASES.get(pkg, pkg)
    m = _STDLIB.search(path)
    if m:
        mod = (m["mod"] or m["frozen"] or "").split(".")[0]
        return _ALIASES.get(mod, mod) if mod and mod != "site" else None
    m = CYTHON_SOURCE.match(path)
    if m:  # a compiled library's frame (``pandas/_libs/index.pyx``): the package is its first folder
        return _ALIASES.get(m["pkg"], m["pkg"])
    return None


def library_of(type_name: str, frames: Sequence[Frame], message: str = "") -> str | None:
    """The library an exception comes from: its class's module (``sqlalchemy.exc.X`` →
    ``sqlalchemy``, ``c10.Error`` → ``torch``), else the package of the innermost frame, where
    it was raised; None when that frame is the workload's own code (or nothing says)."""
    if "." in type_name:
        native = native_library(type_name.replace(".", "::"))
        if native:
            return native
        parts = type_name.split(".")
        top = parts[0]
        if top in _NAMESPACES and len(parts) > 2:
            return f"{top}.{parts[1]}"
        if top not in _NOT_A_LIBRARY:
            return _ALIASES.get(top, top)
    if type_name == "NativeCheckFailure":
        return native_library(message)
    return package_of_path(frames[-1].file) if frames else None
