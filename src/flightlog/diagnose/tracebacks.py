"""Python tracebacks as data: the chain of exceptions (root cause first) of the last
traceback in a block of text, with their frames.

A chain is the run of tracebacks joined by "The above exception was the direct cause of the
following exception" or "During handling of the above exception, another exception occurred";
a traceback printed earlier and not joined to the last one (a handled error logged with
``logging.exception``) is not part of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Frame", "ParsedException", "parse_chain", "find_last_traceback", "is_library_file"]

_HEADER = "Traceback (most recent call last):"
_CHAINED = re.compile(
    r"The above exception was the direct cause of the following exception:|"
    r"During handling of the above exception, another exception occurred:"
)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<function>.+))?$')
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::\s?(?P<message>.*))?$")
_MARKERS = re.compile(r"^\s*[~^]+\s*$")
_LIBRARY = re.compile(r"[/\\](?:site-packages|dist-packages|lib[/\\]python\d[\d.]*|lib64[/\\]python\d)[/\\]|^<frozen |^<string>$")


@dataclass
class Frame:
    file: str
    line: int
    function: str
    code: str = ""

    @property
    def in_library(self) -> bool:
        return is_library_file(self.file)

    def where(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


@dataclass
class ParsedException:
    type: str
    message: str
    frames: list[Frame] = field(default_factory=list)

    @property
    def short_type(self) -> str:
        return self.type.rsplit(".", 1)[-1]

    def headline(self) -> str:
        first = self.message.splitlines()[0] if self.message else ""
        return f"{self.type}: {first}" if first else self.type

    def innermost_own_frame(self) -> Frame | None:
        """The innermost frame in the workload's own code (not the standard library or a package)."""
        for frame in reversed(self.frames):
            if not frame.in_library:
                return frame
        return None


def is_library_file(path: str) -> bool:
    return _LIBRARY.search(path) is not None


def find_last_traceback(texts: list[str]) -> str | None:
    """The last text that holds a Python traceback (a log event is one whole traceback)."""
    for text in reversed(texts):
        if _HEADER in text:
            return text
    return None


def parse_chain(text: str | None) -> list[ParsedException]:
    """The exceptions of the last traceback chain in ``text``, root cause first, the one that
    ended the program last. Empty when ``text`` holds no Python traceback."""
    if not text or _HEADER not in text:
        return []
    starts = [m.start() for m in re.finditer(re.escape(_HEADER), text)]
    blocks = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    chain: list[ParsedException] = []
    for index, block in enumerate(blocks):
        parsed, trailer = _parse_block(block)
        if parsed is None:
            continue
        chain.append(parsed)
        if index < len(blocks) - 1 and not _CHAINED.search(trailer):
            chain = []  # the next traceback is an independent one: only the last chain counts
    return chain


def _parse_block(block: str) -> tuple[ParsedException | None, str]:
    """One traceback block → (exception, the text after its exception line)."""
    lines = block.splitlines()
    frames: list[Frame] = []
    i = 1
    while i < len(lines):
        line = lines[i]
        m = _FRAME.match(line)
        if m:
            code = ""
            if i + 1 < len(lines) and lines[i + 1].startswith("    ") and not _FRAME.match(lines[i + 1]):
                code = lines[i + 1].strip()
            frames.append(Frame(m["file"], int(m["line"]), (m["function"] or "").strip(), code))
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
                return ParsedException(em["type"], "\n".join(message).strip(), frames), "\n".join(lines[j:])
        i += 1
    return None, ""
