"""User-supplied redaction patterns: from ``--redact REGEX`` and ``redact.txt`` files.

A bad pattern is refused when the run starts, with the file, line and reason, rather than
silently ignored: a pattern that never matches leaks exactly what the user meant to hide.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from flightlog.errors import InvalidInput

__all__ = ["compile_pattern", "compile_patterns", "load_patterns", "CustomPattern"]


class CustomPattern:
    """A compiled user pattern. With capture groups, only group 1 is replaced
    (``db_password=(\\S+)`` keeps the name); without, the whole match is."""

    __slots__ = ("source", "regex", "group")

    def __init__(self, source: str, regex: re.Pattern[str]) -> None:
        self.source = source
        self.regex = regex
        self.group = 1 if regex.groups else 0

    def apply(self, text: str, replacement: str) -> tuple[str, int]:
        if self.group == 0:
            return self.regex.subn(replacement, text)
        count = 0

        def replace(m: re.Match[str]) -> str:
            nonlocal count
            if m.group(1) is None or m.start(1) == m.end(1):
                return m.group(0)
            count += 1
            whole = m.group(0)
            offset = m.start()
            return whole[: m.start(1) - offset] + replacement + whole[m.end(1) - offset :]

        return self.regex.sub(replace, text), count


def compile_pattern(source: str, where: str = "--redact") -> CustomPattern:
    """Compile one pattern or raise InvalidInput saying which pattern and why."""
    try:
        regex = re.compile(source)
    except re.error as exc:
        raise InvalidInput(
            f"{where}: invalid redaction pattern {source!r}: {exc}",
            details={"pattern": source, "where": where},
        ) from None
    if regex.fullmatch("") is not None:
        raise InvalidInput(
            f"{where}: redaction pattern {source!r} matches the empty string, "
            "so it would insert markers everywhere; make it match at least one character",
            details={"pattern": source, "where": where},
        )
    return CustomPattern(source, regex)


def compile_patterns(sources: Sequence[str]) -> list[CustomPattern]:
    return [compile_pattern(source) for source in sources]


def load_patterns(paths: Iterable[Path]) -> list[str]:
    """Read one regex per line from each existing file; ``#`` starts a comment line.

    Missing files are skipped (``flightlog.redact.txt`` is optional). Surrounding whitespace is
    ignored. A line that does not compile raises InvalidInput naming the file and line.
    """
    patterns: list[str] = []
    for path in paths:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            continue
        except IsADirectoryError:
            raise InvalidInput(f"{path}: expected a file of redaction patterns, found a directory") from None
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            compile_pattern(line, where=f"{path}:{lineno}")
            patterns.append(line)
    return patterns
