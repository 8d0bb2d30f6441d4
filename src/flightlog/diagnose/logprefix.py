"""The message of a log line without its logging prefix (issue 29: a whole run's lines).

Why: a failure that printed no exception is read from its last line, and the shape of that line
(its numbers, its length, what it quotes: :func:`~.facts.message_facts`) is what the ranker
weighs. A run prints that line through ``logging`` (``2025-01-05 12:00:03,118 - train - ERROR -
…``, ``ERROR:train:…``), loguru or glog, and the prefix's timestamp and name are no part of what
the program said: read with them, the same message looked like another (numbers it does not
carry, a length it does not have) and a message the corpus reads at 0.57 read 0.47 in a run.
"""

from __future__ import annotations

import re

__all__ = ["logged_message"]

_LEVEL = r"(?:CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)"
#: a prefix that ends where the message starts: ``<timestamp> … LEVEL`` with its separators
#: (logging's ``%(asctime)s - %(name)s - %(levelname)s - ``, ``[<time>] name: [LEVEL] ``,
#: loguru's ``<time> | LEVEL    | module:function:line - ``), logging's default
#: ``LEVEL:name:`` and glog's ``E0105 12:00:03.118000 4242 file.cc:88] ``
_PREFIX = re.compile(
    r"^(?:\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?[^\n]{0,80}?"
    rf"[\[(|]?\s*\b{_LEVEL}\b\s*[\])]?(?:\s*\|\s*[\w.<>]+:[\w.<>]+:\d+)?(?:\s*[-:|]\s+|\s+)"
    rf"|{_LEVEL}:[\w.<>-]+:"
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ [^\]\s]+:\d+\]\s*)"
)


def logged_message(line: str) -> str:
    """``line`` without a logging prefix (the line itself when it has none, or nothing follows)."""
    m = _PREFIX.match(line)
    return line[m.end() :] if m is not None and line[m.end() :].strip() else line
